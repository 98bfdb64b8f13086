package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// bindingRun is what the binding benchmark measured.
type bindingRun struct {
	n, workers int
	// The baseline: BMH patches/s and the CPU they took.
	baseRate float64
	baseUsed map[string]time.Duration
	// The agent: its time, when the first and last claims were bound, its
	// writes and reads, and the CPU used.
	start, first, last   time.Time
	elapsed              time.Duration
	hubCount, infraCount *writeCounter
	used                 map[string]time.Duration
	up                   upstreamResult
	floor                floorResult
}

func runBinding(n, workers int, upstream string) error {
	ctx := context.Background()
	f, stop, err := startPlanes(ctx, "hub", "infra-1")
	if err != nil {
		return err
	}
	defer stop()
	run := &bindingRun{n: n, workers: workers}
	fmt.Printf("setting up %d hosts and %d claims\n", n, n)
	if err := bindingFleet(ctx, f, n, workers); err != nil {
		return err
	}
	if err := run.baseline(ctx, f); err != nil {
		return err
	}
	if err := createClaims(ctx, f.Plane("hub").Client, "tenant-a", n, workers, map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}); err != nil {
		return err
	}
	if err := run.agent(ctx, f); err != nil {
		return err
	}
	fmt.Printf("binding %d claims with upstream's association\n", n)
	if run.up, err = runUpstream(ctx, f, upstream, n, workers); err != nil {
		return err
	}
	fmt.Printf("making the three writes of %d bound claims with nothing else\n", n)
	if run.floor, err = floor(ctx, f, client.ObjectKey{Namespace: "tenant-a", Name: "c0000"}, n, workers); err != nil {
		return err
	}
	run.print()
	return nil
}

// bindingFleet makes n available hosts on infra-1, a tenant's namespace
// and infra-1's ClusterTenancy, as the hub's controllers make them: the
// agent caches both.
func bindingFleet(ctx context.Context, f *planes.Fleet, n, workers int) error {
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "all"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{Names: []string{"tenant-a"}}}},
	} {
		if err := infra.Create(ctx, o); err != nil {
			return err
		}
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		planes.Tenancy("infra-1", hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{"tenant-a"}}),
	} {
		if err := hub.Create(ctx, o); err != nil {
			return err
		}
	}
	return createHosts(ctx, infra, "hosts", n, workers)
}

// baseline measures the BMH patches the infrastructure API server accepts,
// from the same number of writers.
func (run *bindingRun) baseline(ctx context.Context, f *planes.Fleet) error {
	base, _ := counted(f.Plane("infra-1").Config)
	baseClient, err := client.New(base, client.Options{Scheme: f.Scheme})
	if err != nil {
		return err
	}
	usage := planeUsage(f, "infra-1")
	start := time.Now()
	if err := parallel(run.n, run.workers, func(i int) error {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%04d", i)}}
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"bench":"baseline"}}}`))
		return baseClient.Patch(ctx, h, patch)
	}); err != nil {
		return err
	}
	run.baseRate = float64(run.n) / time.Since(start).Seconds()
	run.baseUsed = usage()
	return nil
}

// agent runs the agent in this process until every claim is bound, and
// records its time, writes, reads and CPU.
func (run *bindingRun) agent(ctx context.Context, f *planes.Fleet) error {
	hubCfg, hubCount := counted(f.Plane("hub").Config)
	managedCfg, infraCount := counted(f.Plane("infra-1").Config)
	run.hubCount, run.infraCount = hubCount, infraCount
	o := app.NewOptions()
	o.ClusterName = "infra-1"
	o.Concurrency = run.workers
	o.LeaderElect = false
	o.RetryAfter = 5 * time.Second
	a, err := app.New(ctx, hubCfg, managedCfg, o)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	usage := planeUsage(f, "hub", "infra-1")
	if dir := os.Getenv("BENCH_APISERVER_PROFILES"); dir != "" {
		for _, name := range []string{"hub", "infra-1"} {
			go profileAPIServer(ctx, f.Plane(name), filepath.Join(dir, name+".prof"), 10)
		}
		go profileSelf(filepath.Join(dir, "agent.prof"))
	}
	watchBound, err := newClaimWatch(f.Plane("hub").Config, f.Scheme, "tenant-a", ready)
	if err != nil {
		return err
	}
	run.start = time.Now()
	go func() { done <- a.Manager.Start(runCtx) }()
	if err := watchBound.wait(ctx, run.n, 10*time.Minute, done); err != nil {
		return fmt.Errorf("binding: %w", err)
	}
	run.elapsed = time.Since(run.start)
	run.first, run.last = watchBound.span()
	run.used = usage()
	cancel()
	<-done
	return nil
}

func (run *bindingRun) print() {
	n, baseRate := run.n, run.baseRate
	per := func(d time.Duration) time.Duration { return d / time.Duration(n) }
	perf := func(v int64) float64 { return float64(v) / float64(n) }
	rate := float64(n) / run.elapsed.Seconds()
	upRate := float64(n) / run.up.elapsed.Seconds()
	floorRate := float64(n) / run.floor.elapsed.Seconds()
	hw, mw := run.hubCount.writes.Load(), run.infraCount.writes.Load()
	hr, mr := run.hubCount.reads.Load(), run.infraCount.reads.Load()

	fmt.Printf("\nbinding, %d claims on %d hosts, %d workers\n", n, n, run.workers)
	fmt.Printf("  baseline: the infrastructure API server accepts %.0f BareMetalHost patches/s from %d writers (CPU per patch: API server %s, writers %s)\n",
		baseRate, run.workers, per(run.baseUsed["infra-1"]), per(run.baseUsed[""]))
	fmt.Printf("  Hostfleet: %.0f claims bound/s (%s for %d); ratio %.2f bound claims per baseline patch\n",
		rate, run.elapsed.Round(10*time.Millisecond), n, rate/baseRate)
	if n > 1 && run.last.After(run.first) {
		steady := float64(n-1) / run.last.Sub(run.first).Seconds()
		fmt.Printf("             the first bound %s after the agent started (its caches listed the claims and hosts first), then %.0f/s to the last (%.2f)\n",
			run.first.Sub(run.start).Round(10*time.Millisecond), steady, steady/baseRate)
	}
	up := run.up
	fmt.Printf("  upstream:  %.0f claims associated/s (%s for %d); ratio %.2f; %.1f API writes per claim; CPU per claim: API server %s, controller %s\n",
		upRate, up.elapsed.Round(10*time.Millisecond), n, upRate/baseRate, perf(int64(up.writes)), per(up.server), per(up.controller))
	fmt.Printf("             (baremetal-operator %s pkg/hostclaim in one cluster: claims and hosts on the infrastructure plane, no finalizer, no labels)\n", upstreamVersion)
	fl := run.floor
	fmt.Printf("  floor:    %.0f claims/s (%s for %d); ratio %.2f: the agent's three writes, copied from a claim it bound, from %d writers with nothing else (no reads, no cache, no decisions); CPU per claim: hub API server %s, infrastructure API server %s, writers %s\n",
		floorRate, fl.elapsed.Round(10*time.Millisecond), n, floorRate/baseRate, run.workers, per(fl.used["hub"]), per(fl.used["infra-1"]), per(fl.used[""]))
	fmt.Printf("            Hostfleet binds at %.2f of the floor\n", rate/floorRate)
	fmt.Printf("  writes:   %.1f API writes per bound claim (hub %.1f, infrastructure %.1f)\n", perf(hw+mw), perf(hw), perf(mw))
	fmt.Printf("            hub: %s\n            infrastructure: %s\n", run.hubCount.breakdown(n), run.infraCount.breakdown(n))
	fmt.Printf("  reads:    %.1f per bound claim (hub %.1f, infrastructure %.1f)\n", perf(hr+mr), perf(hr), perf(mr))
	fmt.Printf("            hub: %s\n", run.hubCount.readBreakdown(n))
	fmt.Printf("  CPU:      per bound claim, hub API server %s, infrastructure API server %s, agent %s\n",
		per(run.used["hub"]), per(run.used["infra-1"]), per(run.used[""]))
}
