package claim

import (
	"context"
	"fmt"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/hoststatus"
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
		return nil, fmt.Errorf("get HardwareData %s: %w", klog.KObj(h), err)
	}
	if hw.Spec.HardwareDetails == nil {
		return c.Status.HardwareData, nil
	}
	if r.local() {
		// Same cluster: the claim references the host's own HardwareData;
		// a claim forwarded from the hub also gets a copy there.
		if err := r.copyToSource(ctx, c, hw); err != nil {
			return nil, err
		}
		return &metal3api.ObjectReference{Namespace: hw.Namespace, Name: hw.Name}, nil
	}
	return syncHubCopy(ctx, r.Claims, r.ClaimReader, c, hw, r.ClusterName)
}

// syncHubCopy makes the hub copy of hw for claim c (a hub claim) current,
// with the hub's client and uncached reader, and returns its reference.
func syncHubCopy(ctx context.Context, hub client.Client, reader client.Reader, c *metal3api.HostClaim, hw *metal3api.HardwareData, cluster string) (*metal3api.ObjectReference, error) {
	ref := &metal3api.ObjectReference{Namespace: c.Namespace, Name: c.Name}
	existing := &metal3api.HardwareData{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Name}, existing)
	switch {
	case err == nil && hoststatus.CopyIsCurrent(existing, hw, cluster):
		return ref, nil
	case err == nil:
		// Inspected again, or not this agent's copy of this host: copies are
		// immutable, so replace it. A copy another cluster's agent made is
		// not this agent's to delete (admission): the hub removes it.
		if err := hub.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("replace HardwareData copy %s (made by %q): %w", klog.KObj(c),
				existing.Labels[hostfleetv1alpha1.LabelCluster], err)
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get HardwareData copy %s: %w", klog.KObj(c), err)
	}
	if err := hub.Create(ctx, hoststatus.HardwareCopy(c, hw, cluster)); err != nil {
		return nil, fmt.Errorf("copy HardwareData to %s: %w", klog.KObj(c), err)
	}
	return ref, nil
}

// copyToSource copies hw to the hub claim a local claim was forwarded from
// (annotations hostfleet.io/source-claim and -uid), when the agent has a
// hub: only a remote claim of that UID placed on this agent's cluster gets
// one (and the hub's admission and HardwareData controller hold every agent
// to its own cluster's copies).
func (r *Reconciler) copyToSource(ctx context.Context, c *metal3api.HostClaim, hw *metal3api.HardwareData) error {
	src, uid := c.Annotations[hostfleetv1alpha1.AnnotationSourceClaim], c.Annotations[hostfleetv1alpha1.AnnotationSourceClaimUID]
	ns, name, ok := strings.Cut(src, "/")
	if r.Hub == nil || !ok || uid == "" {
		return nil
	}
	existing := &metal3api.HardwareData{}
	if err := r.HubReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, existing); err == nil &&
		existing.Labels[hostfleetv1alpha1.LabelClaimUID] == uid && hoststatus.CopyIsCurrent(existing, hw, r.ClusterName) {
		return nil // the steady state: one read
	}
	source := &metal3api.HostClaim{}
	if err := r.HubReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, source); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			ctrl.LoggerFrom(ctx).V(1).Info("no hub claim to copy HardwareData to", "source", src, "error", err.Error())
			return nil
		}
		return fmt.Errorf("get source claim %s on the hub: %w", src, err)
	}
	if string(source.UID) != uid || source.Labels[hostfleetv1alpha1.LabelKind] != hostfleetv1alpha1.KindRemote ||
		source.Labels[hostfleetv1alpha1.LabelCluster] != r.ClusterName || !source.DeletionTimestamp.IsZero() {
		ctrl.LoggerFrom(ctx).V(1).Info("the source claim is not a remote claim of this cluster: no HardwareData copy", "source", src)
		return nil
	}
	_, err := syncHubCopy(ctx, r.Hub, r.HubReader, source, hw, r.ClusterName)
	return err
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
		return fmt.Errorf("delete HardwareData copy %s: %w", klog.KObj(c), err)
	}
	return nil
}
