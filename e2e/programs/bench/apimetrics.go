package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"k8s.io/client-go/rest"
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

// overOneSecond counts, from a histogram's _count and le="1" _bucket lines,
// the observations over 1 s: the count adds, the bucket subtracts.
func overOneSecond(line, name string) (float64, bool) {
	sign := 0.0
	switch {
	case strings.HasPrefix(line, name+"_count{"):
		sign = 1
	case strings.HasPrefix(line, name+"_bucket{") && strings.Contains(line, `le="1"}`):
		sign = -1
	default:
		return 0, false
	}
	v, err := sampleValue(line)
	return sign * v, err == nil
}

// label is the value of a label of a metrics text line, "" if it has none.
func label(line, name string) string {
	for _, sep := range []string{"{", ","} {
		if i := strings.Index(line, sep+name+`="`); i >= 0 {
			v := line[i+len(sep)+len(name)+2:]
			return v[:strings.IndexByte(v, '"')]
		}
	}
	return ""
}

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

// sampleValue is the value of a metrics text line: its last field.
func sampleValue(line string) (float64, error) {
	return strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
}

// apiRequests reads the API server's request counts (apiserver_request_total)
// by verb, and keyTerminated, keySlowCreates and keySlowEtcd.
func apiRequests(ctx context.Context, cfg *rest.Config) (map[string]float64, error) {
	out := map[string]float64{}
	return out, planes.Metrics(ctx, cfg, func(line string) { countRequest(out, line) })
}

// storedObjects are the objects the API server stores and their estimated
// bytes, by resource (apiserver_resource_objects and
// apiserver_resource_size_estimate_bytes).
func storedObjects(ctx context.Context, cfg *rest.Config) (objects, bytes map[string]float64, err error) {
	objects, bytes = map[string]float64{}, map[string]float64{}
	return objects, bytes, planes.Metrics(ctx, cfg, func(line string) {
		out := objects
		switch {
		case strings.HasPrefix(line, "apiserver_resource_objects{"):
		case strings.HasPrefix(line, "apiserver_resource_size_estimate_bytes{"):
			out = bytes
		default:
			return
		}
		if v, err := sampleValue(line); err == nil && v > 0 {
			out[label(line, "resource")] += v
		}
	})
}

// countRequest adds to out what one metrics line counts.
func countRequest(out map[string]float64, line string) {
	if v, ok := overOneSecond(line, "etcd_request_duration_seconds"); ok {
		out[keySlowEtcd] += v
		return
	}
	if strings.Contains(line, `resource="hostclaims"`) && strings.Contains(line, `verb="POST"`) {
		if v, ok := overOneSecond(line, "apiserver_request_duration_seconds"); ok {
			out[keySlowCreates] += v
			return
		}
	}
	v, err := sampleValue(line)
	if err != nil {
		return
	}
	switch {
	case strings.HasPrefix(line, "apiserver_watch_events_sizes_sum{") && strings.Contains(line, `resource="tenants"`):
		out[keyTenantBytes] += v
	case strings.HasPrefix(line, "go_cpu_classes_gc_total_cpu_seconds_total "):
		out[keyGC] = v
	case strings.HasPrefix(line, "watch_cache_capacity{") && label(line, "resource") == "hostclaims":
		out[keyClaimCache] = v
	case strings.HasPrefix(line, "apiserver_terminated_watchers_total{"):
		out[keyTerminated] += v
		out[keyTerminated+"/"+label(line, "resource")] += v
	case strings.HasPrefix(line, "apiserver_request_total{"):
		if verb := label(line, "verb"); verb != "" && verb != "CONNECT" {
			out[verb] += v
			what := verb + " " + label(line, "resource")
			if sub := label(line, "subresource"); sub != "" {
				what += "/" + sub
			}
			out[keyByResource+"/"+what] += v
		}
	}
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
	fc := flowCounts{dispatched: map[string]float64{}, rejected: map[string]float64{}}
	return fc, planes.Metrics(ctx, cfg, func(line string) {
		var into map[string]float64
		switch {
		case strings.HasPrefix(line, "apiserver_flowcontrol_dispatched_requests_total{"):
			into = fc.dispatched
		case strings.HasPrefix(line, "apiserver_flowcontrol_rejected_requests_total{"):
			into = fc.rejected
		default:
			return
		}
		if v, err := sampleValue(line); err == nil {
			into[label(line, "priority_level")] += v
		}
	})
}
