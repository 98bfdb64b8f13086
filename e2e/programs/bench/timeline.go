package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// timeline samples the hub during the claims, every window: its API
// server's CPU and the watch requests that ended (their clients watch
// again). When claims were placed late, the windows they were created in are
// printed beside what the hub did then, and the median window: a stall can
// be matched with a burst of CPU or of watches.
type timeline struct {
	window  time.Duration
	samples []sample
}

type sample struct {
	at      time.Time
	cpu     time.Duration
	watches float64
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
		created, late int
		cores         float64
		watches       float64
	}
	ws := make([]window, len(t.samples)-1)
	for i := range ws {
		a, b := t.samples[i], t.samples[i+1]
		ws[i].cores = (b.cpu - a.cpu).Seconds() / b.at.Sub(a.at).Seconds()
		ws[i].watches = b.watches - a.watches
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
	cores := make([]float64, len(ws))
	watches := make([]float64, len(ws))
	for i, w := range ws {
		cores[i], watches[i] = w.cores, w.watches
	}
	slices.Sort(cores)
	slices.Sort(watches)
	fmt.Printf("    by %s window: the median one, hub API server %.2f cores, %.0f watches ended\n",
		t.window, cores[len(cores)/2], watches[len(watches)/2])
	for i, w := range ws {
		if w.late == 0 && (i+1 >= len(ws) || ws[i+1].late == 0) {
			continue
		}
		fmt.Printf("    +%4.0fs: %3d created, %3d late; hub API server %.2f cores, %.0f watches ended\n",
			t.samples[i].at.Sub(start).Seconds(), w.created, w.late, w.cores, w.watches)
	}
}
