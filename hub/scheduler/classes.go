package scheduler

import (
	"context"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/hostfleet/hostfleet/hub/api/exclusion"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/classes"
)

// classVerdict judges an unplaced claim against its tenant's host classes,
// counted over the tenant's claims that are placed or bound: the cache's,
// and the placements it does not show yet (missing). Claims not placed
// take no host and do not count, so that held claims do not hold each
// other back. Called under r.deciding, so that two decisions do not both
// take a class's last place. A tenant without quotas costs nothing.
func (r *Reconciler) classVerdict(ctx context.Context, t *hostfleetv1alpha1.Tenant, c *metal3api.HostClaim, missing map[string][]*metal3api.HostClaim) (classes.Verdict, []exclusion.Selector, error) {
	if len(t.Spec.Quotas) == 0 {
		return classes.Verdict{}, nil, nil
	}
	cls, err := classes.Of(t)
	if err != nil {
		// Nothing is placed past a class that cannot be counted.
		return classes.Verdict{Held: []string{"invalid"}, Message: fmt.Sprintf("not placed: %v; the hub administrator fixes spec.quotas of tenant %s", err, t.Name)}, nil, nil
	}
	seen := map[types.UID]bool{c.UID: true}
	var counted []*metal3api.HostClaim
	count := func(p *metal3api.HostClaim) {
		if !seen[p.UID] {
			seen[p.UID] = true
			counted = append(counted, p)
		}
	}
	namespaces := map[string]bool{}
	for _, ns := range t.Status.Namespaces {
		namespaces[ns] = true
	}
	for _, placed := range missing {
		for _, p := range placed {
			if namespaces[p.Namespace] {
				count(p)
			}
		}
	}
	for ns := range namespaces {
		objs, err := r.claims.ByIndex(toolscache.NamespaceIndex, ns)
		if err != nil {
			return classes.Verdict{}, nil, fmt.Errorf("list the claims of namespace %s: %w", ns, err)
		}
		for _, o := range objs {
			if p, ok := o.(*metal3api.HostClaim); ok && classes.Counted(p) {
				count(p)
			}
		}
	}
	f, err := classes.Read(ctx, r.Client, cls)
	if err != nil {
		return classes.Verdict{}, nil, err
	}
	prefixes := t.Spec.LabelSyncPrefixes
	v := classes.Decide(cls, classes.Counts(cls, counted, prefixes, f), c, prefixes, f)
	sels, err := exclusion.Compile(v.Exclude)
	return v, sels, err
}
