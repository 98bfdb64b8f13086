package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

// scaleSplit puts the hub on a core of its own while the claims are made:
// its API server, etcd and controller on CPU 0; the simulated fleet (this
// process with every agent, the observer it starts, the infrastructure
// planes) on CPU 1, as a fleet on other machines would be.
var scaleSplit = flag.Bool("scale-split", true, "scale: while the claims are made, run the hub (API server, etcd, controller) on CPU 0 and the simulated fleet (agents, observer, infrastructure planes) on CPU 1, in cgroup v1 cpusets (needs root and 2 CPUs)")

// split moves the hub and the fleet into cpusets of their own; undo moves
// them back.
func (b *scaleBench) split() (undo func(), err error) {
	hub, err := planes.NewCpuset("hostfleet-bench-hub", "0")
	if err != nil {
		return nil, err
	}
	fleet, err := planes.NewCpuset("hostfleet-bench-fleet", "1")
	if err != nil {
		_ = hub.Remove()
		return nil, err
	}
	undo = func() {
		for _, c := range []*planes.Cpuset{fleet, hub} {
			if err := c.Remove(); err != nil {
				fmt.Fprintln(os.Stderr, "bench: cpuset:", err)
			}
		}
	}
	hubPIDs, err := b.hubPlane.PIDs()
	if err == nil {
		err = hub.Add(append(hubPIDs, b.hubCmd.Process.Pid)...)
	}
	if err == nil {
		err = fleet.Add(os.Getpid())
	}
	for _, name := range b.names[1:] {
		var pids []int
		if pids, err = b.f.Plane(name).PIDs(); err == nil {
			err = fleet.Add(pids...)
		}
		if err != nil {
			break
		}
	}
	if err != nil {
		undo()
		return nil, err
	}
	return undo, nil
}

// prepare splits the hub from the fleet (with -scale-split) and reads the
// hub idle; undo ends the split.
func (b *scaleBench) prepare(ctx context.Context, res *scaleResult) (undo func(), err error) {
	undo = func() {}
	if *scaleSplit {
		if undo, err = b.split(); err != nil {
			return nil, fmt.Errorf("-scale-split: %w", err)
		}
	}
	if res.idle, err = b.idle(ctx); err != nil {
		undo()
		return nil, err
	}
	return undo, nil
}

// idleWindow is how long the hub is watched idle before the claims.
const idleWindow = 10 * time.Second

// idle is the hub's CPU (API server and controller) over idleWindow with
// every agent connected and no claim: its background (leases, inventories,
// resyncs), subtracted from what the claims cost.
func (b *scaleBench) idle(ctx context.Context) (time.Duration, error) {
	before, err := b.usage(ctx)
	if err != nil {
		return 0, err
	}
	select {
	case <-time.After(idleWindow):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	after, err := b.usage(ctx)
	if err != nil {
		return 0, err
	}
	return after.server.Sub(before.server).CPU + after.controller.Sub(before.controller).CPU, nil
}
