// Package metrics defines the agent's own Prometheus metrics, registered with
// controller-runtime's registry beside its controller metrics: claims by
// condition (computed from the cache at scrape time) and the time from a
// claim's creation to its binding.
package metrics

import (
	"context"
	"errors"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
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

// Register adds the agent's metrics to controller-runtime's registry.
func Register(claims *ClaimCollector) error {
	for _, col := range []prometheus.Collector{BindLatency, OrphansReleased, claims} {
		err := crmetrics.Registry.Register(col)
		var dup prometheus.AlreadyRegisteredError
		switch {
		case err == nil:
		case !errors.As(err, &dup):
			return err
		case col == prometheus.Collector(claims):
			// The agent's controllers started again: count from the new
			// manager's cache, not the stopped one's.
			crmetrics.Registry.Unregister(dup.ExistingCollector)
			if err := crmetrics.Registry.Register(col); err != nil {
				return err
			}
		}
	}
	return nil
}

// OrphansReleased counts the hosts the agent released because the claim
// that held them was gone.
var OrphansReleased = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "hostfleet_agent_orphaned_hosts_released_total",
	Help: "BareMetalHosts released because the claim that held them no longer exists.",
})
