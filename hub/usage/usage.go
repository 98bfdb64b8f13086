// Package usage is the hub's usage ledger: each cluster's UsageLedger,
// into which the hub counts the intervals the cluster's agent reports
// (HostUsage) for the claims the hub placed there, each once and only ever
// added to (Ingest, and the controller that applies it), and the sums of
// the ledgers per tenant, host class and cluster that the usage metric and
// kubectl hostfleet usage report (Totals).
package usage

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/classes"
)

// AllHosts is the class of a Total over all of a tenant's hosts, in a class
// or not.
const AllHosts = ""

// Total is the host-seconds of one tenant in one class on one cluster.
type Total struct {
	Tenant, Class, Cluster string
	Seconds                int64
}

// Totals sums the ledgers per tenant (by the hub namespace of the claims),
// class (each of the tenant's classes by labels whose selector matches the
// hosts' labels, and AllHosts) and cluster: counted time in periods from since on
// (a month counts when it is since's month or later), and open hosts up to
// now, from since. Namespaces of no tenant are left out.
func Totals(ledgers []hostfleetv1alpha1.UsageLedger, tenants []hostfleetv1alpha1.Tenant, now, since time.Time) []Total {
	type owner struct {
		tenant  string
		classes []classes.Class
	}
	byNS := map[string]owner{}
	for i := range tenants {
		t := &tenants[i]
		cls, _ := classes.Of(t) // a class that does not compile counts in AllHosts only
		for _, ns := range t.Status.Namespaces {
			byNS[ns] = owner{tenant: t.Name, classes: cls}
		}
	}
	sums := map[Total]int64{}
	add := func(cluster, ns string, lbls map[string]string, secs int64) {
		o, ok := byNS[ns]
		if !ok || secs <= 0 {
			return
		}
		sums[Total{Tenant: o.tenant, Class: AllHosts, Cluster: cluster}] += secs
		for _, c := range o.classes {
			// The ledger keeps hosts' labels, not their hardware: a class
			// by hardware is counted in AllHosts only.
			if c.Hardware == nil && c.Selector.Matches(labels.Set(lbls)) {
				sums[Total{Tenant: o.tenant, Class: c.Name, Cluster: cluster}] += secs
			}
		}
	}
	from := ""
	if !since.IsZero() {
		from = since.UTC().Format("2006-01-02")
	}
	for i := range ledgers {
		l := &ledgers[i]
		for _, e := range l.Status.Counted {
			if from == "" || e.Period >= from || (len(e.Period) == 7 && e.Period == from[:7]) {
				add(l.Spec.ClusterName, e.Namespace, e.Labels, e.Seconds)
			}
		}
		counted, ended := map[types.UID]time.Time{}, map[types.UID]time.Time{}
		for _, c := range l.Status.Claims {
			if n := len(c.Counted); n > 0 {
				counted[c.UID] = c.Counted[n-1].End.Time
			}
			if c.To != nil {
				ended[c.UID] = c.To.Time
			}
		}
		for _, o := range l.Status.Open {
			// From its start, or the end of what was counted for its
			// claim (a vanished host's time, counted up to when the hub
			// learned of it), or since, whichever is latest; up to now,
			// or the claim's end (its release not reported yet).
			start, end := latest(latest(o.Since.Time, counted[o.Claim]), since), now
			if to, ok := ended[o.Claim]; ok && to.Before(end) {
				end = to
			}
			if end.After(start) {
				add(l.Spec.ClusterName, o.Namespace, o.Labels, int64(end.Sub(start)/time.Second))
			}
		}
	}
	out := make([]Total, 0, len(sums))
	for k, v := range sums {
		k.Seconds = v
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Total) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Cluster, b.Cluster))
	})
	return out
}
