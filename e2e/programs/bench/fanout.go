package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// fanoutNS is the tenant namespace of the fanout benchmark's claims.
const fanoutNS = "tenant-fanout"

// watchesPerConn is how many watches share one connection, as an agent's
// do; each group of them has its own.
const watchesPerConn = 100

// fanoutCase is one way of opening K claim watches: as the agents do today
// (label-selected, in the tenant's namespace) or one namespace per cluster.
type fanoutCase struct {
	name string
	// shared says the watches share a namespace: each costs per event.
	shared bool
	// watch is the namespace and labels watcher i selects; create is where
	// claim j is created and with which labels, so that it matches exactly
	// watcher j%K.
	watch, create func(i int) (string, map[string]string)
}

func fanoutCases() []fanoutCase {
	cluster := func(i int) map[string]string {
		return map[string]string{hostfleetv1alpha1.LabelCluster: fmt.Sprintf("c%04d", i)}
	}
	own := func(i int) (string, map[string]string) { return fmt.Sprintf("c%04d", i), nil }
	return []fanoutCase{
		{name: "label-selected, in the tenant's namespace", shared: true,
			watch: func(i int) (string, map[string]string) { return fanoutNS, cluster(i) }, create: func(i int) (string, map[string]string) { return fanoutNS, cluster(i) }},
		{name: "one namespace per cluster", watch: own, create: own},
	}
}

// fanoutResult is what one case cost the API server per claim created, and
// how fast the creates went.
type fanoutResult struct {
	cpu  time.Duration
	rate float64
}

var (
	fanoutWatches = flag.String("fanout-watches", "1000,3500", "fanout: the numbers of open claim watches (agents) to measure")
	fanoutCreates = flag.Int("fanout-creates", 3000, "fanout: claims created per measurement")
)

// runFanout measures what open claim watches cost the hub API server per
// claim event: n creates from 4 writers with no watch open (the baseline),
// then with each count of watches, opened each way. Every create matches
// exactly one watch, which must receive it.
func runFanout() error {
	watchCounts, err := parseCounts(*fanoutWatches)
	if err != nil {
		return err
	}
	n := *fanoutCreates
	ctx := context.Background()
	f, stop, err := startPlanes(ctx, "hub")
	if err != nil {
		return err
	}
	defer stop()
	hub := f.Plane("hub").Client
	most := 0
	for _, k := range watchCounts {
		most = max(most, k)
	}
	if err := parallel(most+1, 8, func(i int) error {
		name := fanoutNS
		if i < most {
			name = fmt.Sprintf("c%04d", i)
		}
		return hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}); err != nil {
		return err
	}
	fmt.Printf("\nfanout: %d claim creates on the hub API server (4 writers), each matching one open claim watch\n", n)
	run := 0
	measure := func(k int, c fanoutCase) (fanoutResult, error) {
		run++
		return fanoutRun(ctx, f.Plane("hub").Config, f.Scheme, hub, k, n, run, c, func() (time.Duration, error) {
			u, err := f.Plane("hub").APIServerUsage()
			return u.CPU, err
		})
	}
	// The first creates on fresh planes are slower: a warm-up, not counted.
	if _, err := measure(0, fanoutCases()[0]); err != nil {
		return err
	}
	base, err := measure(0, fanoutCases()[0])
	if err != nil {
		return err
	}
	fmt.Printf("  %-56s %8.2f ms CPU per create, %4.0f creates/s\n", "no watch (baseline)", ms(base.cpu), base.rate)
	for _, k := range watchCounts {
		for _, c := range fanoutCases() {
			r, err := measure(k, c)
			if err != nil {
				return err
			}
			fmt.Printf("  %-56s %8.2f ms CPU per create (%.2f× the baseline), %4.0f creates/s\n",
				fmt.Sprintf("%d watches, %s", k, c.name), ms(r.cpu), float64(r.cpu)/float64(base.cpu), r.rate)
			if c.shared {
				fmt.Printf("  %-56s %8.2f µs of API server CPU per watch, per claim event\n", "", float64(r.cpu-base.cpu)/float64(k)/1e3)
			}
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// fanoutRun opens k watches as c says, creates n claims (names prefixed by
// run) and waits until the watches have received all of them.
func fanoutRun(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, hub client.Client, k, n, run int, c fanoutCase,
	usage func() (time.Duration, error)) (fanoutResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var received atomic.Int64
	prefix := fmt.Sprintf("r%d-", run)
	if err := openWatches(ctx, cfg, scheme, k, c.watch, prefix, &received); err != nil {
		return fanoutResult{}, err
	}
	cpuBefore, err := usage()
	if err != nil {
		return fanoutResult{}, err
	}
	start := time.Now()
	if err := parallel(n, 4, func(j int) error {
		ns, labels := c.create(j % max(k, 1))
		return hub.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s%05d", prefix, j), Labels: labels}})
	}); err != nil {
		return fanoutResult{}, err
	}
	elapsed := time.Since(start)
	want := int64(n)
	if k == 0 {
		want = 0
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return received.Load() >= want, nil
	}); err != nil {
		return fanoutResult{}, fmt.Errorf("%d watches (%s): %d of %d creates received: %w", k, c.name, received.Load(), want, err)
	}
	if got := received.Load(); got != want {
		return fanoutResult{}, fmt.Errorf("%d watches (%s): %d events received for %d creates", k, c.name, got, want)
	}
	cpuAfter, err := usage()
	if err != nil {
		return fanoutResult{}, err
	}
	return fanoutResult{cpu: (cpuAfter - cpuBefore) / time.Duration(n), rate: float64(n) / elapsed.Seconds()}, nil
}

// openWatches opens k claim watches, watchesPerConn to a connection, and
// counts the creates of claims named with prefix they receive until ctx
// ends (a watch opened without a version begins with what exists).
func openWatches(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, k int, sel func(int) (string, map[string]string),
	prefix string, received *atomic.Int64) error {
	conns := make([]client.WithWatch, (k+watchesPerConn-1)/watchesPerConn)
	for i := range conns {
		c := rest.CopyConfig(cfg)
		// A dialer of its own: client-go does not share the transport.
		c.Dial = (&net.Dialer{}).DialContext
		c.QPS, c.Burst = 1000, 2000
		wc, err := client.NewWithWatch(c, client.Options{Scheme: scheme})
		if err != nil {
			return err
		}
		conns[i] = wc
	}
	return parallel(k, 8, func(i int) error {
		ns, labels := sel(i)
		w, err := conns[i/watchesPerConn].Watch(ctx, &metal3api.HostClaimList{}, client.InNamespace(ns), client.MatchingLabels(labels))
		if err != nil {
			return fmt.Errorf("watch %d: %w", i, err)
		}
		go drain(ctx, w, prefix, received)
		return nil
	})
}

func drain(ctx context.Context, w watch.Interface, prefix string, received *atomic.Int64) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if o, isClaim := e.Object.(*metal3api.HostClaim); isClaim && e.Type == watch.Added && strings.HasPrefix(o.Name, prefix) {
				received.Add(1)
			}
		}
	}
}
