package scheduler

import (
	"context"
	"fmt"
	"slices"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/claimstatus"
)

// unavailable says since when a cluster's ManagedCluster has not been
// Available: its Available condition False or Unknown (OCM marks a cluster
// whose klusterlet stopped renewing its lease Unknown past the grace
// period). A cluster without the condition yet (never joined: it has no
// inventory either) or unknown to the hub is not judged.
func (r *Reconciler) unavailable(cluster string) (time.Time, bool) {
	if r.clusters == nil {
		return time.Time{}, false
	}
	obj, found, err := r.clusters.GetByKey(cluster)
	mc, ok := obj.(*clusterv1.ManagedCluster)
	if err != nil || !found || !ok {
		return time.Time{}, false
	}
	c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	if c == nil || c.Status == metav1.ConditionTrue {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

// downIndex indexes ManagedClusters that say they are not Available under
// "true": a decision looks at those, not at every cluster of the fleet.
const downIndex = "hostfleet.down"

func clusterIndexers() toolscache.Indexers {
	return toolscache.Indexers{downIndex: func(o any) ([]string, error) {
		if mc, ok := o.(*clusterv1.ManagedCluster); ok && down(mc) {
			return []string{"true"}, nil
		}
		return nil, nil
	}}
}

// downFor is the candidates (sorted) that are not Available, with since
// when: no claim is placed there.
func (r *Reconciler) downFor(clusters []string) map[string]time.Time {
	if r.clusters == nil {
		return nil
	}
	objs, err := r.clusters.ByIndex(downIndex, "true")
	if err != nil || len(objs) == 0 {
		return nil
	}
	var out map[string]time.Time
	for _, o := range objs {
		mc, ok := o.(*clusterv1.ManagedCluster)
		if !ok {
			continue
		}
		if _, candidate := slices.BinarySearch(clusters, mc.Name); !candidate {
			continue
		}
		if since, down := r.unavailable(mc.Name); down {
			if out == nil {
				out = map[string]time.Time{}
			}
			out[mc.Name] = since
		}
	}
	return out
}

// onAvailability maps a cluster that stops or starts being Available to
// its claims (being deleted too: they say so) and the unplaced ones (placed
// again).
func (r *Reconciler) onAvailability(ctx context.Context, o client.Object) []reconcile.Request {
	on, err := r.claims.ByIndex(onClusterIndex, o.GetName())
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list the claims of a cluster", "cluster", o.GetName())
	}
	out := r.requests(ctx, unplacedIndex)
	for _, obj := range on {
		if c, ok := obj.(*metal3api.HostClaim); ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return out
}

func at(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// stranded is the verdict on a claim served on a cluster that is not
// Available: placed, and held there (nothing doubles it elsewhere), but
// its agent cannot act on it until the cluster is back.
func stranded(cluster string, since time.Time) verdict {
	return verdict{set: true, ok: true, reason: hostfleetv1alpha1.ReasonClusterUnavailable, record: true, message: fmt.Sprintf(
		"placed on %s, whose ManagedCluster has not been Available since %s: its agent cannot act on the claim (status, power, release) until the cluster is back; "+
			"the claim keeps its place and host there. If %s is lost for good, delete the claim, then a hub administrator runs `kubectl hostfleet forget-cluster %s`",
		cluster, at(since), cluster, cluster)}
}

// deleting tells a claim being deleted on a cluster that is not Available,
// held by a Hostfleet finalizer only that cluster's agent (or work agent)
// removes, what an administrator does if the cluster is lost for good.
func (r *Reconciler) deleting(ctx context.Context, c *metal3api.HostClaim) (ctrl.Result, error) {
	cluster := c.Labels[hostfleetv1alpha1.LabelCluster]
	if cluster == "" || !slices.ContainsFunc(c.Finalizers, func(f string) bool {
		return f == hostfleetv1alpha1.AgentFinalizer || f == hostfleetv1alpha1.ForwarderFinalizer
	}) {
		return ctrl.Result{}, nil
	}
	since, down := r.unavailable(cluster)
	if !down {
		return ctrl.Result{}, nil
	}
	v := not(hostfleetv1alpha1.ReasonClusterUnavailable, fmt.Sprintf(
		"being deleted: waiting for %s to release its host, but %s's ManagedCluster has not been Available since %s. It is released when %s is back. "+
			"If %s is lost for good, a hub administrator runs `kubectl hostfleet forget-cluster %s`: the claims being deleted there let go "+
			"(nothing on any other cluster is touched; %s's agent releases their hosts if it ever comes back)",
		cluster, cluster, at(since), cluster, cluster, cluster, cluster))
	return ctrl.Result{}, r.writeScheduled(ctx, c, claimstatus.HubKind(c), v)
}
