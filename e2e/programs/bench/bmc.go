package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
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
	cfg.QPS, cfg.Burst = 50, 100 // the agent's defaults
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

// bmcRun is what the BMC driver benchmark measured.
type bmcRun struct {
	n, workers, sample int
	slow               bool
	// baseline is the sequential loop's time for all n; measured, its
	// time for the sample.
	baseline, measured time.Duration
	// elapsed is the agent's time for all n; cpu and rssMiB its process's.
	elapsed time.Duration
	cpu     time.Duration
	rssMiB  float64
	// loopBusy and agentBusy are the machine's busy CPU time (every
	// process) during the measured loop and during the agent's run.
	loopBusy, agentBusy time.Duration
}

func runBMC(n, workers int, slow bool, sample int) error {
	if sample <= 0 || sample > n {
		sample = n
	}
	run := bmcRun{n: n, workers: workers, sample: sample, slow: slow}
	ctx := context.Background()
	f, stop, err := startPlanes(ctx, "infra")
	if err != nil {
		return err
	}
	defer stop()

	fmt.Printf("\nstarting %d emulated Redfish BMCs (HTTPS) and an image server\n", n)
	iso := redfish.ImageServer()
	defer iso.Close()
	image := iso.URL + "/live.iso"
	bmcs, waits := startBMCs(n, slow)
	defer func() {
		for _, b := range bmcs {
			b.Close()
		}
	}()
	busy, err := planes.MachineCPU()
	if err != nil {
		return err
	}
	if run.measured, err = bmcLoop(ctx, bmcs[:sample], image); err != nil {
		return err
	}
	if run.loopBusy, err = busySince(busy); err != nil {
		return err
	}
	run.baseline = extrapolate(run.measured, waits, sample)
	for _, b := range bmcs[:sample] {
		b.SetPowerForTest("Off")
	}
	if err := createBMCHosts(ctx, f.Plane("infra").Client, bmcs, image); err != nil {
		return err
	}
	if err := run.agent(ctx, f.Plane("infra").Config, f.Plane("infra").Kubeconfig); err != nil {
		return err
	}
	for _, b := range bmcs {
		if b.Power() != "On" {
			return fmt.Errorf("a provisioned host's BMC says %s", b.Power())
		}
	}
	run.print()
	return nil
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

// bmcLoop is the baseline: the calls the driver makes for one host (open,
// power, inventory, media, boot device, power on, close), one host after
// another.
func bmcLoop(ctx context.Context, bmcs []*redfish.BMC, image string) (time.Duration, error) {
	start := time.Now()
	for _, b := range bmcs {
		if err := bmcProvision(ctx, b, image); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// bmcProvision makes the driver's calls for one host, as the driver: done
// once the BMC reports the host on.
func bmcProvision(ctx context.Context, b *redfish.BMC, image string) error {
	a, err := bmc.ParseAddress("redfish-virtualmedia://" + b.HostPort() + redfish.SystemPath)
	if err != nil {
		return err
	}
	d, err := bmc.Open(ctx, a, "admin", "password", bmc.Options{InsecureSkipVerify: true})
	if err != nil {
		return err
	}
	defer func() { _ = d.Close(ctx) }()
	if _, err := d.Power(ctx); err != nil {
		return err
	}
	if _, err := d.Inventory(ctx); err != nil {
		return err
	}
	if err := d.InsertMedia(ctx, image); err != nil {
		return err
	}
	if err := d.SetBootOnce(ctx, bmc.BootCDROM); err != nil {
		return err
	}
	if err := d.Send(ctx, bmc.CommandOn); err != nil {
		return err
	}
	for {
		s, err := d.Power(ctx)
		if err != nil || s == bmc.PowerOn {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// extrapolate is the loop's time for all BMCs from its time over the first
// sample: what it measured plus, for each other BMC, what that BMC makes a
// caller wait for and the loop's measured cost per host beyond those waits.
func extrapolate(measured time.Duration, waits []time.Duration, sample int) time.Duration {
	if sample == len(waits) {
		return measured
	}
	var sampleWaits, restWaits time.Duration
	for i, w := range waits {
		if i < sample {
			sampleWaits += w
		} else {
			restWaits += w
		}
	}
	perHost := (measured - sampleWaits) / time.Duration(sample)
	return measured + restWaits + perHost*time.Duration(len(waits)-sample)
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
func (run *bmcRun) agent(ctx context.Context, cfg *rest.Config, kubeconfig string) error {
	child := exec.Command(os.Args[0], "-bmc-agent", kubeconfig, "-bmc-workers", fmt.Sprint(run.workers), "-bmcs", fmt.Sprint(run.n))
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	busy, err := planes.MachineCPU()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := child.Start(); err != nil {
		return err
	}
	defer func() { _ = child.Process.Kill() }()
	if err := waitProvisioned(ctx, cfg, run.n, 10*time.Minute); err != nil {
		return err
	}
	run.elapsed = time.Since(start)
	if run.agentBusy, err = busySince(busy); err != nil {
		return err
	}
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

func (run *bmcRun) print() {
	n := run.n
	kind := "answering in milliseconds"
	if run.slow {
		kind = "as slow as hardware (power change 2–10 s, media insert 1–3 s, inventory 1–5 s)"
	}
	fmt.Printf("\nBMC driver, %d Redfish BMCs %s, from registering to provisioned (inspection, live-ISO boot, the BMC reporting the host on), %d workers\n", n, kind, run.workers)
	fmt.Printf("  baseline: the same calls one host after another: %s (%s per host)\n",
		run.baseline.Round(10*time.Millisecond), (run.baseline / time.Duration(n)).Round(time.Millisecond))
	if run.sample < n {
		fmt.Printf("            measured over the first %d hosts (%s), the other %d added from their BMCs' latencies and the loop's measured cost per host\n",
			run.sample, run.measured.Round(10*time.Millisecond), n-run.sample)
	}
	fmt.Printf("  agent:    %s for all %d (%.1f hosts/s), including its start and cache sync\n", run.elapsed.Round(10*time.Millisecond), n, float64(n)/run.elapsed.Seconds())
	fmt.Printf("  ratio:    %.3f of the baseline's time (%.1f times faster)\n", run.elapsed.Seconds()/run.baseline.Seconds(), run.baseline.Seconds()/run.elapsed.Seconds())
	fmt.Printf("  agent process: %s CPU (%s per host), %.0f MiB peak resident memory\n",
		run.cpu.Round(10*time.Millisecond), (run.cpu / time.Duration(n)).Round(time.Millisecond), run.rssMiB)
	// The loop's calls cost what they cost wherever they are made: on this
	// machine's cores, no driver making them finishes sooner than their
	// CPU time spread over every core.
	cores := runtime.NumCPU()
	fmt.Printf("  machine:  the loop kept %.2f cores busy (%s CPU per host, BMCs included); the agent's run %.2f of %d (%s per host: agent, API server, etcd, BMCs)\n",
		run.loopBusy.Seconds()/run.measured.Seconds(), (run.loopBusy / time.Duration(run.sample)).Round(time.Millisecond),
		run.agentBusy.Seconds()/run.elapsed.Seconds(), cores, (run.agentBusy / time.Duration(n)).Round(time.Millisecond))
	fmt.Printf("  bound:    on %d cores a driver making the loop's calls is at most %.1f times faster than the loop\n",
		cores, float64(cores)*run.measured.Seconds()/run.loopBusy.Seconds())
}

// busySince is the machine's busy CPU time since the reading before.
func busySince(before time.Duration) (time.Duration, error) {
	now, err := planes.MachineCPU()
	return now - before, err
}
