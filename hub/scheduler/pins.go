package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/hub/api/exclusion"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/requeue"
)

// pinned is the verdict on a tenant's pin: the cluster must be one of the
// tenant's.
func (r *Reconciler) pinned(c *metal3api.HostClaim, t *hostfleetv1alpha1.Tenant, cluster string, clusters []string) verdict {
	if !slices.Contains(clusters, cluster) {
		return not(hostfleetv1alpha1.ReasonPinnedOutsideSet, fmt.Sprintf(
			"pinned to %s, which is not among the clusters of tenant %s (set %s: %s); pin one of them or remove the %s label",
			cluster, t.Name, t.Spec.ClusterSet, strings.Join(clusters, ","), hostfleetv1alpha1.LabelCluster))
	}
	return verdict{set: true, ok: true, reason: hostfleetv1alpha1.ReasonPinned, message: "pinned by the tenant to " + cluster, record: true}
}

// admitPin judges a pin not yet admitted (conditions.Admitted) as a
// placement is judged: the cluster must be the tenant's, and the claim
// within its tenant's host classes, counted under r.deciding with the
// placements and admissions in flight. Admitted, it is kept off the full
// classes it does not ask for (hostfleet.io/excluded-hosts, written before
// the Scheduled condition that admits it); held, it waits where it is
// pinned, woken when a claim of its tenant goes.
func (r *Reconciler) admitPin(ctx context.Context, c *metal3api.HostClaim, t *hostfleetv1alpha1.Tenant, cluster string, clusters []string, v *verdict) (ctrl.Result, error) {
	if *v = r.pinned(c, t, cluster, clusters); !v.ok {
		return ctrl.Result{}, nil
	}
	r.deciding.Lock()
	defer r.deciding.Unlock()
	missing := r.expect.missing(r.shownCounted)
	if r.expect.has(c) {
		// Its admission is being written: judging it again would count it
		// twice, or not at all.
		*v = verdict{}
		return ctrl.Result{RequeueAfter: requeue.CacheLag}, nil
	}
	cv, _, err := r.classVerdict(ctx, t, c, missing)
	if err != nil {
		*v = verdict{}
		return ctrl.Result{}, err
	}
	if len(cv.Held) > 0 {
		*v = not(hostfleetv1alpha1.ReasonClassQuotaExceeded, cv.Message)
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	exclude, err := exclusion.Encode(cv.Exclude)
	if err != nil {
		*v = verdict{}
		return ctrl.Result{}, err
	}
	// When it was admitted, and the full classes it is kept off, before
	// the Scheduled condition that admits it.
	orig := c.DeepCopy()
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[hostfleetv1alpha1.AnnotationPlacedAt] = time.Now().UTC().Format(time.RFC3339)
	c.Annotations[hostfleetv1alpha1.AnnotationExcludedHosts] = exclude
	if exclude == "" {
		delete(c.Annotations, hostfleetv1alpha1.AnnotationExcludedHosts)
	}
	if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		*v = verdict{}
		return requeue.OnConflict(fmt.Errorf("admit pinned claim %s: %w", klog.KObj(c), err))
	}
	r.expect.add(c, cluster)
	v.admits = cluster
	return ctrl.Result{}, nil
}
