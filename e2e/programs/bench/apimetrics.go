package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

// Counts apiRequests reads beside the requests by verb.
const (
	// keyWatches: watch requests that ended; their clients watch again.
	keyWatches = "WATCH"
	// keyTerminated: watchers the API server closed because they fell
	// behind its events (apiserver_terminated_watchers_total);
	// keyTerminated/<resource> counts them by resource.
	keyTerminated = "terminated"
	// keySlowCreates: claim creates the API server took over 1 s to serve
	// (apiserver_request_duration_seconds).
	keySlowCreates = "slow creates"
	// keySlowEtcd: the API server's etcd requests that took over 1 s
	// (etcd_request_duration_seconds).
	keySlowEtcd = "slow etcd"
	// keyTenantBytes: the bytes of Tenant events the API server sent its
	// watchers (the hub's own; agents read their ClusterTenancy instead).
	keyTenantBytes = "tenant event bytes"
	// keyGC: the CPU seconds the API server's garbage collector took.
	keyGC = "gc cpu"
	// keyClaimCache: the capacity of its watch cache of claims, in events.
	keyClaimCache = "claim cache"
	// keyByResource/<verb> <resource>[/<subresource>] counts requests by
	// what they ask.
	keyByResource = "by"
)

// byResource prints counts by resource, largest first: " (hostclaims 3,
// leases 1)", or nothing.
func byResource(n map[string]float64) string {
	keys := make([]string, 0, len(n))
	for k, v := range n {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(n[b], n[a]), strings.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, n[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// apiRequests reads the API server's request counts (apiserver_request_total)
// by verb, and the other keys above.
func apiRequests(ctx context.Context, cfg *rest.Config) (map[string]float64, error) {
	families, err := planes.Metrics(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return countRequests(families), nil
}

// countRequests is what apiRequests counts, from the metric families.
func countRequests(families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, s := range planes.Samples(families, "etcd_request_duration_seconds") {
		out[keySlowEtcd] += s.Over1s
	}
	for _, s := range planes.Samples(families, "apiserver_request_duration_seconds") {
		if s.Labels["resource"] == "hostclaims" && s.Labels["verb"] == "POST" {
			out[keySlowCreates] += s.Over1s
		}
	}
	for _, s := range planes.Samples(families, "apiserver_watch_events_sizes") {
		if s.Labels["resource"] == "tenants" {
			out[keyTenantBytes] += s.Sum
		}
	}
	for _, s := range planes.Samples(families, "go_cpu_classes_gc_total_cpu_seconds_total") {
		out[keyGC] = s.Value
	}
	for _, s := range planes.Samples(families, "watch_cache_capacity") {
		if s.Labels["resource"] == "hostclaims" {
			out[keyClaimCache] = s.Value
		}
	}
	for _, s := range planes.Samples(families, "apiserver_terminated_watchers_total") {
		out[keyTerminated] += s.Value
		out[keyTerminated+"/"+s.Labels["resource"]] += s.Value
	}
	for _, s := range planes.Samples(families, "apiserver_request_total") {
		verb := s.Labels["verb"]
		if verb == "" || verb == "CONNECT" {
			continue
		}
		out[verb] += s.Value
		what := verb + " " + s.Labels["resource"]
		if sub := s.Labels["subresource"]; sub != "" {
			what += "/" + sub
		}
		out[keyByResource+"/"+what] += s.Value
	}
	return out
}

// storedObjects are the objects the API server stores and their estimated
// bytes, by resource (apiserver_resource_objects and
// apiserver_resource_size_estimate_bytes).
func storedObjects(ctx context.Context, cfg *rest.Config) (objects, bytes map[string]float64, err error) {
	families, err := planes.Metrics(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	objects, bytes = map[string]float64{}, map[string]float64{}
	for name, out := range map[string]map[string]float64{"apiserver_resource_objects": objects, "apiserver_resource_size_estimate_bytes": bytes} {
		for _, s := range planes.Samples(families, name) {
			if s.Value > 0 {
				out[s.Labels["resource"]] += s.Value
			}
		}
	}
	return objects, bytes, nil
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// flowCounts are the API server's requests by priority level since it
// started: dispatched (apiserver_flowcontrol_dispatched_requests_total) and
// rejected with 429 (apiserver_flowcontrol_rejected_requests_total).
type flowCounts struct{ dispatched, rejected map[string]float64 }

func flowRequests(ctx context.Context, cfg *rest.Config) (flowCounts, error) {
	families, err := planes.Metrics(ctx, cfg)
	if err != nil {
		return flowCounts{}, err
	}
	fc := flowCounts{dispatched: map[string]float64{}, rejected: map[string]float64{}}
	for name, into := range map[string]map[string]float64{"apiserver_flowcontrol_dispatched_requests_total": fc.dispatched,
		"apiserver_flowcontrol_rejected_requests_total": fc.rejected} {
		for _, s := range planes.Samples(families, name) {
			into[s.Labels["priority_level"]] += s.Value
		}
	}
	return fc, nil
}
