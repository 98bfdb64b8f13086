package claim

import (
	"context"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/hostfleet/hostfleet/agent/labelsync"
	"github.com/hostfleet/hostfleet/agent/servedtenants"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/fence"
)

// tenantPrefixes are the label sync prefixes of the tenant that owns the
// claim's namespace, as the cluster's ClusterTenancy lists it (none when
// the namespace has no tenant, or the cluster does not serve it).
func (r *Reconciler) tenantPrefixes(ctx context.Context, nsLabels map[string]string) ([]string, error) {
	name := nsLabels[hostfleetv1alpha1.LabelTenant]
	if name == "" || r.local() {
		return nil, nil
	}
	ct, err := servedtenants.Get(ctx, r.Claims, r.ClusterName)
	if err != nil {
		return nil, err
	}
	t := ct.Tenant(hostfleetv1alpha1.RoleInfrastructure, name)
	if t == nil {
		return nil, nil
	}
	valid, _ := labelsync.Prefixes(t.LabelSyncPrefixes)
	return valid, nil
}

// syncMeta writes the claim's metadata for host h (nil: none): the
// reservation (hostfleet.io/reserved-host), the host's identity
// (hostfleet.io/host-uid) and the agent's finalizer, the host's prefixed
// labels and the bound-host hint, in one patch and only if
// something changed, with the claim's resourceVersion: a reservation is never
// written from a stale view. Without
// a host the reservation and the labels go; the finalizer stays until the
// claim is deleted.
func (r *Reconciler) syncMeta(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost, prefixes []string) error {
	labels, reserved, uid, changed := claimMeta(c, h, prefixes)
	if !changed {
		return nil
	}
	orig := c.DeepCopy()
	c.Labels = labels
	if h != nil {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[hostfleetv1alpha1.AnnotationReservedHost] = reserved
		c.Annotations[hostfleetv1alpha1.AnnotationHostUID] = uid
		controllerutil.AddFinalizer(c, hostfleetv1alpha1.AgentFinalizer)
	} else {
		delete(c.Annotations, hostfleetv1alpha1.AnnotationReservedHost)
		delete(c.Annotations, hostfleetv1alpha1.AnnotationHostUID)
	}
	if err := r.Fence.PatchLocked(ctx, r.Claims, r.hosts.Name, fence.Claims, c, orig); err != nil {
		return fmt.Errorf("write metadata of %s: %w", klog.KObj(c), err)
	}
	return nil
}
