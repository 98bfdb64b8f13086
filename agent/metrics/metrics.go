// Package metrics defines the agent's own Prometheus metrics, registered with
// controller-runtime's registry beside its controller metrics: claims by
// condition (computed from the cache at scrape time) and the time from a
// claim's creation to its binding.
package metrics

import (
	"context"
	"slices"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/hub/api/baseline"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"

	"github.com/hostfleet/hostfleet/internal/metrics"
)

// BindLatency observes, per claim, the seconds from creation to the first
// confirmed binding.
var BindLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "hostfleet_agent_bind_latency_seconds",
	Help:    "Seconds from a claim's creation to its host binding being confirmed.",
	Buckets: prometheus.ExponentialBuckets(0.1, 2, 14),
})

// ClaimCollector reports hostfleet_agent_claims{condition,status}: the claims
// this agent serves, counted by each condition's status.
type ClaimCollector struct {
	// Claims lists the agent's claims (the label-filtered cache).
	Claims  client.Reader
	Cluster string
	desc    *prometheus.Desc
}

// NewClaimCollector returns a collector over the cached claims.
func NewClaimCollector(claims client.Reader, cluster string) *ClaimCollector {
	return &ClaimCollector{Claims: claims, Cluster: cluster, desc: prometheus.NewDesc(
		"hostfleet_agent_claims", "Claims placed on the agent's cluster, by condition and status.",
		[]string{"condition", "status"}, prometheus.Labels{"cluster": cluster})}
}

// Describe implements prometheus.Collector.
func (c *ClaimCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *ClaimCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list metal3api.HostClaimList
	if err := c.Claims.List(ctx, &list); err != nil {
		return
	}
	counts := map[[2]string]int{}
	for _, claim := range list.Items {
		for _, cond := range claim.Status.Conditions {
			counts[[2]string{cond.Type, string(cond.Status)}]++
		}
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}

// Register adds the agent's metrics, with the collectors that read the
// caches of its current manager.
func Register(cached ...prometheus.Collector) error {
	return metrics.Register([]prometheus.Collector{BindLatency, OrphansReleased, BMCRequests, BMCDuration, Heartbeat, HostReplacements, BreakerOpen}, cached...)
}

// HostReplacements counts the failed hosts the agent fenced, quarantined
// and replaced behind their claims, by whether each was confirmed off.
var HostReplacements = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "hostfleet_agent_host_replacements_total",
	Help: "Failed BareMetalHosts quarantined and replaced behind their claims, by fenced (confirmed off: true, or replaced unfenced: false).",
}, []string{"fenced"})

// BreakerOpen is 1 while the cluster's breaker holds replacements back:
// too many of its bound hosts failed within the window.
var BreakerOpen = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "hostfleet_agent_replacement_breaker_open",
	Help: "1 while too many of the cluster's bound hosts failed within the breaker's window and no failed host is replaced.",
})

// OrphansReleased counts the hosts the agent released because the claim
// that held them was gone.
var OrphansReleased = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "hostfleet_agent_orphaned_hosts_released_total",
	Help: "BareMetalHosts released because the claim that held them no longer exists.",
})

// BMCRequests counts the calls the BMC driver makes, by cluster, action
// ("get power", "power On", "insert virtual media", …) and result (ok,
// credentials, unreachable, timeout, error).
var BMCRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "hostfleet_bmc_requests_total",
	Help: "BMC calls of the agent's BMC driver, by cluster, action and result (ok, credentials, unreachable, timeout, error).",
}, []string{"cluster", "action", "result"})

// BMCDuration observes how long BMC calls take, by cluster and action.
var BMCDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "hostfleet_bmc_request_duration_seconds",
	Help:    "Duration of the BMC driver's calls, by cluster and action.",
	Buckets: prometheus.ExponentialBuckets(0.01, 2, 13),
}, []string{"cluster", "action"})

// ObserveBMC records one BMC call of cluster's agent (bmc.Options.Observe).
func ObserveBMC(cluster string) func(action, result string, took time.Duration) {
	return func(action, result string, took time.Duration) {
		BMCRequests.WithLabelValues(cluster, action, result).Inc()
		BMCDuration.WithLabelValues(cluster, action).Observe(took.Seconds())
	}
}

// Heartbeat is when the agent last read its hosts for its HostInventory
// (every --inventory-interval while it leads): a stalled agent stops it.
var Heartbeat = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "hostfleet_agent_last_heartbeat_timestamp_seconds",
	Help: "When the agent last read its cluster's hosts for its HostInventory (Unix seconds).",
}, []string{"cluster"})

// HostCollector reports the cluster's BareMetalHosts by state
// (hostfleet_agent_hosts{state}: the provisioning state, or "error") and
// those whose claim is gone (hostfleet_agent_orphaned_hosts) and those the
// release gate holds, by reason (hostfleet_agent_held_hosts), from the
// agent's cache at scrape time.
type HostCollector struct {
	Hosts                client.Reader
	hosts, orphans, held *prometheus.Desc
}

// NewHostCollector returns a collector over the cached hosts.
func NewHostCollector(hosts client.Reader, cluster string) *HostCollector {
	l := prometheus.Labels{"cluster": cluster}
	return &HostCollector{Hosts: hosts,
		hosts: prometheus.NewDesc("hostfleet_agent_hosts", "BareMetalHosts the agent sees, by state (provisioning state, or error).",
			[]string{"state"}, l),
		orphans: prometheus.NewDesc("hostfleet_agent_orphaned_hosts",
			"BareMetalHosts whose claim is gone, waiting for --orphan-grace before they are released.", nil, l),
		held: prometheus.NewDesc("hostfleet_agent_held_hosts",
			"Released BareMetalHosts held out of the pool by the release gate (their firmware baselines), by reason.", []string{"reason"}, l)}
}

// Describe implements prometheus.Collector.
func (c *HostCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.hosts
	ch <- c.orphans
	ch <- c.held
}

// Collect implements prometheus.Collector.
func (c *HostCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list metal3api.BareMetalHostList
	if err := c.Hosts.List(ctx, &list); err != nil {
		return
	}
	states, orphans, held := map[string]int{}, 0, map[string]int{}
	for _, h := range list.Items {
		state := string(h.Status.Provisioning.State)
		if h.Status.OperationalStatus == metal3api.OperationalStatusError {
			state = "error"
		} else if state == "" {
			state = "unknown"
		}
		states[state]++
		if _, ok := h.Annotations[hostfleetv1alpha1.AnnotationOrphanedSince]; ok {
			orphans++
		}
		if reason, ok := baseline.Held(h.Annotations); ok {
			held[reason]++
		}
	}
	for reason, n := range held {
		ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(n), reason)
	}
	for state, n := range states {
		ch <- prometheus.MustNewConstMetric(c.hosts, prometheus.GaugeValue, float64(n), state)
	}
	ch <- prometheus.MustNewConstMetric(c.orphans, prometheus.GaugeValue, float64(orphans))
}

// LocalClaimCollector reports hostfleet_agent_local_claims_other_controller:
// the local claims this agent serves (--local-claims) that another
// HostClaim controller reconciles too (they carry baremetal-operator's
// finalizer metal3.io/hostclaim), from the cache at scrape time. Above
// zero, two HostClaim controllers run on the cluster.
type LocalClaimCollector struct {
	Claims client.Reader
	// Serves says whether the agent serves a local claim.
	Serves func(*metal3api.HostClaim) bool
	desc   *prometheus.Desc
}

// NewLocalClaimCollector returns a collector over the cached local claims.
func NewLocalClaimCollector(claims client.Reader, cluster string, serves func(*metal3api.HostClaim) bool) *LocalClaimCollector {
	return &LocalClaimCollector{Claims: claims, Serves: serves, desc: prometheus.NewDesc(
		"hostfleet_agent_local_claims_other_controller",
		"Local claims the agent serves that another HostClaim controller (baremetal-operator's --hostclaims) reconciles too.",
		nil, prometheus.Labels{"cluster": cluster})}
}

// Describe implements prometheus.Collector.
func (c *LocalClaimCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *LocalClaimCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list metal3api.HostClaimList
	if err := c.Claims.List(ctx, &list); err != nil {
		return
	}
	n := 0
	for i := range list.Items {
		if cl := &list.Items[i]; c.Serves(cl) && slices.Contains(cl.Finalizers, metal3api.HostClaimFinalizer) {
			n++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
}
