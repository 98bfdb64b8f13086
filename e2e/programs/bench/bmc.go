package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// runBMCAgent is the child: the agent's BMC driver alone, until SIGTERM.
func runBMCAgent(kubeconfig string, workers, hosts int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg, writes := counted(cfg)
	defaults := app.NewOptions()
	cfg.QPS, cfg.Burst = defaults.ManagedQPS, defaults.ManagedBurst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: app.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	if err := (&bmcdriver.Reconciler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(),
		BMC: bmc.Options{Timeout: 30 * time.Second}}).SetupWithManager(context.Background(), mgr, setup.Options{Managed: mgr, Concurrency: workers}); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err = mgr.Start(ctx)
	fmt.Printf("  agent writes: %.1f per host: %s\n", float64(writes.writes.Load())/float64(hosts), writes.breakdown(hosts))
	fmt.Printf("  agent reads: %.1f per host: %s\n", float64(writes.reads.Load())/float64(hosts), writes.readBreakdown(hosts))
	return err
}

// hardwareLatency draws a BMC's latencies from what real servers take: a
// power change of 2–10 s, a virtual media insert of 1–3 s, an inventory of
// 1–5 s.
func hardwareLatency(r *rand.Rand) redfish.Latency {
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo))) }
	return redfish.Latency{PowerChange: between(2*time.Second, 10*time.Second), MediaInsert: between(time.Second, 3*time.Second),
		Inventory: between(time.Second, 5*time.Second)}
}

// startBMCs starts n emulated Redfish BMCs, as slow as hardware if slow.
// waits[i] is what BMC i makes a caller wait for, in all: its inventory,
// its media insert and its power change.
func startBMCs(n int, slow bool) ([]*redfish.BMC, []time.Duration) {
	bmcs := make([]*redfish.BMC, n)
	waits := make([]time.Duration, n)
	r := rand.New(rand.NewPCG(1, 2)) // the same draws every run
	for i := range bmcs {
		o := redfish.Options{TLS: true, Hardware: redfish.DefaultHardware(fmt.Sprintf("EMU%04d", i))}
		if slow {
			o.Latency = hardwareLatency(r)
			waits[i] = o.Latency.Inventory + o.Latency.MediaInsert + o.Latency.PowerChange
		}
		bmcs[i] = redfish.Start(o)
	}
	return bmcs, waits
}

// createBMCHosts creates a host per BMC, each already asking for a live
// ISO: registering → inspecting → available → provisioning → provisioned.
func createBMCHosts(ctx context.Context, c client.Client, bmcs []*redfish.BMC, image string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}}); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "bmc"},
		Data: map[string][]byte{"username": []byte("admin"), "password": []byte("password")}}); err != nil {
		return err
	}
	return parallel(len(bmcs), 4, func(i int) error {
		return c.Create(ctx, &metal3api.BareMetalHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%04d", i),
				Annotations: map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}},
			Spec: metal3api.BareMetalHostSpec{
				BMC: metal3api.BMCDetails{Address: "redfish-virtualmedia://" + bmcs[i].HostPort() + redfish.SystemPath,
					CredentialsName: "bmc", DisableCertificateVerification: true},
				Online:      true,
				ConsumerRef: &corev1.ObjectReference{Kind: "HostClaim", Namespace: "tenant", Name: fmt.Sprintf("c%04d", i)},
				Image:       &metal3api.Image{URL: image, DiskFormat: ptr.To("live-iso")},
			}})
	})
}

// agent runs the BMC driver in a child process until every host is
// provisioned, and records its time, CPU and memory.
func (run *bmcRun) agent(ctx context.Context, p *planes.Plane) error {
	child := exec.Command(os.Args[0], "-bmc-agent", p.Kubeconfig, "-bmc-workers", fmt.Sprint(run.workers), "-bmcs", fmt.Sprint(run.n))
	if f := os.Getenv("BENCH_AGENT_PROFILE"); f != "" {
		child.Args = append(child.Args, "-cpuprofile", f)
	}
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	busy, err := planes.MachineCPU()
	if err != nil {
		return err
	}
	split, err := readSplit(p)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := child.Start(); err != nil {
		return err
	}
	defer func() { _ = child.Process.Kill() }()
	if err := waitProvisioned(ctx, p.Config, run.n, 10*time.Minute); err != nil {
		return err
	}
	run.elapsed = time.Since(start)
	if run.agentBusy, err = busySince(busy); err != nil {
		return err
	}
	after, err := readSplit(p)
	if err != nil {
		return err
	}
	run.split = after.sub(split)
	_ = child.Process.Signal(syscall.SIGTERM)
	_ = child.Wait()
	if ru, _ := child.ProcessState.SysUsage().(*syscall.Rusage); ru != nil {
		run.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		run.rssMiB = float64(ru.Maxrss) / 1024
	}
	return nil
}

// waitProvisioned returns once n hosts are provisioned, following them with
// a watch: listing every host four times a second would cost the API
// server, on the same two cores, a good part of what is measured.
func waitProvisioned(ctx context.Context, cfg *rest.Config, n int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return err
	}
	provisioned := map[string]bool{}
	see := func(h *metal3api.BareMetalHost) {
		if h.Status.Provisioning.State == metal3api.StateProvisioned {
			provisioned[h.Name] = true
		}
	}
	for len(provisioned) < n {
		var hosts metal3api.BareMetalHostList
		if err := c.List(ctx, &hosts, client.InNamespace("hosts")); err != nil {
			return fmt.Errorf("%d of %d hosts provisioned: %w", len(provisioned), n, err)
		}
		for i := range hosts.Items {
			see(&hosts.Items[i])
		}
		w, err := c.Watch(ctx, &metal3api.BareMetalHostList{}, client.InNamespace("hosts"),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: hosts.ResourceVersion}})
		if err != nil {
			return fmt.Errorf("%d of %d hosts provisioned: %w", len(provisioned), n, err)
		}
		for ev := range w.ResultChan() {
			if h, ok := ev.Object.(*metal3api.BareMetalHost); ok {
				see(h)
			}
			if len(provisioned) >= n || ev.Type == watch.Error {
				break
			}
		}
		w.Stop()
	}
	return nil
}

// busySince is the machine's busy CPU time since the reading before.
func busySince(before time.Duration) (time.Duration, error) {
	now, err := planes.MachineCPU()
	return now - before, err
}
