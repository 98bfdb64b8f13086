package claim

import (
	"context"
	"fmt"
	"maps"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/labelsync"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// tenantPrefixes are the label sync prefixes of the Tenant that owns the
// claim's namespace (none when the namespace has no tenant).
func (r *Reconciler) tenantPrefixes(ctx context.Context, nsLabels map[string]string) ([]string, error) {
	name := nsLabels[hostfleetv1alpha1.LabelTenant]
	if name == "" || r.local() {
		return nil, nil
	}
	t := &hostfleetv1alpha1.Tenant{}
	if err := r.ClaimReader.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get tenant %s: %w", name, err)
	}
	valid, _ := labelsync.Prefixes(t.Spec.LabelSyncPrefixes)
	return valid, nil
}

// syncLabels mirrors the host's prefixed labels onto the claim and sets the
// bound-host hint from the truth (h nil: erased).
func (r *Reconciler) syncLabels(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost, prefixes []string) error {
	var hostLabels map[string]string
	bound := ""
	if h != nil {
		hostLabels, bound = h.Labels, labelsync.BoundHostValue(h.Name)
	}
	want := labelsync.Desired(c.Labels, hostLabels, prefixes, bound)
	if maps.Equal(want, c.Labels) {
		return nil
	}
	orig := c.DeepCopy()
	c.Labels = want
	if err := r.Claims.Patch(ctx, c, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("sync labels of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}
