package main

import (
	"context"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/scheduler"
	"github.com/hostfleet/hostfleet/internal/setup"
)

const benchTenant, benchNS = "bench", "tenant-bench"

// schedResult is one scheduling run.
type schedResult struct {
	baseRate, rate float64
	list, elapsed  time.Duration
	p50, p99       time.Duration
	reads, writes  int64
	// writesBy is the writes by method and resource, per decision.
	writesBy string
	over     int
}

// runScheduling runs the scheduling benchmark, and with hw runs it again
// with hardware profiles on the clusters and a requirement on every claim,
// beside the first run.
func runScheduling(n, clusters int, hw bool) error {
	plain, err := scheduleOnce(n, clusters, false)
	if err != nil {
		return err
	}
	fmt.Printf("\nscheduling, %d claims over %d clusters, 1 worker\n", n, clusters)
	fmt.Printf("  baseline: the hub API server accepts the writes of %.0f decisions/s (the label patch, 1 writer)\n", plain.baseRate)
	fmt.Printf("  baseline: one LIST of all %d claims takes %s: a list-per-decision scheduler could make at most %.0f decisions/s\n",
		n, plain.list.Round(100*time.Microsecond), 1/plain.list.Seconds())
	fmt.Printf("  scheduler: %.0f decisions/s (%s for %d, cache sync included); decision p50 %s, p99 %s\n",
		plain.rate, plain.elapsed.Round(10*time.Millisecond), n, plain.p50, plain.p99)
	fmt.Printf("  ratio:    %.2f decisions per baseline decision write\n", plain.rate/plain.baseRate)
	fmt.Printf("  reads:    %.3f API reads per decision (%d GET/LIST in all, watches excluded; the rest come from the cache and its indexes)\n",
		float64(plain.reads)/float64(n), plain.reads)
	fmt.Printf("  writes:   %.2f API writes per decision: %s\n", float64(plain.writes)/float64(n), plain.writesBy)
	fmt.Printf("  correct:  %d claims placed beyond a cluster's free hosts (capacity is exactly %d)\n", plain.over, n)
	if !hw {
		return nil
	}
	hwr, err := scheduleOnce(n, clusters, true)
	if err != nil {
		return err
	}
	fmt.Printf("\nscheduling by hardware, %d claims over %d clusters of %d profiles, a requirement on every claim\n", n, clusters, len(benchKinds()))
	fmt.Printf("  scheduler: %.0f decisions/s (%s); decision p50 %s, p99 %s\n", hwr.rate, hwr.elapsed.Round(10*time.Millisecond), hwr.p50, hwr.p99)
	fmt.Printf("  ratio:    %.2f of the run without requirements (baselines of the two runs: %.0f and %.0f writes/s)\n", hwr.rate/plain.rate, plain.baseRate, hwr.baseRate)
	fmt.Printf("  correct:  %d claims placed beyond a cluster's free hosts, every claim on hardware that meets it\n", hwr.over)
	return nil
}

// scheduleOnce places n pending claims over clusters on fresh planes.
func scheduleOnce(n, clusters int, hw bool) (schedResult, error) {
	var res schedResult
	ctx := context.Background()
	f, stop, err := startPlanes(ctx, "hub")
	if err != nil {
		return res, err
	}
	defer stop()
	hub := f.Plane("hub").Client

	fmt.Printf("\nsetting up %d clusters with inventories and %d pending claims (hardware: %v)\n", clusters, n, hw)
	capacity, bh, err := schedulingFleet(ctx, hub, n, clusters, hw)
	if err != nil {
		return res, err
	}
	base, _ := counted(f.Plane("hub").Config)
	baseClient, err := client.New(base, client.Options{Scheme: f.Scheme})
	if err != nil {
		return res, err
	}
	if res.baseRate, res.list, err = schedulingBaselines(ctx, hub, baseClient, n, bh); err != nil {
		return res, err
	}

	cfg, counter := counted(f.Plane("hub").Config)
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: f.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		return res, err
	}
	if err := (&scheduler.Reconciler{Client: mgr.GetClient(), Deadline: time.Hour}).SetupWithManager(ctx, mgr, setup.Options{}); err != nil {
		return res, err
	}
	times, err := placedTimes(ctx, f.Plane("hub").Config, f.Scheme, n)
	if err != nil {
		return res, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- mgr.Start(runCtx) }()
	if err := allPlaced(ctx, hub, n, capacity, bh, done); err != nil {
		return res, err
	}
	res.elapsed = time.Since(start)
	res.reads, res.writes, res.writesBy = counter.reads.Load(), counter.writes.Load(), counter.breakdown(n)
	cancel()
	<-done
	res.rate = float64(n) / res.elapsed.Seconds()
	ds := gaps(start, <-times)
	res.p50, res.p99 = quantile(ds, 0.5), quantile(ds, 0.99)
	for _, left := range capacity {
		if left < 0 {
			res.over -= left
		}
	}
	return res, nil
}

// schedulingFleet creates the clusters' inventories, the tenant and its
// namespace, with room for every claim and no more, unevenly: the
// scheduler has to count, and a cluster given more claims than free hosts
// is an over-placement. capacity is each cluster's free hosts.
func schedulingFleet(ctx context.Context, hub client.Client, n, clusters int, hw bool) (map[string]int, *benchHardware, error) {
	names := make([]string, clusters)
	capacity := make(map[string]int, clusters)
	var bh *benchHardware
	if hw {
		bh = &benchHardware{kinds: benchKinds(), clusterKind: map[string]int{}}
	}
	freeByKind := map[int]int{}
	for i := range names {
		names[i] = fmt.Sprintf("c%02d", i)
		free := int32(n/clusters + (i%2)*2 - 1)
		if i == clusters-1 && clusters%2 == 1 {
			free = int32(n / clusters)
		}
		if i == 0 {
			free += int32(n % clusters)
		}
		capacity[names[i]] = int(free)
		inv := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: names[i], Name: names[i]},
			Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: names[i]}}
		for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}, inv} {
			if err := hub.Create(ctx, o); err != nil {
				return nil, nil, err
			}
		}
		orig := inv.DeepCopy()
		inv.Status = hostfleetv1alpha1.HostInventoryStatus{Total: free, Available: free, Pools: []hostfleetv1alpha1.HostPool{
			{Labels: map[string]string{"bench.io/kind": "small"}, Namespaces: []string{benchNS}, Total: free, Available: free}}}
		if bh != nil {
			k := (i / 2) % len(bh.kinds)
			bh.clusterKind[names[i]] = k
			freeByKind[k] += int(free)
			name := hardware.Profile(&bh.kinds[k].view)
			inv.Status.Pools[0].Profile = name
			inv.Status.Profiles = []hostfleetv1alpha1.HardwareProfile{{Name: name, Hardware: bh.kinds[k].view}}
		}
		if err := hub.Status().Patch(ctx, inv, client.MergeFrom(orig)); err != nil {
			return nil, nil, err
		}
	}
	if bh != nil {
		bh.claimKind = claimKinds(n, freeByKind)
	}
	t := &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: benchTenant}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "bench"}}
	for _, o := range []client.Object{t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS, Labels: map[string]string{hostfleetv1alpha1.LabelTenant: benchTenant}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "baseline"}},
	} {
		if err := hub.Create(ctx, o); err != nil {
			return nil, nil, err
		}
	}
	// What the tenant controller would report.
	orig := t.DeepCopy()
	t.Status.Clusters = names
	return capacity, bh, hub.Status().Patch(ctx, t, client.MergeFrom(orig))
}

func benchClaim(ns string, i int) *metal3api.HostClaim {
	return &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%04d", i)}}
}

// schedulingBaselines measures, on the same API server, the write of one
// decision (the label; the agent writes the Scheduled condition) from one
// writer (the scheduler has one worker), and one LIST of every claim. It
// leaves the n claims to schedule in the tenant's namespace.
func schedulingBaselines(ctx context.Context, hub, base client.Client, n int, bh *benchHardware) (rate float64, list time.Duration, _ error) {
	if err := parallel(n, 4, func(i int) error { return hub.Create(ctx, benchClaim("baseline", i)) }); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := base.Patch(ctx, benchClaim("baseline", i), client.RawPatch("application/merge-patch+json",
			[]byte(`{"metadata":{"labels":{"hostfleet.io/cluster":"c00"}}}`))); err != nil {
			return 0, 0, err
		}
	}
	rate = float64(n) / time.Since(start).Seconds()
	if err := hub.DeleteAllOf(ctx, &metal3api.HostClaim{}, client.InNamespace("baseline")); err != nil {
		return 0, 0, err
	}
	if err := parallel(n, 4, func(i int) error { return hub.Create(ctx, bh.claim(i)) }); err != nil {
		return 0, 0, err
	}
	const lists = 20
	start = time.Now()
	for i := 0; i < lists; i++ {
		var all metal3api.HostClaimList
		if err := base.List(ctx, &all); err != nil {
			return 0, 0, err
		}
	}
	return rate, time.Since(start) / lists, nil
}

// allPlaced waits until the n claims are placed, and takes them off their
// clusters' capacity.
func allPlaced(ctx context.Context, hub client.Client, n int, capacity map[string]int, bh *benchHardware, done <-chan error) error {
	start := time.Now()
	for {
		var list metal3api.HostClaimList
		if err := hub.List(ctx, &list, client.InNamespace(benchNS), client.HasLabels{hostfleetv1alpha1.LabelCluster}); err != nil {
			return err
		}
		if placed := len(list.Items); placed == n {
			for _, c := range list.Items {
				capacity[c.Labels[hostfleetv1alpha1.LabelCluster]]--
			}
			return bh.check(list.Items)
		}
		select {
		case err := <-done:
			return fmt.Errorf("scheduler stopped: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Since(start) > 10*time.Minute {
			return fmt.Errorf("only %d of %d claims placed after 10 minutes", len(list.Items), n)
		}
	}
}
