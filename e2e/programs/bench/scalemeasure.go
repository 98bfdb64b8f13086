package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

// usage is what the hub's API server, its controller and its requests
// have used so far.
type usage struct {
	server, controller planes.Usage
	requests           map[string]float64
	gc                 float64
}

func (b *scaleBench) usage(ctx context.Context) (usage, error) {
	var u usage
	var err error
	if u.server, err = b.hubPlane.APIServerUsage(); err != nil {
		return u, err
	}
	if u.controller, err = planes.ProcessUsage(b.hubCmd.Process.Pid); err != nil {
		return u, err
	}
	if u.requests, err = apiRequests(ctx, b.hubPlane.Config); err != nil {
		return u, err
	}
	u.gc = gcSeconds()
	return u, nil
}

// measure creates the claims at rate (from a process of the bench's own,
// which watches them), with a timeline of the hub alongside, and records
// what the run cost.
func (b *scaleBench) measure(ctx context.Context, res *scaleResult, rate float64) (observation, *timeline, error) {
	undo, err := b.prepare(ctx, res)
	if err != nil {
		return observation{}, nil, err
	}
	defer undo()
	before, err := b.usage(ctx)
	if err != nil {
		return observation{}, nil, err
	}
	res.setupRSS = before.server.RSS
	window := time.Now()
	others := planeUsage(b.f, b.names[1:]...)
	fmt.Printf("  %d claims at %.0f/s\n", res.claims, rate)
	if *scaleAgentCores > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(*scaleAgentCores))
	}
	tl := &timeline{window: 10 * time.Second}
	tlCtx, tlStop := context.WithCancel(ctx)
	defer tlStop()
	tlDone := make(chan struct{})
	go func() {
		defer close(tlDone)
		tl.run(tlCtx, b.sample)
	}()
	// The claims, at a steady rate, unpinned: the hub scheduler places them.
	start := time.Now()
	b.profile(tlCtx, b.clusters)
	// The observer starts as this process is: only then is the fleet
	// reniced.
	started := func() error { return nil }
	if *scaleFleetNice != 0 {
		started = func() error { return b.reniceFleet(*scaleFleetNice) }
		defer func() {
			if err := planes.ReniceProcess(os.Getpid(), 0); err != nil {
				fmt.Printf("  this process stays at nice %d: %v\n", *scaleFleetNice, err)
			}
		}()
	}
	obs, err := observe(ctx, observeRequest{Kubeconfig: b.hubPlane.Kubeconfig, Namespace: scaleNS, Claims: res.claims, Rate: rate}, started)
	if err != nil {
		b.gaveUp(ctx, before, others, time.Since(start))
		return obs, nil, b.hubFailed(err)
	}
	res.observerWaited = obs.Waited
	if len(obs.Relists) > 0 {
		fmt.Printf("  the observer's watches listed every claim again at %s\n", strings.Join(obs.Relists, ", "))
	}
	if len(obs.Resumes) > 0 {
		fmt.Printf("  the observer's watches ended and watched again at %s\n", strings.Join(obs.Resumes, ", "))
	}
	for _, t := range obs.Ready {
		res.elapsed = max(res.elapsed, t.Sub(obs.Start))
	}
	tlStop()
	<-tlDone
	after, err := b.usage(ctx)
	if err != nil {
		return obs, nil, err
	}
	res.window = time.Since(window)
	if res.objects, res.objectBytes, err = storedObjects(ctx, b.hubPlane.Config); err != nil {
		return obs, nil, err
	}
	res.hubServer, res.hubController = after.server.Sub(before.server), after.controller.Sub(before.controller)
	for name, cpu := range others() {
		if name == "" {
			res.agents = cpu
		} else {
			res.infraServers += cpu
		}
	}
	res.agentsGC = time.Duration((after.gc - before.gc) * float64(time.Second))
	res.countRequests(before.requests, after.requests)
	return obs, tl, nil
}

// gaveUp prints where the CPU went over the claims of a run the observer
// gave up on: the cores each part used on average.
func (b *scaleBench) gaveUp(ctx context.Context, before usage, others func() map[string]time.Duration, d time.Duration) {
	after, err := b.usage(ctx)
	if err != nil {
		return
	}
	cores := func(cpu time.Duration) float64 { return cpu.Seconds() / d.Seconds() }
	var agents, infra time.Duration
	for name, cpu := range others() {
		if name == "" {
			agents = cpu
		} else {
			infra += cpu
		}
	}
	fmt.Printf("  gave up after %s; cores used on average: hub API server %.2f, hub controller %.2f, agents %.2f, infrastructure API servers %.2f\n",
		d.Round(time.Second), cores(after.server.Sub(before.server).CPU), cores(after.controller.Sub(before.controller).CPU), cores(agents), cores(infra))
}

// sample is one point of the timeline: the hub API server's CPU and
// requests, and this process's (the agents').
func (b *scaleBench) sample(ctx context.Context) (sample, error) {
	u, err := b.hubPlane.APIServerUsage()
	if err != nil {
		return sample{}, err
	}
	req, err := apiRequests(ctx, b.hubPlane.Config)
	if err != nil {
		return sample{}, err
	}
	own, err := planes.ProcessUsage(os.Getpid())
	if err != nil {
		return sample{}, err
	}
	controller, err := planes.ProcessUsage(b.hubCmd.Process.Pid)
	if err != nil {
		return sample{}, err
	}
	etcd, err := b.hubPlane.EtcdUsage()
	if err != nil {
		return sample{}, err
	}
	var infra time.Duration
	for _, name := range b.names[1:] {
		server, err := b.f.Plane(name).APIServerUsage()
		if err != nil {
			return sample{}, err
		}
		infra += server.CPU
	}
	machine, err := planes.MachineCPU()
	return sample{etcd: etcd.CPU, infra: infra, at: time.Now(), cpu: u.CPU, watches: req[keyWatches], terminated: req[keyTerminated], slowCreates: req[keySlowCreates],
		slowEtcd: req[keySlowEtcd], tenantBytes: req[keyTenantBytes], lists: req["LIST"], serverGC: req[keyGC], agents: own.CPU, controller: controller.CPU,
		machine: machine, runtime: readRuntime()}, err
}

// countRequests records the hub API server's requests over the claims, by
// verb, and the counts kept beside them.
func (res *scaleResult) countRequests(before, after map[string]float64) {
	res.requests = map[string]float64{}
	for verb, n := range after {
		if d := n - before[verb]; d > 0 {
			res.requests[verb] = d
		}
	}
	res.watches, res.terminated = res.requests[keyWatches], res.requests[keyTerminated]
	res.slowCreates, res.slowEtcd = res.requests[keySlowCreates], res.requests[keySlowEtcd]
	res.tenantBytes = res.requests[keyTenantBytes]
	res.claimCache = [2]float64{before[keyClaimCache], after[keyClaimCache]}
	res.serverGC = time.Duration(res.requests[keyGC] * float64(time.Second))
	for _, k := range []string{keyWatches, keyTerminated, keySlowCreates, keySlowEtcd, keyTenantBytes, keyGC, keyClaimCache} {
		delete(res.requests, k)
	}
	res.terminatedBy, res.byResource = map[string]float64{}, map[string]float64{}
	for k, n := range res.requests {
		if resource, ok := strings.CutPrefix(k, keyTerminated+"/"); ok {
			res.terminatedBy[resource] = n
			delete(res.requests, k)
		}
		if what, ok := strings.CutPrefix(k, keyByResource+"/"); ok {
			res.byResource[what] = n
			delete(res.requests, k)
		}
	}
}

// latencies are created → placed and created → Ready, with the late
// claims (placed after more than 1 s) explained: by minute of creation,
// created → seen by the bench's watch (the API server's write and event
// delivery) and seen → placed, and the timeline around them.
func (b *scaleBench) latencies(res *scaleResult, obs observation, tl *timeline) {
	var sched, rdy, delivered, placing []time.Duration
	slow := map[int]int{}
	late := make([]bool, len(obs.Created))
	for i, created := range obs.Created {
		sched = append(sched, obs.Placed[i].Sub(created))
		rdy = append(rdy, obs.Ready[i].Sub(created))
		if sched[i] > time.Second {
			late[i] = true
			res.late++
			slow[int(created.Sub(obs.Start).Minutes())]++
			delivered = append(delivered, obs.Seen[i].Sub(created))
			placing = append(placing, obs.Placed[i].Sub(obs.Seen[i]))
		}
	}
	printSlow(slow, delivered, placing)
	if len(slow) > 0 {
		tl.print(obs.Start, obs.Created, late)
	}
	slices.Sort(sched)
	slices.Sort(rdy)
	res.scheduling = [2]time.Duration{quantile(sched, 0.5), quantile(sched, 0.99)}
	res.ready = [2]time.Duration{quantile(rdy, 0.5), quantile(rdy, 0.99)}
}

// waitFor polls cond every 500 ms until it holds, fails, or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	switch {
	case wait.Interrupted(err) && ctx.Err() == nil:
		return fmt.Errorf("%s not there after %s", what, timeout)
	case err != nil:
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// printSlow prints how many claims took over 1 s to be placed, by minute
// of their creation: a tail spread over the run is load, one in a few
// minutes is an event there. Their latency is split where the bench's watch
// first saw them: before, the hub API server created the claim and
// delivered its event late (to every watcher); after, the scheduler placed
// it late.
func printSlow(byMinute map[int]int, delivered, placing []time.Duration) {
	if len(byMinute) == 0 {
		return
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(byMinute)) {
		parts = append(parts, fmt.Sprintf("min %d: %d", m, byMinute[m]))
	}
	fmt.Printf("  placed after more than 1 s, by minute of creation: %s\n", strings.Join(parts, ", "))
	slices.Sort(delivered)
	slices.Sort(placing)
	fmt.Printf("    of their latency, created → seen by a watch p50 / max %s / %s, seen → placed p50 / max %s / %s\n",
		quantile(delivered, 0.5).Round(time.Millisecond), delivered[len(delivered)-1].Round(time.Millisecond),
		quantile(placing, 0.5).Round(time.Millisecond), placing[len(placing)-1].Round(time.Millisecond))
}

// profile writes, 30 s into the claims, 60 s of the hub API server's and
// the hub controller's CPU profiles to $BENCH_APISERVER_PROFILES (the
// controller's when -scale-hub-pprof serves them): hub-<clusters>.prof,
// controller-<clusters>.prof.
func (b *scaleBench) profile(ctx context.Context, clusters int) {
	dir := os.Getenv("BENCH_APISERVER_PROFILES")
	if dir == "" {
		return
	}
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(30 * time.Second):
		}
		go profileAPIServer(ctx, b.hubPlane, filepath.Join(dir, fmt.Sprintf("hub-%d.prof", clusters)), 60)
		if *hubPprof == "0" {
			return
		}
		resp, err := http.Get("http://" + *hubPprof + "/debug/pprof/profile?seconds=60")
		if err == nil {
			defer resp.Body.Close()
			var f *os.File
			if f, err = os.Create(filepath.Join(dir, fmt.Sprintf("controller-%d.prof", clusters))); err == nil {
				_, err = io.Copy(f, resp.Body)
				err = errors.Join(err, f.Close())
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
		}
	}()
}
