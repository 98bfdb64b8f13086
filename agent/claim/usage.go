package claim

import (
	"context"
	"fmt"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hostfleet/hostfleet/agent/servedtenants"
	"github.com/hostfleet/hostfleet/hub/api/usage"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// usageOf is the hub claim a claim's host use counts for: a hub claim's
// own namespace and UID; for a local claim forwarded from the hub, its
// source's; none for other local claims (they are not the hub's).
func (r *Reconciler) usageOf(c *metal3api.HostClaim) (string, types.UID) {
	if !r.local() {
		return c.Namespace, c.UID
	}
	ns, _, _ := strings.Cut(c.Annotations[hostfleetv1alpha1.AnnotationSourceClaim], "/")
	return ns, types.UID(c.Annotations[hostfleetv1alpha1.AnnotationSourceClaimUID])
}

// servedPrefixes are the label sync prefixes of the tenants the cluster
// serves: the host labels a usage record keeps, as the HostInventory
// does. A local reconciler reads no ClusterTenancy: none.
func (r *Reconciler) servedPrefixes(ctx context.Context) ([]string, error) {
	if r.local() {
		return nil, nil
	}
	return servedtenants.Prefixes(ctx, r.Claims, r.ClusterName)
}

// openUsage starts the usage interval of a host this agent holds for c
// without a whole one (bound by an agent that kept none, or kept no claim
// UID), counted for the hub claim ns/claim: from now, or from the start
// already there.
func (r *Reconciler) openUsage(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost, ns string, claim types.UID) error {
	orig := h.DeepCopy()
	usage.Open(h, ns, claim, time.Now())
	if err := r.hosts.Patch(ctx, h, orig); err != nil {
		return fmt.Errorf("start the usage interval of host %s: %w", klog.KObj(h), err)
	}
	return nil
}

// closeUsage ends the host's usage interval in the write that releases it
// (h is changed, not written). Metering never holds a release back: a
// record that cannot be written is logged, and the interval lost.
func (r *Reconciler) closeUsage(ctx context.Context, h *metal3api.BareMetalHost) {
	prefixes, err := r.servedPrefixes(ctx)
	var dropped []hostfleetv1alpha1.UsageInterval
	if err == nil {
		dropped, err = usage.Close(h, prefixes, time.Now())
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "host use not recorded", "host", klog.KObj(h))
	}
	for _, iv := range dropped {
		ctrl.LoggerFrom(ctx).Error(nil, "host use dropped: the host's record is full and the hub has not settled it", "host", klog.KObj(h),
			"claim", iv.Claim, "start", iv.Start, "end", iv.End, "max", usage.MaxRecord)
	}
}
