package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// decide takes one placement decision (Place) over the candidates'
// inventories and pending claims, counting the placements decided before it
// (expectations, recorded before their writes). Decisions are taken one at
// a time; their writes run concurrently (setup.Options.Concurrency). stale: this view of the
// claim is older than its own placement, which the cache does not show yet.
//
// Place looks at the clusters the walk over the order shortlists (those
// with the most free matching hosts); at all of them only when none has a
// free matching host, to say why of each.
func (r *Reconciler) decide(ctx context.Context, c *metal3api.HostClaim, t *hostfleetv1alpha1.Tenant, clusters []string) (res Result, excluded []hostfleetv1alpha1.ClassSelector, stale bool, _ error) {
	in := Input{Claim: c, Clusters: clusters, Inventories: map[string]*hostfleetv1alpha1.HostInventory{},
		Pending: map[string][]*metal3api.HostClaim{}, Prefixes: t.Spec.LabelSyncPrefixes, Exclude: map[string]bool{},
		Placement: c.Annotations[hostfleetv1alpha1.AnnotationPlacement], SetClusters: t.Status.Clusters, Remote: isRemote(c), Unavailable: r.downFor(clusters)}
	if expr, ok := c.Annotations[hostfleetv1alpha1.AnnotationHardware]; ok {
		req, err := hardware.Cached(expr)
		if err != nil {
			return Result{Reason: hostfleetv1alpha1.ReasonInvalidHardware, Message: fmt.Sprintf("%s: %v", hostfleetv1alpha1.AnnotationHardware, err)}, nil, false, nil
		}
		in.Hardware = req
	}
	for _, e := range strings.Split(c.Annotations[hostfleetv1alpha1.AnnotationExcluded], ",") {
		if e != "" {
			in.Exclude[e] = true
		}
	}
	r.deciding.Lock()
	defer r.deciding.Unlock()
	missing := r.expect.missing(r.shownCounted)
	if r.expect.has(c) {
		// Deciding again would place it twice, and the placement it has
		// would stop being counted.
		return Result{}, nil, true, nil
	}
	cv, excludeHosts, err := r.classVerdict(ctx, t, c, missing)
	if err != nil {
		return Result{}, nil, false, err
	}
	if len(cv.Held) > 0 {
		return Result{Reason: hostfleetv1alpha1.ReasonClassQuotaExceeded, Message: cv.Message}, nil, false, nil
	}
	in.ExcludeHosts = excludeHosts
	gathered := map[string]bool{}
	short, err := r.shortlist(&in, missing, gathered)
	if err != nil {
		return Result{}, nil, false, err
	}
	if len(short) > 0 {
		in.Clusters = short
	} else {
		for _, cl := range clusters {
			if err := r.gather(&in, cl, missing, gathered); err != nil {
				return Result{}, nil, false, err
			}
		}
	}
	res = Place(in)
	if res.Cluster != "" {
		r.expect.add(c, res.Cluster)
	}
	return res, cv.Exclude, false, nil
}

// shortlist walks the order for the candidates (in.Clusters, sorted) with
// free matching hosts, gathering what Place reads of each, until no
// cluster left can have more than the best found: those are what Place
// chooses among. Empty when none has (or the selector cannot be read).
func (r *Reconciler) shortlist(in *Input, missing map[string][]*metal3api.HostClaim, gathered map[string]bool) ([]string, error) {
	sel, err := selector(in.Claim.Spec.HostSelector, in.Prefixes)
	if r.order == nil || err != nil || in.Hardware != nil {
		// Place looks at every cluster, and says why; with a hardware
		// requirement, the cluster with the least hardware that meets it
		// is chosen, not the one with most free hosts the order finds.
		return nil, nil
	}
	var short []string
	best := 0
	r.order.walk(hash(in.Claim), func() int { return best }, func(cl string) bool {
		if _, ok := slices.BinarySearch(in.Clusters, cl); !ok || in.Exclude[cl] || !in.Unavailable[cl].IsZero() {
			return true
		}
		if err = r.gather(in, cl, missing, gathered); err != nil {
			return false
		}
		if inv := in.Inventories[cl]; inv != nil {
			if free, pending := freeHosts(*in, sel, cl, inv); free-pending > 0 {
				short = append(short, cl)
				best = max(best, free-pending)
			}
		}
		return true
	})
	return short, err
}

// gather reads cluster's inventory and the claims pending there into in,
// once (gathered).
func (r *Reconciler) gather(in *Input, cluster string, missing map[string][]*metal3api.HostClaim, gathered map[string]bool) error {
	if gathered[cluster] {
		return nil
	}
	gathered[cluster] = true
	obj, found, err := r.inventories.GetByKey(cluster + "/" + cluster)
	if err != nil {
		return fmt.Errorf("read HostInventory %s/%s: %w", cluster, cluster, err)
	}
	if inv, ok := obj.(*hostfleetv1alpha1.HostInventory); found && ok {
		in.Inventories[cluster] = inv
	}
	placed, err := r.claims.ByIndex(pendingIndex, cluster)
	if err != nil {
		return fmt.Errorf("list the claims pending on %s: %w", cluster, err)
	}
	for _, o := range placed {
		if p, ok := o.(*metal3api.HostClaim); ok && uncounted(p, in.Inventories[cluster]) {
			in.Pending[cluster] = append(in.Pending[cluster], p)
		}
	}
	if len(missing[cluster]) > 0 {
		in.Pending[cluster] = append(in.Pending[cluster], missing[cluster]...)
	}
	return nil
}
