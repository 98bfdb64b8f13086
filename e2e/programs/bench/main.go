// Command bench measures the agent against real control planes and prints
// each result beside a baseline measured in the same run, on the same API
// servers, so that the ratio means something on any machine.
//
// binding: N claims on the hub plane bound to N available hosts on an
// infrastructure plane by one agent (in this process, 4 workers): claims bound
// per second and API writes per bound claim, beside the rate at which the same
// infrastructure API server accepts BareMetalHost patches from 4 workers.
//
// bmc: one agent (its BMC driver, in a child process so that its CPU and
// memory are its own) drives B emulated Redfish BMCs from registering to
// provisioned (inspection, live-ISO boot by virtual media), beside the time
// of the same BMC calls made one after another by a plain loop. With
// -bmc-slow the BMCs are as slow as hardware (each draws a power change of
// 2–10 s, a virtual media insert of 1–3 s, an inventory of 1–5 s) and the
// loop, like the driver, waits for the BMC to report the host on.
//
// scheduling: N pending claims of one tenant placed by the hub scheduler over
// C clusters (each with a HostInventory): placement decisions per second and
// API reads per decision, beside the rate at which the same hub API server
// accepts the write one decision needs (the label patch: the agent writes
// the Scheduled condition), and the time one LIST of all claims takes (what
// a scheduler that lists every claim for every decision would pay per
// decision).
//
// labels: label sync's two hops, one change at a time: a host label
// changed on the infrastructure plane, seen on the hub claim (the
// infrastructure agent's hop, the baseline) and on the Node of a workload
// plane (the workload agent's hop after it): median and p99 of each.
//
// usage: go run ./e2e/programs/bench [-n 1000] [-clusters 50] [-bmcs 200] [-bmc-slow] [-bmc-baseline-sample 20] [-label-changes 100] [-only binding|scheduling|bmc|labels]   (make bench)
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"maps"
	"net/http"
	_ "net/http/pprof"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func main() {
	n := flag.Int("n", 1000, "claims and hosts")
	workers := flag.Int("workers", 4, "agent workers, and baseline writers")
	clusters := flag.Int("clusters", 50, "clusters the scheduler chooses from")
	only := flag.String("only", "", "run one benchmark: binding, scheduling, bmc or labels; or scale, which only runs when asked (make bench-scale)")
	labelHosts := flag.Int("label-hosts", 20, "hosts, claims and Nodes of the label sync benchmark")
	labelChanges := flag.Int("label-changes", 100, "host label changes the label sync benchmark times")
	bmcs := flag.Int("bmcs", 200, "emulated Redfish BMCs the agent drives")
	bmcWorkers := flag.Int("bmc-workers", app.NewOptions().BMCWorkers, "the agent's --bmc-workers (default: the agent's default)")
	bmcSlow := flag.Bool("bmc-slow", false, "BMCs as slow as hardware: power change 2–10 s, media insert 1–3 s, inventory 1–5 s")
	bmcSample := flag.Int("bmc-baseline-sample", 0, "run the sequential baseline over this many BMCs and add the others' latencies (0: all; 500 slow BMCs one after another take about 100 minutes)")
	agentKubeconfig := flag.String("bmc-agent", "", "internal: run only the BMC driver against this kubeconfig")
	upstreamBin := flag.String("upstream", "", "upstream's association program (default: upstreambind beside this program; make bench builds it)")
	scaleClusters := flag.String("scale-clusters", "100,1000", "scale: the numbers of clusters to run, side by side")
	scaleHosts := flag.Int("scale-hosts", 10, "scale: hosts per cluster (and claims per cluster)")
	scaleInfra := flag.Int("scale-infra-planes", 2, "scale: infrastructure planes the clusters' hosts share")
	scaleRate := flag.Float64("scale-rate", 15, "scale: claims created per second (at 1 000 clusters, 2 cores keep up with 15)")
	hubBin := flag.String("hub", "", "scale: the hub controller binary (default: hostfleet-hub beside this program; make bench-scale builds it)")
	cpuProfile := flag.String("cpuprofile", "", "write this process's CPU profile (the agent, in binding) to this file")
	pprofAddr := flag.String("pprof", "", "serve this process's net/http/pprof on this address (e.g. localhost:6060): profiles taken mid-run")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	if *observeSpec != "" {
		if err := runObserver(*observeSpec); err != nil {
			fmt.Fprintln(os.Stderr, "bench: observer:", err)
			os.Exit(1)
		}
		return
	}
	if *pprofAddr != "" {
		go func() {
			srv := &http.Server{Addr: *pprofAddr, ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintln(os.Stderr, "bench: pprof:", srv.ListenAndServe())
		}()
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *agentKubeconfig != "" {
		if err := runBMCAgent(*agentKubeconfig, *bmcWorkers, *bmcs); err != nil {
			fmt.Fprintln(os.Stderr, "bench agent:", err)
			os.Exit(1)
		}
		return
	}
	var err error
	if *only == "" || *only == "binding" {
		err = run(*n, *workers, beside(*upstreamBin, "upstreambind"))
	}
	if err == nil && (*only == "" || *only == "scheduling") {
		err = runScheduling(*n, *clusters)
	}
	if err == nil && (*only == "" || *only == "bmc") {
		err = runBMC(*bmcs, *bmcWorkers, *bmcSlow, *bmcSample)
	}
	if err == nil && (*only == "" || *only == "labels") {
		err = runLabels(*labelHosts, *labelChanges)
	}
	if err == nil && *only == "scale" {
		var counts []int
		if counts, err = parseCounts(*scaleClusters); err == nil {
			err = runScale(counts, *scaleHosts, *scaleInfra, *scaleRate, beside(*hubBin, "hostfleet-hub"))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// keepLogs keeps the planes' logs: their directory is not removed.
var keepLogs = flag.Bool("keep-logs", false, "keep the planes' API server and etcd logs (the API server logs the steps of requests slower than 500 ms) in the directory printed at the end")

// startPlanes starts the named planes in a temporary directory; stop stops
// them and removes it, unless -keep-logs.
func startPlanes(ctx context.Context, names ...string) (f *planes.Fleet, stop func(), err error) {
	dir, err := os.MkdirTemp("", "hostfleet-bench-")
	if err != nil {
		return nil, nil, err
	}
	f, err = planes.Start(ctx, planes.Options{Dir: dir, Logs: *keepLogs}, names...)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	return f, func() {
		_ = f.Stop()
		if *keepLogs {
			fmt.Fprintln(os.Stderr, "bench: planes' logs kept in", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}, nil
}

// writeCounter counts the requests that change something, and the reads
// (GET and LIST, not WATCH); and the writes by method and resource.
type writeCounter struct {
	next   http.RoundTripper
	writes atomic.Int64
	reads  atomic.Int64
	mu     sync.Mutex
	kinds  map[string]int64
	// readKinds counts the reads by resource.
	readKinds map[string]int64
}

func (w *writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		w.writes.Add(1)
		w.mu.Lock()
		if w.kinds == nil {
			w.kinds = map[string]int64{}
		}
		w.kinds[r.Method+" "+resourceOf(r.URL.Path)]++
		w.mu.Unlock()
	case http.MethodGet:
		if r.URL.Query().Get("watch") != "true" {
			w.reads.Add(1)
			w.mu.Lock()
			if w.readKinds == nil {
				w.readKinds = map[string]int64{}
			}
			w.readKinds[resourceOf(r.URL.Path)]++
			w.mu.Unlock()
		}
	}
	return w.next.RoundTrip(r)
}

// resourceOf is the resource (and subresource) a request path names:
// /apis/metal3.io/v1alpha1/namespaces/ns/hostclaims/c/status is
// "hostclaims/status".
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) > 2 && parts[0] == "api":
		parts = parts[2:] // api/v1
	case len(parts) > 3 && parts[0] == "apis":
		parts = parts[3:] // apis/<group>/<version>
	default:
		return path // discovery
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	switch {
	case len(parts) >= 3:
		return parts[0] + "/" + parts[2]
	case len(parts) >= 1:
		return parts[0]
	}
	return path
}

// breakdown is the writes by method and resource, per n, most first.
func (w *writeCounter) breakdown(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return perN(w.kinds, n)
}

// readBreakdown is the reads by resource, per n, most first.
func (w *writeCounter) readBreakdown(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return perN(w.readKinds, n)
}

func perN(counts map[string]int64, n int) string {
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int { return cmp.Compare(counts[b], counts[a]) })
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %.1f", k, float64(counts[k])/float64(n)))
	}
	return strings.Join(out, ", ")
}

func counted(cfg *rest.Config) (*rest.Config, *writeCounter) {
	c := rest.CopyConfig(cfg)
	wc := &writeCounter{}
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { wc.next = rt; return wc }
	c.QPS, c.Burst = 1000, 2000 // measure the servers and the agent, not client throttling
	return c, wc
}

func run(n, workers int, upstream string) error {
	ctx := context.Background()
	f, stop, err := startPlanes(ctx, "hub", "infra-1")
	if err != nil {
		return err
	}
	defer stop()
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client

	fmt.Printf("setting up %d hosts and %d claims\n", n, n)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "all"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{Names: []string{"tenant-a"}}}},
	} {
		if err := infra.Create(ctx, o); err != nil {
			return err
		}
	}
	// A tenant's namespace and infra-1's ClusterTenancy, as the hub's
	// controllers make them: the agent caches both.
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		planes.Tenancy("infra-1", hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{"tenant-a"}}),
	} {
		if err := hub.Create(ctx, o); err != nil {
			return err
		}
	}
	if err := createHosts(ctx, infra, "hosts", n, workers); err != nil {
		return err
	}

	// Baseline: BMH patches the infrastructure API server accepts, from the
	// same number of writers.
	base, _ := counted(f.Plane("infra-1").Config)
	baseClient, err := client.New(base, client.Options{Scheme: f.Scheme})
	if err != nil {
		return err
	}
	baseUsage := planeUsage(f, "infra-1")
	start := time.Now()
	if err := parallel(n, workers, func(i int) error {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%04d", i)}}
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"bench":"baseline"}}}`))
		return baseClient.Patch(ctx, h, patch)
	}); err != nil {
		return err
	}
	baseRate := float64(n) / time.Since(start).Seconds()
	baseUsed := baseUsage()

	if err := createClaims(ctx, hub, "tenant-a", n, workers, map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}); err != nil {
		return err
	}

	hubCfg, hubWrites := counted(f.Plane("hub").Config)
	managedCfg, managedWrites := counted(f.Plane("infra-1").Config)
	o := app.NewOptions()
	o.ClusterName = "infra-1"
	o.Concurrency = workers
	o.LeaderElect = false
	o.RetryAfter = 5 * time.Second
	a, err := app.New(hubCfg, managedCfg, o)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	usage := planeUsage(f, "hub", "infra-1")
	if dir := os.Getenv("BENCH_APISERVER_PROFILES"); dir != "" {
		for _, name := range []string{"hub", "infra-1"} {
			go profileAPIServer(ctx, f.Plane(name), filepath.Join(dir, name+".prof"))
		}
		go profileSelf(filepath.Join(dir, "agent.prof"))
	}
	watchBound, err := newClaimWatch(f.Plane("hub").Config, f.Scheme, "tenant-a", ready)
	if err != nil {
		return err
	}
	start = time.Now()
	go func() { done <- a.Manager.Start(runCtx) }()
	if err := watchBound.wait(ctx, n, 10*time.Minute, done); err != nil {
		return fmt.Errorf("binding: %w", err)
	}
	elapsed := time.Since(start)
	rate := float64(n) / elapsed.Seconds()
	first, last := watchBound.span()
	hw, mw := hubWrites.writes.Load(), managedWrites.writes.Load()
	used := usage()
	cancel()
	<-done

	fmt.Printf("binding %d claims with upstream's association\n", n)
	up, err := runUpstream(ctx, f, upstream, n, workers)
	if err != nil {
		return err
	}
	upRate := float64(n) / up.elapsed.Seconds()

	fmt.Printf("making the three writes of %d bound claims with nothing else\n", n)
	fl, err := floor(ctx, f, client.ObjectKey{Namespace: "tenant-a", Name: "c0000"}, n, workers)
	if err != nil {
		return err
	}
	floorRate := float64(n) / fl.elapsed.Seconds()

	fmt.Printf("\nbinding, %d claims on %d hosts, %d workers\n", n, n, workers)
	fmt.Printf("  baseline: the infrastructure API server accepts %.0f BareMetalHost patches/s from %d writers (CPU per patch: API server %s, writers %s)\n",
		baseRate, workers, baseUsed["infra-1"]/time.Duration(n), baseUsed[""]/time.Duration(n))
	fmt.Printf("  Hostfleet: %.0f claims bound/s (%s for %d); ratio %.2f bound claims per baseline patch\n",
		rate, elapsed.Round(10*time.Millisecond), n, rate/baseRate)
	if n > 1 && last.After(first) {
		steady := float64(n-1) / last.Sub(first).Seconds()
		fmt.Printf("             the first bound %s after the agent started (its caches listed the claims and hosts first), then %.0f/s to the last (%.2f)\n",
			first.Sub(start).Round(10*time.Millisecond), steady, steady/baseRate)
	}
	fmt.Printf("  upstream:  %.0f claims associated/s (%s for %d); ratio %.2f; %.1f API writes per claim; CPU per claim: API server %s, controller %s\n",
		upRate, up.elapsed.Round(10*time.Millisecond), n, upRate/baseRate, float64(up.writes)/float64(n),
		up.server/time.Duration(n), up.controller/time.Duration(n))
	fmt.Printf("             (baremetal-operator %s pkg/hostclaim in one cluster: claims and hosts on the infrastructure plane, no finalizer, no labels)\n", upstreamVersion)
	fmt.Printf("  floor:    %.0f claims/s (%s for %d); ratio %.2f: the agent's three writes, copied from a claim it bound, from %d writers with nothing else (no reads, no cache, no decisions); CPU per claim: hub API server %s, infrastructure API server %s, writers %s\n",
		floorRate, fl.elapsed.Round(10*time.Millisecond), n, floorRate/baseRate, workers,
		fl.used["hub"]/time.Duration(n), fl.used["infra-1"]/time.Duration(n), fl.used[""]/time.Duration(n))
	fmt.Printf("            Hostfleet binds at %.2f of the floor\n", rate/floorRate)
	fmt.Printf("  writes:   %.1f API writes per bound claim (hub %.1f, infrastructure %.1f)\n",
		float64(hw+mw)/float64(n), float64(hw)/float64(n), float64(mw)/float64(n))
	fmt.Printf("            hub: %s\n            infrastructure: %s\n", hubWrites.breakdown(n), managedWrites.breakdown(n))
	fmt.Printf("  reads:    %.1f per bound claim (hub %.1f, infrastructure %.1f)\n", float64(hubWrites.reads.Load()+managedWrites.reads.Load())/float64(n),
		float64(hubWrites.reads.Load())/float64(n), float64(managedWrites.reads.Load())/float64(n))
	fmt.Printf("            hub: %s\n", hubWrites.readBreakdown(n))
	fmt.Printf("  CPU:      per bound claim, hub API server %s, infrastructure API server %s, agent %s\n",
		used["hub"]/time.Duration(n), used["infra-1"]/time.Duration(n), used[""]/time.Duration(n))
	return nil
}

// planeUsage reads the CPU time of the named planes' API servers and of this
// process; the function it returns gives the CPU each used since, by plane
// name ("" for this process). A plane that cannot be read counts 0.
func planeUsage(f *planes.Fleet, names ...string) func() map[string]time.Duration {
	read := func() map[string]time.Duration {
		out := map[string]time.Duration{}
		for _, n := range names {
			if u, err := f.Plane(n).APIServerUsage(); err == nil {
				out[n] = u.CPU
			}
		}
		if u, err := planes.ProcessUsage(os.Getpid()); err == nil {
			out[""] = u.CPU
		}
		return out
	}
	before := read()
	return func() map[string]time.Duration {
		after := read()
		for k := range after {
			after[k] -= before[k]
		}
		return after
	}
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first error.
func parallel(n, workers int, fn func(int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// profileSelf writes 10 s of this process's CPU profile (the agent's, in
// binding) to path, beside the API servers'.
func profileSelf(path string) {
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err == nil {
			time.Sleep(10 * time.Second)
			pprof.StopCPUProfile()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
	}
}

// profileAPIServer writes 10 s of the plane's kube-apiserver CPU profile to
// path (BENCH_APISERVER_PROFILES=<dir>: where the servers' time goes).
func profileAPIServer(ctx context.Context, p *planes.Plane, path string) {
	rc, err := rest.RESTClientFor(p.Config)
	if err != nil {
		cfg := rest.CopyConfig(p.Config)
		cfg.GroupVersion = &corev1.SchemeGroupVersion
		cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
		if rc, err = rest.RESTClientFor(cfg); err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
			return
		}
	}
	data, err := rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", "10").DoRaw(ctx)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
	}
}
