package main

import (
	"context"
	"errors"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/metal3-io/baremetal-operator/pkg/hostclaim"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// hostClaimController plays baremetal-operator v0.14's HostClaim controller
// (--hostclaims), which serves every HostClaim it sees: reconcileNormal adds
// its finalizer metal3.io/hostclaim, and a claim not yet associated (no
// status.bareMetalHost) is associated by pkg/hostclaim's Associate (a random
// admitted free host, or the host whose consumerRef already names the
// claim, taken by an Update of the host with its resourceVersion); then the
// claim is patched like cluster-api's patch helper does, metadata then
// status, without a resourceVersion. A deleted claim's host is let go and
// the finalizer removed. Nothing is provisioned: v0.14's Update is a stub.
type hostClaimController struct {
	client.Client
	APIReader client.Reader
}

func (r *hostClaimController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &metal3api.HostClaim{}
	if err := r.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	orig := c.DeepCopy()
	if !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.delete(ctx, c, orig)
	}
	controllerutil.AddFinalizer(c, metal3api.HostClaimFinalizer)
	var requeue hostclaim.RequeueAfterError
	res := ctrl.Result{}
	if c.Status.BareMetalHost == nil {
		m, err := hostclaim.NewHostManager(r.Client, log.FromContext(ctx), c, r.APIReader)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := m.Associate(ctx); errors.As(err, &requeue) {
			res.RequeueAfter = requeue.GetRequeueAfter()
		} else if err != nil {
			return ctrl.Result{}, err
		}
	}
	return res, r.patch(ctx, c, orig)
}

// patch writes what changed, as cluster-api's patch helper: a merge patch of
// the metadata, then one of the status.
func (r *hostClaimController) patch(ctx context.Context, c, orig *metal3api.HostClaim) error {
	if !equality.Semantic.DeepEqual(c.Finalizers, orig.Finalizers) {
		status := c.Status
		if err := r.Patch(ctx, c, client.MergeFrom(orig)); err != nil {
			return client.IgnoreNotFound(err)
		}
		c.Status = status
	}
	if !equality.Semantic.DeepEqual(c.Status, orig.Status) {
		return client.IgnoreNotFound(r.Status().Patch(ctx, c, client.MergeFrom(orig)))
	}
	return nil
}

// delete clears the consumerRef of the host the claim's status names, if it
// names the claim, and removes the finalizer.
func (r *hostClaimController) delete(ctx context.Context, c, orig *metal3api.HostClaim) error {
	if !controllerutil.ContainsFinalizer(c, metal3api.HostClaimFinalizer) {
		return nil
	}
	if ref := c.Status.BareMetalHost; ref != nil {
		h := &metal3api.BareMetalHost{}
		err := r.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, h)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil && h.Spec.ConsumerRef != nil && h.Spec.ConsumerRef.Name == c.Name && h.Spec.ConsumerRef.Namespace == c.Namespace {
			h.Spec.ConsumerRef = nil
			if err := r.Update(ctx, h); err != nil {
				return err
			}
		}
	}
	controllerutil.RemoveFinalizer(c, metal3api.HostClaimFinalizer)
	return client.IgnoreNotFound(r.Patch(ctx, c, client.MergeFrom(orig)))
}
