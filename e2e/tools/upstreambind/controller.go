package main

import (
	"context"
	"errors"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/metal3-io/baremetal-operator/pkg/hostclaim"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// hostClaimController plays baremetal-operator v0.14.0-rc.0's HostClaim
// controller (--hostclaims), which reconciles every HostClaim it sees, with
// cluster-api's patch helper writing the claim once at the end:
//   - it adds its finalizer metal3.io/hostclaim to every claim;
//   - a claim whose status.bareMetalHost is set is associated: on every
//     reconcile it sets Associated True (BareMetalHostAssociated, no
//     message); its Update is a stub (nothing is written on the host);
//   - any other claim is associated by pkg/hostclaim's Associate: a random
//     admitted free host (or the host whose upstream consumerRef already
//     names the claim), taken by an Update of the host with its
//     resourceVersion, then the claim's status;
//   - on deletion it sets Associated False (HostClaimDeleting), clears the
//     consumerRef of the host its status names if that names the claim by
//     name, namespace, kind and group (not by UID, nor by who bound it),
//     does not deprovision, and removes its finalizer;
//   - the patch sets Ready to cluster-api's summary of Associated,
//     Synchronized and Provisioned, and owns Ready, Associated,
//     Synchronized, Provisioned and AvailableForProvisioning.
//
// It watches claims and hosts (a host whose upstream consumerRef names a
// claim wakes that claim).
type hostClaimController struct {
	client.Client
	APIReader client.Reader
}

func (r *hostClaimController) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, rerr error) {
	c := &metal3api.HostClaim{}
	if err := r.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	helper, err := patch.NewHelper(c, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		if err := patchClaim(ctx, helper, c); err != nil && rerr == nil {
			rerr = client.IgnoreNotFound(err)
		}
	}()
	m, err := hostclaim.NewHostManager(r.Client, log.FromContext(ctx), c, r.APIReader)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !c.DeletionTimestamp.IsZero() {
		m.SetConditionHostToFalse(metal3api.AssociatedCondition, metal3api.HostClaimDeletingReason, "")
		if err := r.letGo(ctx, c); err != nil {
			m.SetConditionHostToFalse(metal3api.AssociatedCondition, metal3api.HostClaimDeletionFailedReason, err.Error())
			return ctrl.Result{}, err
		}
		controllerutil.RemoveFinalizer(c, metal3api.HostClaimFinalizer)
		return ctrl.Result{}, nil
	}
	controllerutil.AddFinalizer(c, metal3api.HostClaimFinalizer)
	if c.Status.BareMetalHost != nil {
		m.SetConditionHostToTrue(metal3api.AssociatedCondition, metal3api.BareMetalHostAssociatedReason)
		return ctrl.Result{}, nil
	}
	var requeue hostclaim.RequeueAfterError
	if err := m.Associate(ctx); errors.As(err, &requeue) {
		return ctrl.Result{RequeueAfter: requeue.GetRequeueAfter()}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// patchClaim writes what the reconcile changed, as the controller does:
// Ready summarised, its conditions owned.
func patchClaim(ctx context.Context, helper *patch.Helper, c *metal3api.HostClaim) error {
	if err := conditions.SetSummaryCondition(c, c, clusterv1.ReadyCondition, conditions.ForConditionTypes{
		metal3api.AssociatedCondition, metal3api.SynchronizedCondition, metal3api.ProvisionedCondition}); err != nil {
		return err
	}
	return helper.Patch(ctx, c, patch.WithOwnedConditions{Conditions: []string{
		clusterv1.ReadyCondition, metal3api.AssociatedCondition, metal3api.SynchronizedCondition,
		metal3api.ProvisionedCondition, metal3api.AvailableForProvisioningCondition,
	}}, patch.WithStatusObservedGeneration{})
}

// letGo clears the consumerRef of the host the claim's status names, if it
// names the claim (upstream's consumerRefMatches: name, namespace, kind,
// group). The host is not deprovisioned.
func (r *hostClaimController) letGo(ctx context.Context, c *metal3api.HostClaim) error {
	ref := c.Status.BareMetalHost
	if ref == nil {
		return nil
	}
	h := &metal3api.BareMetalHost{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, h); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !namesClaim(h.Spec.ConsumerRef, c) {
		return nil
	}
	h.Spec.ConsumerRef = nil
	if err := r.Update(ctx, h); err != nil {
		return fmt.Errorf("clear the consumerRef of %s/%s: %w", h.Namespace, h.Name, err)
	}
	return nil
}

// namesClaim is upstream's consumerRefMatches.
func namesClaim(ref *corev1.ObjectReference, c *metal3api.HostClaim) bool {
	return ref != nil && ref.Name == c.Name && ref.Namespace == c.Namespace && ref.Kind == hostclaim.HostClaimKind &&
		ref.GroupVersionKind().Group == metal3api.GroupVersion.Group
}

// claimOfHost maps a host whose upstream consumerRef names a HostClaim to
// that claim, as the controller's BareMetalHostToHostClaims.
func claimOfHost(_ context.Context, h *metal3api.BareMetalHost) []ctrl.Request {
	ref := h.Spec.ConsumerRef
	if ref == nil || ref.Kind != hostclaim.HostClaimKind || ref.APIVersion != metal3api.GroupVersion.Identifier() {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}}
}
