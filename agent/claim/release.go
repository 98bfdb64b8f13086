package claim

import (
	"context"
	"fmt"
	"slices"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/hostspec"
	"github.com/hostfleet/hostfleet/agent/hoststatus"
	"github.com/hostfleet/hostfleet/agent/servedtenants"
	"github.com/hostfleet/hostfleet/hub/api/baseline"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/claimstatus"
	"github.com/hostfleet/hostfleet/internal/fence"
	"github.com/hostfleet/hostfleet/internal/hostwrites"
	"github.com/hostfleet/hostfleet/internal/requeue"
)

// release frees every host the claim holds, then deletes the secret and
// HardwareData copies. Only then does the finalizer go.
func (r *Reconciler) release(ctx context.Context, c *metal3api.HostClaim) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.AgentFinalizer) {
		return ctrl.Result{}, nil
	}
	if res, done, err := r.releaseHeld(ctx, c); !done || err != nil {
		return res, err
	}
	orig := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, hostfleetv1alpha1.AgentFinalizer)
	// A claim already gone (another reconcile lifted the finalizer first)
	// is what was wanted: no error.
	if err := r.Claims.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return requeue.OnConflict(fmt.Errorf("remove finalizer from %s: %w", klog.KObj(c), err))
	}
	return ctrl.Result{}, nil
}

// yield leaves a local claim to the HostClaim controller that serves it
// (baremetal-operator's): it says so in an Event, releases the hosts this
// agent holds for it as on delete, takes back a binding it confirmed in the
// status, then drops its reservation and finalizer. It never touches the
// other controller's host or binding.
func (r *Reconciler) yield(ctx context.Context, c *metal3api.HostClaim, d binder.Decision) (ctrl.Result, error) {
	r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, d.Reason, "Yield",
		"%s; the Hostfleet agent leaves the claim to it. Run one HostClaim controller per cluster: baremetal-operator without --hostclaims, or the agent without --local-claims", d.Message)
	_, reserved := c.Annotations[hostfleetv1alpha1.AnnotationReservedHost]
	if !controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.AgentFinalizer) && !reserved {
		return ctrl.Result{}, r.dropDangling(ctx, c)
	}
	if res, done, err := r.releaseHeld(ctx, c); !done || err != nil {
		return res, err
	}
	// A binding this agent confirmed in the status goes with its host: the
	// other controller writes its own.
	if ref := c.Status.BareMetalHost; ref != nil && slices.ContainsFunc(d.Strays, func(h *metal3api.BareMetalHost) bool {
		return h.Namespace == ref.Namespace && h.Name == ref.Name
	}) {
		if err := r.setStatus(ctx, c, nil, nil, associatedCondition(c, metav1.ConditionFalse, d.Reason, d.Message), nil); err != nil {
			return requeue.OnConflict(err)
		}
	}
	orig := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, hostfleetv1alpha1.AgentFinalizer)
	delete(c.Annotations, hostfleetv1alpha1.AnnotationReservedHost)
	if err := r.Fence.PatchLocked(ctx, r.Claims, r.hosts.Name, fence.Claims, c, orig); client.IgnoreNotFound(err) != nil {
		return requeue.OnConflict(fmt.Errorf("leave %s to its other controller: %w", klog.KObj(c), err))
	}
	ctrl.LoggerFrom(ctx).Info("left the claim to another HostClaim controller", "why", d.Message)
	// The other controller may have named the released host in the status
	// meanwhile (its association crossed the release): no event of its
	// write may come again.
	return ctrl.Result{}, r.dropDangling(ctx, c)
}

// dropDangling clears a claim's status.bareMetalHost that names a host
// whose consumerRef, read from the API server, does not name the claim: an
// association the other controller recorded while this agent released the
// host it had adopted (a release and an adoption from a stale cache can
// cross). Cleared, the other controller associates the claim again; left,
// two claims' status would name one host.
func (r *Reconciler) dropDangling(ctx context.Context, c *metal3api.HostClaim) error {
	ref := c.Status.BareMetalHost
	if ref == nil {
		return nil
	}
	h := &metal3api.BareMetalHost{}
	err := r.ManagedReader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, h)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("read host %s named by %s/%s: %w", klog.KRef(ref.Namespace, ref.Name), c.Namespace, c.Name, err)
	}
	if ref := h.Spec.ConsumerRef; err == nil && ref != nil && ref.Kind == hostfleetv1alpha1.ConsumerKind && ref.Namespace == c.Namespace && ref.Name == c.Name {
		return nil // bound to the claim: by the other controller
	}
	_, err = claimstatus.Write(ctx, r.Claims, claimstatus.Agent, r.kind(c), c, func(st *metal3api.HostClaimStatus) { st.BareMetalHost = nil })
	if client.IgnoreNotFound(err) != nil {
		if apierrors.IsConflict(err) {
			return nil // the claim moved on: looked at again on its event
		}
		return fmt.Errorf("clear the dangling host of %s: %w", klog.KObj(c), err)
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, hostfleetv1alpha1.ReasonServedByOtherController, "Yield",
		"status.bareMetalHost named %s/%s, which is not bound to the claim (released while its other controller adopted it): cleared, for that controller to associate the claim again",
		ref.Namespace, ref.Name)
	return nil
}

// releaseHeld frees every host the claim holds and deletes the secret and
// HardwareData copies; done once all of it is gone (else the result says
// when to look again).
func (r *Reconciler) releaseHeld(ctx context.Context, c *metal3api.HostClaim) (ctrl.Result, bool, error) {
	held, err := r.held(ctx, c)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	for _, h := range held {
		done, err := r.releaseHost(ctx, r.hosts, c, h)
		if err != nil {
			res, err := requeue.OnConflict(err)
			return res, false, err
		}
		if done {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, hostfleetv1alpha1.ReasonReleasing, "Release",
				"released BareMetalHost %s on cluster %s", klog.KObj(h), r.ClusterName)
		}
		if err := r.deleteCopies(ctx, c, h.Namespace, nil); err != nil {
			return ctrl.Result{}, false, err
		}
		if !done {
			// The host's status changes wake this claim up again.
			if err := r.setStatus(ctx, c, h, c.Status.HardwareData, associatedCondition(c, metav1.ConditionTrue, hostfleetv1alpha1.ReasonReleasing,
				fmt.Sprintf("releasing BareMetalHost %s: %s", klog.KObj(h), hostspec.Releasing(h))),
				hoststatus.Conditions(c, h, hoststatus.Sync{OK: true})); err != nil {
				res, err := requeue.OnConflict(err)
				return res, false, err
			}
			return ctrl.Result{RequeueAfter: r.RetryAfter}, false, nil
		}
	}
	if err := r.deleteHardwareCopy(ctx, c); err != nil {
		return ctrl.Result{}, false, err
	}
	return ctrl.Result{}, true, nil
}

// held are the hosts the claim holds: those the cache shows, and its
// reserved host read from the API server when the cache does not show it
// held (binder.Unconfirmed).
func (r *Reconciler) held(ctx context.Context, c *metal3api.HostClaim) ([]*metal3api.BareMetalHost, error) {
	var hosts metal3api.BareMetalHostList
	if err := r.Managed.List(ctx, &hosts, client.MatchingFields{consumerIndex: consumerKey(c.Namespace, c.Name)}); err != nil {
		return nil, fmt.Errorf("list hosts of %s: %w", klog.KObj(c), err)
	}
	var held []*metal3api.BareMetalHost
	for i := range hosts.Items {
		if r.Consumer.Holds(&hosts.Items[i], c) {
			held = append(held, &hosts.Items[i])
		}
	}
	ref := binder.Unconfirmed(c, held)
	if ref == nil {
		return held, nil
	}
	h := &metal3api.BareMetalHost{}
	err := r.ManagedReader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, h)
	switch {
	case err == nil && r.Consumer.Holds(h, c):
		held = append(held, h)
	case client.IgnoreNotFound(err) != nil:
		return nil, fmt.Errorf("read host %s reserved by %s: %w", klog.KRef(ref.Namespace, ref.Name), klog.KObj(c), err)
	}
	return held, nil
}

// releaseHost powers a host held by the claim off and removes the image
// (baremetal-operator deprovisions): the claim controller's spec, applied
// as it. Once the host has settled, w (the claim controller, or the
// orphaned-host controller) clears the consumerRef and reports done, in the
// write that ends the host's usage interval.
func (r *Reconciler) releaseHost(ctx context.Context, w hostwrites.Writer, c *metal3api.HostClaim, h *metal3api.BareMetalHost) (bool, error) {
	if err := r.hosts.Apply(ctx, hostspec.Released(h)); err != nil {
		return false, fmt.Errorf("deprovision host %s of %s/%s: %w", klog.KObj(h), c.Namespace, c.Name, err)
	}
	if !hostspec.Settled(h) {
		return false, nil
	}
	orig := h.DeepCopy()
	r.unbind(ctx, h)
	if err := w.Patch(ctx, h, orig); err != nil {
		return false, fmt.Errorf("release host %s of %s/%s: %w", klog.KObj(h), c.Namespace, c.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("released", "host", klog.KObj(h), "claim", klog.KObj(c))
	return true, nil
}

// unbind changes h (not written) to be no claim's: no consumerRef, no
// binding annotations, its usage interval closed.
func (r *Reconciler) unbind(ctx context.Context, h *metal3api.BareMetalHost) {
	r.closeUsage(ctx, h)
	r.toJudge(ctx, h)
	h.Spec.ConsumerRef = nil
	delete(h.Annotations, hostfleetv1alpha1.AnnotationHub)
	delete(h.Annotations, hostfleetv1alpha1.AnnotationClaimUID)
	delete(h.Annotations, hostfleetv1alpha1.AnnotationOrphanedSince)
}

// toJudge marks a host baremetal-operator serves, released while the fleet
// has FirmwareBaselines, to be judged against them before it is free
// (agent/firmwaregate): in the write that releases it, so that no claim
// binds it before. The BMC driver judges the hosts it drives itself.
func (r *Reconciler) toJudge(ctx context.Context, h *metal3api.BareMetalHost) {
	if r.Erase.Driven != nil && r.Erase.Driven(h) {
		return
	}
	if _, ok := h.Annotations[hostfleetv1alpha1.AnnotationRestore]; ok {
		return
	}
	// The hub's ClusterTenancy, never the managed cluster's: local claims'
	// reconcilers read it through Hub.
	hub := r.Claims
	if r.local() {
		hub = r.Hub
	}
	if hub == nil {
		return
	}
	ct, err := servedtenants.Get(ctx, hub, r.ClusterName)
	if err != nil || len(ct.Baselines()) == 0 {
		return
	}
	if h.Annotations == nil {
		h.Annotations = map[string]string{}
	}
	h.Annotations[hostfleetv1alpha1.AnnotationRestore] = baseline.Progress{Phase: baseline.PhaseJudge}.String()
}
