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
// accepts the writes one decision needs (a label patch and a status patch),
// and the time one LIST of all claims takes (what a scheduler that lists
// every claim for every decision would pay per decision).
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
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	only := flag.String("only", "", "run one benchmark: binding, scheduling, bmc or labels")
	labelHosts := flag.Int("label-hosts", 20, "hosts, claims and Nodes of the label sync benchmark")
	labelChanges := flag.Int("label-changes", 100, "host label changes the label sync benchmark times")
	bmcs := flag.Int("bmcs", 200, "emulated Redfish BMCs the agent drives")
	bmcWorkers := flag.Int("bmc-workers", app.NewOptions().BMCWorkers, "the agent's --bmc-workers (default: the agent's default)")
	bmcSlow := flag.Bool("bmc-slow", false, "BMCs as slow as hardware: power change 2–10 s, media insert 1–3 s, inventory 1–5 s")
	bmcSample := flag.Int("bmc-baseline-sample", 0, "run the sequential baseline over this many BMCs and add the others' latencies (0: all; 500 slow BMCs one after another take about 100 minutes)")
	agentKubeconfig := flag.String("bmc-agent", "", "internal: run only the BMC driver against this kubeconfig")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	if *agentKubeconfig != "" {
		if err := runBMCAgent(*agentKubeconfig, *bmcWorkers, *bmcs); err != nil {
			fmt.Fprintln(os.Stderr, "bench agent:", err)
			os.Exit(1)
		}
		return
	}
	var err error
	if *only == "" || *only == "binding" {
		err = run(*n, *workers)
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
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// startPlanes starts the named planes in a temporary directory; stop stops
// them and removes it.
func startPlanes(ctx context.Context, names ...string) (f *planes.Fleet, stop func(), err error) {
	dir, err := os.MkdirTemp("", "hostfleet-bench-")
	if err != nil {
		return nil, nil, err
	}
	f, err = planes.Start(ctx, planes.Options{Dir: dir}, names...)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	return f, func() { _ = f.Stop(); _ = os.RemoveAll(dir) }, nil
}

// writeCounter counts the requests that change something, and the reads
// (GET and LIST, not WATCH); and the writes by method and resource.
type writeCounter struct {
	next   http.RoundTripper
	writes atomic.Int64
	reads  atomic.Int64
	mu     sync.Mutex
	kinds  map[string]int64
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
		}
	}
	return w.next.RoundTrip(r)
}

// resourceOf is the resource (and subresource) a request path names:
// /apis/metal3.io/v1alpha1/namespaces/ns/hostclaims/c/status is
// "hostclaims/status".
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) > 0 && parts[0] == "api" {
		parts = parts[2:] // api/v1
	} else if len(parts) > 2 {
		parts = parts[3:] // apis/<group>/<version>
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
	keys := slices.SortedFunc(maps.Keys(w.kinds), func(a, b string) int { return cmp.Compare(w.kinds[b], w.kinds[a]) })
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %.1f", k, float64(w.kinds[k])/float64(n)))
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

func run(n, workers int) error {
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
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: ".*"}}},
	} {
		if err := infra.Create(ctx, o); err != nil {
			return err
		}
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
	} {
		if err := hub.Create(ctx, o); err != nil {
			return err
		}
	}
	if err := parallel(n, workers, func(i int) error {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%04d", i)},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", 10000+i), CredentialsName: "bmc"}}}
		if err := infra.Create(ctx, h); err != nil {
			return err
		}
		h.Status.Provisioning.State = metal3api.StateAvailable
		h.Status.OperationalStatus = metal3api.OperationalStatusOK
		return infra.Status().Update(ctx, h)
	}); err != nil {
		return err
	}

	// Baseline: BMH patches the infrastructure API server accepts, from the
	// same number of writers.
	base, _ := counted(f.Plane("infra-1").Config)
	baseClient, err := client.New(base, client.Options{Scheme: f.Scheme})
	if err != nil {
		return err
	}
	start := time.Now()
	if err := parallel(n, workers, func(i int) error {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%04d", i)}}
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"bench":"baseline"}}}`))
		return baseClient.Patch(ctx, h, patch)
	}); err != nil {
		return err
	}
	baseRate := float64(n) / time.Since(start).Seconds()

	if err := parallel(n, workers, func(i int) error {
		return hub.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: fmt.Sprintf("c%04d", i),
			Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}}})
	}); err != nil {
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
	start = time.Now()
	go func() { done <- a.Manager.Start(runCtx) }()
	for {
		bound, err := countBound(ctx, hub)
		if err != nil {
			return err
		}
		if bound == n {
			break
		}
		select {
		case err := <-done:
			return fmt.Errorf("agent stopped: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(start) > 10*time.Minute {
			return fmt.Errorf("only %d of %d claims bound after 10 minutes", bound, n)
		}
	}
	elapsed := time.Since(start)
	rate := float64(n) / elapsed.Seconds()
	hw, mw := hubWrites.writes.Load(), managedWrites.writes.Load()
	cancel()
	<-done

	fmt.Printf("\nbinding, %d claims on %d hosts, %d workers\n", n, n, workers)
	fmt.Printf("  baseline: the infrastructure API server accepts %.0f BareMetalHost patches/s from %d writers\n", baseRate, workers)
	fmt.Printf("  agent:    %.0f claims bound/s (%s for %d)\n", rate, elapsed.Round(10*time.Millisecond), n)
	fmt.Printf("  ratio:    %.2f bound claims per baseline patch\n", rate/baseRate)
	fmt.Printf("  writes:   %.1f API writes per bound claim (hub %.1f, infrastructure %.1f)\n",
		float64(hw+mw)/float64(n), float64(hw)/float64(n), float64(mw)/float64(n))
	fmt.Printf("            hub: %s\n            infrastructure: %s\n", hubWrites.breakdown(n), managedWrites.breakdown(n))
	return nil
}

func countBound(ctx context.Context, hub client.Client) (int, error) {
	var list metal3api.HostClaimList
	if err := hub.List(ctx, &list, client.InNamespace("tenant-a")); err != nil {
		return 0, err
	}
	bound := 0
	for i := range list.Items {
		c := meta.FindStatusCondition(list.Items[i].Status.Conditions, hostfleetv1alpha1.ConditionReady)
		if c != nil && c.Status == metav1.ConditionTrue {
			bound++
		}
	}
	return bound, nil
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
