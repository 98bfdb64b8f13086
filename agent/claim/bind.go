package claim

import (
	"context"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/hub/api/usage"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// bind writes the claim's consumerRef on the host, the start of its
// usage interval (internal/usage) and the erase its release requires. The patch carries the
// resourceVersion the decision was made on, so it fails with a conflict if
// anyone changed the host since: two claims can never both win one host.
func (r *Reconciler) bind(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost, mode hostfleetv1alpha1.EraseMode) error {
	orig := h.DeepCopy()
	h.Spec.ConsumerRef = r.Consumer.Ref(c)
	if h.Annotations == nil {
		h.Annotations = map[string]string{}
	}
	for k, v := range r.Consumer.Annotations(c) {
		h.Annotations[k] = v
	}
	// A host bound afresh starts afresh: a start left by a release that
	// was not this agent's counts for nobody.
	delete(h.Annotations, hostfleetv1alpha1.AnnotationBoundAt)
	delete(h.Annotations, hostfleetv1alpha1.AnnotationBoundFor)
	delete(h.Annotations, hostfleetv1alpha1.AnnotationBoundClaim)
	ns, claim := r.usageOf(c)
	usage.Open(h, ns, claim, time.Now())
	r.markErase(h, mode)
	// A host taken wakes no waiting claim, and this one knows: its event
	// is an echo.
	if err := r.hosts.Patch(ctx, h, orig); err != nil {
		return fmt.Errorf("bind %s to host %s/%s: %w", klog.KObj(c), h.Namespace, h.Name, err)
	}
	return nil
}

// migrate rewrites the upstream consumerRef of a host an older agent bound
// to a local claim (binder.Consumer's Legacy) to the current one, which no
// other HostClaim controller takes for its own, with the host's
// resourceVersion.
func (r *Reconciler) migrate(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost) error {
	orig := h.DeepCopy()
	h.Spec.ConsumerRef = r.Consumer.Ref(c)
	if err := r.hosts.Patch(ctx, h, orig); err != nil {
		return fmt.Errorf("rewrite the consumerRef of host %s bound to %s: %w", klog.KObj(h), klog.KObj(c), err)
	}
	ctrl.LoggerFrom(ctx).Info("rewrote the host's upstream consumerRef", "host", klog.KObj(h), "apiVersion", h.Spec.ConsumerRef.APIVersion)
	return nil
}

// reservationStands reads the reserved host from the API server: if the claim
// holds it, or it is free and eligible, the cache is stale and the reservation
// must stand (true).
func (r *Reconciler) reservationStands(ctx context.Context, in binder.Input) (bool, error) {
	h := &metal3api.BareMetalHost{}
	err := r.ManagedReader.Get(ctx, client.ObjectKey{Namespace: in.Reserved.Namespace, Name: in.Reserved.Name}, h)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("read reserved host %s/%s: %w", in.Reserved.Namespace, in.Reserved.Name, err)
	}
	return r.Consumer.Holds(h, in.Claim) || binder.Eligible(in, h), nil
}

// heldByGone returns the reserved host when a claim this agent bound holds
// it and the claim cache no longer has that claim (by UID), or nil.
func (r *Reconciler) heldByGone(ctx context.Context, reserved *metal3api.ObjectReference) (*metal3api.BareMetalHost, error) {
	if reserved == nil {
		return nil, nil
	}
	h := &metal3api.BareMetalHost{}
	if err := r.Managed.Get(ctx, client.ObjectKey{Namespace: reserved.Namespace, Name: reserved.Name}, h); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !r.Consumer.Bound(h) {
		return nil, nil
	}
	ref, holder := h.Spec.ConsumerRef, &metal3api.HostClaim{}
	err := r.Claims.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, holder)
	switch {
	case apierrors.IsNotFound(err) || err == nil && string(holder.UID) != h.Annotations[hostfleetv1alpha1.AnnotationClaimUID]:
		return h, nil
	case err != nil:
		return nil, fmt.Errorf("read the claim holding host %s: %w", klog.KObj(h), err)
	}
	return nil, nil
}
