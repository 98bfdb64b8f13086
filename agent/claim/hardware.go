package claim

import (
	"context"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/reflector"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// syncHardware keeps the hub copy of the host's HardwareData current and
// returns its reference, or nil while the host has none.
func (r *Reconciler) syncHardware(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost) (*metal3api.ObjectReference, error) {
	hw := &metal3api.HardwareData{}
	if err := r.Managed.Get(ctx, client.ObjectKeyFromObject(h), hw); err != nil {
		if apierrors.IsNotFound(err) {
			return c.Status.HardwareData, nil // keep the last copy while the host is re-inspected
		}
		return nil, fmt.Errorf("get HardwareData %s/%s: %w", h.Namespace, h.Name, err)
	}
	if hw.Spec.HardwareDetails == nil {
		return c.Status.HardwareData, nil
	}
	if r.local() {
		// Same cluster: the claim references the host's own HardwareData.
		return &metal3api.ObjectReference{Namespace: hw.Namespace, Name: hw.Name}, nil
	}
	ref := &metal3api.ObjectReference{Namespace: c.Namespace, Name: c.Name}
	existing := &metal3api.HardwareData{}
	err := r.ClaimReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Name}, existing)
	switch {
	case err == nil && reflector.CopyIsCurrent(existing, hw, r.ClusterName):
		return ref, nil
	case err == nil:
		// Inspected again, or not this agent's copy of this host: copies are
		// immutable, so replace it. A copy another cluster's agent made is
		// not this agent's to delete (admission): the hub removes it.
		if err := r.Claims.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("replace HardwareData copy %s/%s (made by %q): %w", c.Namespace, c.Name,
				existing.Labels[hostfleetv1alpha1.LabelCluster], err)
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get HardwareData copy %s/%s: %w", c.Namespace, c.Name, err)
	}
	if err := r.Claims.Create(ctx, reflector.HardwareCopy(c, hw, r.ClusterName)); err != nil {
		return nil, fmt.Errorf("copy HardwareData to %s/%s: %w", c.Namespace, c.Name, err)
	}
	return ref, nil
}

// deleteHardwareCopy deletes the claim's HardwareData copy, if it made one.
func (r *Reconciler) deleteHardwareCopy(ctx context.Context, c *metal3api.HostClaim) error {
	if r.local() {
		return nil
	}
	existing := &metal3api.HardwareData{}
	if err := r.ClaimReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Name}, existing); err != nil {
		return client.IgnoreNotFound(err)
	}
	if existing.Labels[hostfleetv1alpha1.LabelClaimUID] != string(c.UID) || existing.Labels[hostfleetv1alpha1.LabelCluster] != r.ClusterName {
		return nil // not this agent's copy: the claim's ownership removes it
	}
	if err := r.Claims.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete HardwareData copy %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}
