// Package usage sums the clusters' HostUsage records into host-seconds per
// tenant, host class and cluster: what the hub's usage counter and
// `kubectl hostfleet usage` report. Pure.
package usage

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"

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

// Totals sums the records per tenant (by the hub namespace of the claims),
// class (each of the tenant's classes whose selector matches the hosts'
// labels, and AllHosts) and cluster: closed intervals in periods from since
// on (a month counts when it is since's month or later), and open ones up
// to now, from since. Namespaces of no tenant are left out.
func Totals(records []hostfleetv1alpha1.HostUsage, tenants []hostfleetv1alpha1.Tenant, now, since time.Time) []Total {
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
			if c.Selector.Matches(labels.Set(lbls)) {
				sums[Total{Tenant: o.tenant, Class: c.Name, Cluster: cluster}] += secs
			}
		}
	}
	from := ""
	if !since.IsZero() {
		from = since.UTC().Format("2006-01-02")
	}
	for i := range records {
		r := &records[i]
		for _, e := range r.Status.Closed {
			if from == "" || e.Period >= from || (len(e.Period) == 7 && e.Period == from[:7]) {
				add(r.Spec.ClusterName, e.Namespace, e.Labels, e.Seconds)
			}
		}
		for _, o := range r.Status.Open {
			start := o.Since.Time
			if start.Before(since) {
				start = since
			}
			add(r.Spec.ClusterName, o.Namespace, o.Labels, int64(now.Sub(start)/time.Second))
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
