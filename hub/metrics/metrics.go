// Package metrics defines the hub's own Prometheus metrics, registered with
// controller-runtime's registry beside its controller metrics: claims by
// tenant, cluster and phase and the age of the oldest waiting one, hosts
// by cluster, pool and state (from the agents' HostInventories), each
// agent's availability, forwarded claims by the freshness of their
// feedback, all computed from the hub's cache at scrape time; and
// placements by outcome, counted by the scheduler. No label carries a
// claim's name: cardinality follows tenants, clusters and pools.
package metrics

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/usage"
	"github.com/hostfleet/hostfleet/internal/metrics"
)

// Placements counts the scheduler's decisions by outcome: the reason of
// the Scheduled condition it writes (Placed, NoCapacity,
// WaitingForInventory, Rescheduling, PinnedOutsideSet, NoTenant, …).
var Placements = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "hostfleet_placements_total",
	Help: "Placement decisions of the hub scheduler, by outcome (the Scheduled condition's reason).",
}, []string{"outcome"})

// UsageRefused counts the intervals and open hosts of clusters' usage
// reports the hub refused to count, by cluster and reason (UnknownClaim,
// OutsidePlacement, WrongNamespace, InvalidInterval): an interval once,
// an open host each time the hub reads a report that still holds it.
var UsageRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "hostfleet_usage_refused_total",
	Help: "Intervals and open hosts of a cluster's usage report the hub refused to count, by reason.",
}, []string{"cluster", "reason"})

// Claim phases.
const (
	PhaseUnplaced = "Unplaced" // no cluster yet
	PhasePlaced   = "Placed"   // on a cluster, no host bound
	PhaseBound    = "Bound"    // a host bound, not Ready
	PhaseReady    = "Ready"
	PhaseDeleting = "Deleting"
)

// Phase is where a claim is on its path.
func Phase(c *metal3api.HostClaim) string {
	switch {
	case !c.DeletionTimestamp.IsZero():
		return PhaseDeleting
	case meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionReady):
		return PhaseReady
	case meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated),
		c.Labels[hostfleetv1alpha1.LabelKind] == hostfleetv1alpha1.KindRemote && c.Status.BareMetalHost != nil:
		return PhaseBound
	case c.Labels[hostfleetv1alpha1.LabelCluster] != "":
		return PhasePlaced
	default:
		return PhaseUnplaced
	}
}

// Collector computes the hub's gauges and its usage counter from its
// cache at scrape time.
type Collector struct {
	// Reader is the hub manager's (cached) client.
	Reader client.Reader
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	claims, oldest, hosts, agent, inventory, forwarded, usage *prometheus.Desc

	// shown is the usage counter's last value of each series: an open
	// host is shown up to now, and its interval, by the agent's clock,
	// may close a few seconds before the scrape that showed it; a counter
	// never goes down, so a series shows the most it has shown until the
	// ledger passes it.
	mu    sync.Mutex
	shown map[usage.Total]float64
}

// NewCollector returns a Collector over the hub's cache.
func NewCollector(r client.Reader) *Collector {
	return &Collector{Reader: r,
		claims: prometheus.NewDesc("hostfleet_claims", "HostClaims on the hub, by tenant, cluster (empty: not placed) and phase.",
			[]string{"tenant", "cluster", "phase"}, nil),
		oldest: prometheus.NewDesc("hostfleet_claims_oldest_waiting_seconds",
			"Age of the oldest claim that is not Ready (and not being deleted), by tenant and cluster (empty: not placed).",
			[]string{"tenant", "cluster"}, nil),
		hosts: prometheus.NewDesc("hostfleet_hosts", "Hosts the agents report in their HostInventory, by cluster, pool and state (available or in_use).",
			[]string{"cluster", "pool", "state"}, nil),
		agent: prometheus.NewDesc("hostfleet_agent_available",
			"1 when the cluster's hostfleet-agent add-on is Available (its health Lease renewed), else 0.", []string{"cluster"}, nil),
		inventory: prometheus.NewDesc("hostfleet_inventory_last_update_timestamp_seconds",
			"When the cluster's agent last read its hosts for the HostInventory (Unix seconds).", []string{"cluster"}, nil),
		forwarded: prometheus.NewDesc("hostfleet_forwarded_claims",
			"Remote claims by cluster and the freshness of their feedback: fresh, stale (cluster or agent unavailable) or pending (not applied or no feedback yet).",
			[]string{"cluster", "feedback"}, nil),
		usage: prometheus.NewDesc("hostfleet_usage_host_seconds_total",
			"Seconds the hosts of a cluster were bound to a tenant's claims, as the hub counted them in the cluster's UsageLedger; class is a host class of the tenant, or empty for all its hosts.",
			[]string{"tenant", "class", "cluster"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.claims, c.oldest, c.hosts, c.agent, c.inventory, c.forwarded, c.usage} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	c.collectClaims(ctx, ch, now())
	c.collectClusters(ctx, ch)
	c.collectUsage(ctx, ch, now())
}

// collectUsage sums the clusters' UsageLedgers (hub/usage).
func (c *Collector) collectUsage(ctx context.Context, ch chan<- prometheus.Metric, now time.Time) {
	var records hostfleetv1alpha1.UsageLedgerList
	var tenants hostfleetv1alpha1.TenantList
	if c.Reader.List(ctx, &records) != nil || c.Reader.List(ctx, &tenants) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shown == nil {
		c.shown = map[usage.Total]float64{}
	}
	for _, t := range usage.Totals(records.Items, tenants.Items, now, time.Time{}) {
		v := float64(t.Seconds)
		t.Seconds = 0
		v = max(v, c.shown[t])
		c.shown[t] = v
		ch <- prometheus.MustNewConstMetric(c.usage, prometheus.CounterValue, v, t.Tenant, t.Class, t.Cluster)
	}
}

func (c *Collector) collectClaims(ctx context.Context, ch chan<- prometheus.Metric, now time.Time) {
	var claims metal3api.HostClaimList
	var namespaces corev1.NamespaceList
	if c.Reader.List(ctx, &claims) != nil || c.Reader.List(ctx, &namespaces) != nil {
		return
	}
	tenantOf := map[string]string{}
	for _, ns := range namespaces.Items {
		tenantOf[ns.Name] = ns.Labels[hostfleetv1alpha1.LabelTenant]
	}
	counts, oldest, feedback := map[[3]string]int{}, map[[2]string]time.Duration{}, map[[2]string]int{}
	for i := range claims.Items {
		cl := &claims.Items[i]
		tenant, cluster, phase := tenantOf[cl.Namespace], cl.Labels[hostfleetv1alpha1.LabelCluster], Phase(cl)
		counts[[3]string{tenant, cluster, phase}]++
		if phase != PhaseReady && phase != PhaseDeleting {
			k := [2]string{tenant, cluster}
			oldest[k] = max(oldest[k], now.Sub(cl.CreationTimestamp.Time))
		}
		if cl.Labels[hostfleetv1alpha1.LabelKind] == hostfleetv1alpha1.KindRemote && cluster != "" {
			feedback[[2]string{cluster, Feedback(cl)}]++
		}
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.claims, prometheus.GaugeValue, float64(n), k[0], k[1], k[2])
	}
	for k, d := range oldest {
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, d.Seconds(), k[0], k[1])
	}
	for k, n := range feedback {
		ch <- prometheus.MustNewConstMetric(c.forwarded, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}

// Feedback is how fresh a remote claim's feedback is: stale when its
// cluster or agent stopped reporting, pending before the first, else fresh.
func Feedback(c *metal3api.HostClaim) string {
	ready := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionReady)
	switch {
	case ready == nil:
		return "pending"
	case ready.Reason == hostfleetv1alpha1.ReasonClusterUnavailable || ready.Reason == hostfleetv1alpha1.ReasonAgentUnavailable:
		return "stale"
	case ready.Reason == hostfleetv1alpha1.ReasonFeedbackPending || ready.Reason == hostfleetv1alpha1.ReasonWorkNotApplied ||
		ready.Reason == hostfleetv1alpha1.ReasonNotPlaced:
		return "pending"
	default:
		return "fresh"
	}
}

func (c *Collector) collectClusters(ctx context.Context, ch chan<- prometheus.Metric) {
	var inventories hostfleetv1alpha1.HostInventoryList
	if c.Reader.List(ctx, &inventories) == nil {
		for _, inv := range inventories.Items {
			cluster := inv.Spec.ClusterName
			for _, p := range inv.Status.Pools {
				pool := PoolName(p)
				ch <- prometheus.MustNewConstMetric(c.hosts, prometheus.GaugeValue, float64(p.Available), cluster, pool, "available")
				ch <- prometheus.MustNewConstMetric(c.hosts, prometheus.GaugeValue, float64(p.Total-p.Available), cluster, pool, "in_use")
			}
			if t := inv.Status.LastUpdated; t != nil {
				ch <- prometheus.MustNewConstMetric(c.inventory, prometheus.GaugeValue, float64(t.Unix()), cluster)
			}
		}
	}
	var addons addonv1beta1.ManagedClusterAddOnList
	if c.Reader.List(ctx, &addons) == nil {
		for _, a := range addons.Items {
			if a.Name != hostfleetv1alpha1.AddonName {
				continue
			}
			v := 0.0
			if meta.IsStatusConditionTrue(a.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable) {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.agent, prometheus.GaugeValue, v, a.Namespace)
		}
	}
}

// PoolName names a pool in a label: its labels (k=v, sorted, comma
// separated) and failure domain; "default" when it has neither.
func PoolName(p hostfleetv1alpha1.HostPool) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p.Labels)) {
		parts = append(parts, k+"="+p.Labels[k])
	}
	if p.FailureDomain != "" {
		parts = append(parts, "failure-domain="+p.FailureDomain)
	}
	if len(parts) == 0 {
		return "default"
	}
	return strings.Join(parts, ",")
}

// Register adds the hub's metrics to controller-runtime's registry.
func Register(c *Collector) error {
	return metrics.Register([]prometheus.Collector{Placements, UsageRefused}, c)
}
