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
// provisioned (inspection, live-ISO boot by virtual media): the machine's
// CPU per host beside a plain loop making the same BMC calls through
// bmclib host after host, and beside the agent's own BMC client in the same
// loop. Then S BMCs as slow as hardware (each draws a power change of
// 2–10 s, a virtual media insert of 1–3 s, an inventory of 1–5 s): the
// agent's time beside the slowest host's own chain of waits.
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
// usage: go run ./e2e/programs/bench [-n 1000] [-clusters 50] [-bmcs 200] [-bmcs-slow 500] [-label-changes 100] [-only binding|scheduling|bmc|labels|fanout|release]   (make bench)
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
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

func main() {
	n := flag.Int("n", 1000, "claims and hosts")
	workers := flag.Int("workers", 4, "agent workers, and baseline writers")
	clusters := flag.Int("clusters", 50, "clusters the scheduler chooses from")
	schedHW := flag.Bool("hardware", false, "scheduling: run again with a hardware profile per cluster (4 kinds) and a requirement on every claim, beside the run without")
	only := flag.String("only", "", "run one benchmark: binding, scheduling, bmc, labels, fanout or release; or scale or storm, which only run when asked (make bench-scale, make bench-storm)")
	labelHosts := flag.Int("label-hosts", 20, "hosts, claims and Nodes of the label sync benchmark")
	labelChanges := flag.Int("label-changes", 100, "host label changes the label sync benchmark times")
	bmcs := flag.Int("bmcs", 200, "emulated Redfish BMCs the agent drives")
	bmcWorkers := flag.Int("bmc-workers", app.NewOptions().BMCWorkers, "the agent's --bmc-workers (default: the agent's default)")
	bmcsSlow := flag.Int("bmcs-slow", 500, "emulated Redfish BMCs as slow as hardware (power change 2–10 s, media insert 1–3 s, inventory 1–5 s) the agent drives after the instant ones (0: none)")
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
	servePprof(*pprofAddr)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	// The profile is written out on every way out (os.Exit runs no
	// deferred call).
	defer pprof.StopCPUProfile()
	fail := func(what string, err error) {
		fmt.Fprintln(os.Stderr, what, err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	if *agentKubeconfig != "" {
		if err := runBMCAgent(*agentKubeconfig, *bmcWorkers, *bmcs); err != nil {
			fail("bench agent:", err)
		}
		return
	}
	var err error
	if *only == "" || *only == "binding" {
		err = runBinding(*n, *workers, beside(*upstreamBin, "upstreambind"))
	}
	if err == nil && (*only == "" || *only == "scheduling") {
		err = runScheduling(*n, *clusters, *schedHW)
	}
	if err == nil && (*only == "" || *only == "bmc") {
		err = runBMC(*bmcs, *bmcsSlow, *bmcWorkers)
	}
	if err == nil && (*only == "" || *only == "labels") {
		err = runLabels(*labelHosts, *labelChanges)
	}
	if err == nil && (*only == "" || *only == "fanout") {
		err = runFanout()
	}
	if err == nil && (*only == "" || *only == "release") {
		err = runRelease(*releaseHosts)
	}
	if err == nil && (*only == "scale" || *only == "storm") {
		err = runFleetBench(*only, *scaleClusters, *scaleHosts, *scaleInfra, *scaleRate, beside(*hubBin, "hostfleet-hub"))
	}
	if err != nil {
		fail("bench:", err)
	}
}

// servePprof serves this process's net/http/pprof on addr, if set.
func servePprof(addr string) {
	if addr == "" {
		return
	}
	go func() {
		srv := &http.Server{Addr: addr, ReadHeaderTimeout: 10 * time.Second}
		fmt.Fprintln(os.Stderr, "bench: pprof:", srv.ListenAndServe())
	}()
}

// keepLogs keeps the planes' logs: their directory is not removed.
var releaseHosts = flag.Int("release-hosts", 40, "BMC-driven hosts the release gate benchmark releases, half with a baseline")

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

func perN[V int64 | float64](counts map[string]V, n int) string {
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

// profileAPIServer writes seconds of the plane's kube-apiserver CPU profile
// to path (BENCH_APISERVER_PROFILES=<dir>: where the servers' time goes).
func profileAPIServer(ctx context.Context, p *planes.Plane, path string, seconds int) {
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
	data, err := rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).DoRaw(ctx)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
	}
}
