package main

import (
	"context"
	"fmt"
	"runtime/metrics"
	"slices"
	"time"
)

// timeline samples the hub during the claims, every window: its API
// server's CPU, the watch requests that ended (their clients watch again),
// the watchers it closed for falling behind, the claim creates and etcd
// requests it took over 1 s to serve; and this process (every agent): its
// CPU, the longest a runnable goroutine waited to run and the longest
// stop-the-world pause; of both processes' CPU, what their garbage collector
// took; the hub controller's, the hub etcd's and the infrastructure API
// servers' CPU, and the machine's busy cores. When claims were placed late,
// the windows they were created in are printed beside these, and the median
// window.
type timeline struct {
	window  time.Duration
	samples []sample
}

type sample struct {
	at                             time.Time
	cpu, agents, controller        time.Duration
	etcd, machine, infra           time.Duration
	watches, slowCreates, slowEtcd float64
	terminated, tenantBytes, lists float64
	// serverGC is the hub API server's garbage collector's CPU, in seconds.
	serverGC float64
	runtime  []metrics.Sample
}

// runtimeMetrics are this process's scheduling latencies and stop-the-world
// pauses, cumulative histograms, and its garbage collector's CPU.
var runtimeMetrics = []string{"/sched/latencies:seconds", "/sched/pauses/total/gc:seconds", "/cpu/classes/gc/total:cpu-seconds"}

func readRuntime() []metrics.Sample {
	s := make([]metrics.Sample, len(runtimeMetrics))
	for i, name := range runtimeMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	return s
}

// gcSeconds is the CPU this process's garbage collector took so far.
func gcSeconds() float64 { return float(readRuntime()[2]) }

// float is a float sample's value, 0 for any other kind.
func float(s metrics.Sample) float64 {
	if s.Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return s.Value.Float64()
}

// longest returns the upper bound of the highest bucket that counted
// between two reads of a cumulative histogram.
func longest(a, b metrics.Sample) time.Duration {
	if a.Value.Kind() != metrics.KindFloat64Histogram || b.Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	ha, hb := a.Value.Float64Histogram(), b.Value.Float64Histogram()
	for i := len(hb.Counts) - 1; i >= 0; i-- {
		if i < len(ha.Counts) && hb.Counts[i] > ha.Counts[i] {
			return time.Duration(hb.Buckets[i+1] * float64(time.Second))
		}
	}
	return 0
}

// run samples until ctx is done; read failures skip the sample.
func (t *timeline) run(ctx context.Context, read func(context.Context) (sample, error)) {
	tick := time.NewTicker(t.window)
	defer tick.Stop()
	for {
		if s, err := read(ctx); err == nil {
			t.samples = append(t.samples, s)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// print prints the windows in which claims placed late were created (and the
// one before each), from start; created and late are the claims' creation
// times and whether each was late.
func (t *timeline) print(start time.Time, created []time.Time, late []bool) {
	if len(t.samples) < 2 {
		return
	}
	type window struct {
		created, late                  int
		cores, agentCores              float64
		controllerCores, machineCores  float64
		etcdCores, infraCores          float64
		watches, slowCreates, slowEtcd float64
		terminated, tenantBytes, lists float64
		serverGC, agentGC              float64 // cores
		wait, pause                    time.Duration
	}
	ws := make([]window, len(t.samples)-1)
	for i := range ws {
		a, b := t.samples[i], t.samples[i+1]
		secs := b.at.Sub(a.at).Seconds()
		ws[i] = window{cores: (b.cpu - a.cpu).Seconds() / secs, agentCores: (b.agents - a.agents).Seconds() / secs,
			watches: b.watches - a.watches, terminated: b.terminated - a.terminated, tenantBytes: b.tenantBytes - a.tenantBytes, lists: b.lists - a.lists, slowCreates: b.slowCreates - a.slowCreates, slowEtcd: b.slowEtcd - a.slowEtcd,
			serverGC: (b.serverGC - a.serverGC) / secs, controllerCores: (b.controller - a.controller).Seconds() / secs,
			machineCores: (b.machine - a.machine).Seconds() / secs, etcdCores: (b.etcd - a.etcd).Seconds() / secs,
			infraCores: (b.infra - a.infra).Seconds() / secs}
		if len(a.runtime) == len(runtimeMetrics) && len(b.runtime) == len(runtimeMetrics) {
			ws[i].wait, ws[i].pause = longest(a.runtime[0], b.runtime[0]), longest(a.runtime[1], b.runtime[1])
			ws[i].agentGC = (float(b.runtime[2]) - float(a.runtime[2])) / secs
		}
	}
	first := t.samples[0].at
	for i, c := range created {
		w := int(c.Sub(first) / t.window)
		if w < 0 || w >= len(ws) {
			continue
		}
		ws[w].created++
		if late[i] {
			ws[w].late++
		}
	}
	median := func(f func(window) float64) float64 {
		v := make([]float64, len(ws))
		for i, w := range ws {
			v[i] = f(w)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	fmt.Printf("    by %s window: the median one, machine %.2f cores busy, hub API server %.2f cores (GC %.2f), %.0f watches ended; hub etcd %.2f cores; hub controller %.2f cores; infrastructure API servers %.2f cores; agents %.2f cores (GC %.2f), their goroutines waited up to %s\n",
		t.window, median(func(w window) float64 { return w.machineCores }), median(func(w window) float64 { return w.cores }), median(func(w window) float64 { return w.serverGC }),
		median(func(w window) float64 { return w.watches }), median(func(w window) float64 { return w.etcdCores }), median(func(w window) float64 { return w.controllerCores }), median(func(w window) float64 { return w.infraCores }),
		median(func(w window) float64 { return w.agentCores }), median(func(w window) float64 { return w.agentGC }), time.Duration(median(func(w window) float64 { return float64(w.wait) })))
	for i, w := range ws {
		if w.late == 0 && (i+1 >= len(ws) || ws[i+1].late == 0) {
			continue
		}
		fmt.Printf("    +%4.0fs: %3d created, %3d late; machine %.2f cores busy; hub API server %.2f cores (GC %.2f), %.0f watches ended (%.0f closed for falling behind), %.0f LISTs, %.0f creates and %.0f etcd requests over 1 s, "+
			"%.1f MB of Tenant events sent; hub etcd %.2f cores; hub controller %.2f cores; infrastructure API servers %.2f cores; agents %.2f cores (GC %.2f), their goroutines waited up to %s, paused up to %s\n",
			t.samples[i].at.Sub(start).Seconds(), w.created, w.late, w.machineCores, w.cores, w.serverGC, w.watches, w.terminated, w.lists, w.slowCreates, w.slowEtcd, w.tenantBytes/1e6,
			w.etcdCores, w.controllerCores, w.infraCores, w.agentCores, w.agentGC, w.wait, w.pause)
	}
}
