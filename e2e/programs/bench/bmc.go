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
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
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
	if err := (&bmcdriver.Reconciler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Workers: workers,
		BMC: bmc.Options{Timeout: 30 * time.Second}}).SetupWithManager(mgr, mgr); err != nil {
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

func runBMC(n, workers int, slow bool, sample int) error {
	if sample <= 0 || sample > n {
		sample = n
	}
	ctx := context.Background()
	f, stop, err := startPlanes(ctx, "infra")
	if err != nil {
		return err
	}
	defer stop()
	c := f.Plane("infra").Client

	fmt.Printf("\nstarting %d emulated Redfish BMCs (HTTPS) and an image server\n", n)
	iso := redfish.ImageServer()
	defer iso.Close()
	bmcs := make([]*redfish.BMC, n)
	// waits[i] is what BMC i makes a caller wait for, in all: its
	// inventory, its media insert and its power change.
	waits := make([]time.Duration, n)
	r := rand.New(rand.NewPCG(1, 2)) // the same draws every run
	for i := range bmcs {
		o := redfish.Options{TLS: true, Hardware: redfish.DefaultHardware(fmt.Sprintf("EMU%04d", i))}
		if slow {
			o.Latency = hardwareLatency(r)
			waits[i] = o.Latency.Inventory + o.Latency.MediaInsert + o.Latency.PowerChange
		}
		bmcs[i] = redfish.Start(o)
		defer bmcs[i].Close()
	}
	image := iso.URL + "/live.iso"

	// Baseline: the calls the driver makes for one host (open, power,
	// inventory, media, boot device, power on, close), one host after
	// another. With a sample smaller than n, the loop runs over the first
	// sample BMCs, and the time for all n is what it measured plus, for
	// each other BMC, what that BMC makes a caller wait for and the loop's
	// measured cost per host beyond those waits.
	start := time.Now()
	for _, b := range bmcs[:sample] {
		a, err := bmc.ParseAddress("redfish-virtualmedia://" + b.HostPort() + redfish.SystemPath)
		if err != nil {
			return err
		}
		d, err := bmc.Open(ctx, a, "admin", "password", bmc.Options{InsecureSkipVerify: true})
		if err != nil {
			return err
		}
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
			// As the driver: done once the BMC reports the host on.
			s, err := d.Power(ctx)
			if err != nil {
				return err
			}
			if s == bmc.PowerOn {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		_ = d.Close(ctx)
	}
	baseline := time.Since(start)
	measured := baseline
	if sample < n {
		var sampleWaits, restWaits time.Duration
		for i, w := range waits {
			if i < sample {
				sampleWaits += w
			} else {
				restWaits += w
			}
		}
		perHost := (measured - sampleWaits) / time.Duration(sample)
		baseline = measured + restWaits + perHost*time.Duration(n-sample)
	}
	for _, b := range bmcs[:sample] {
		b.SetPowerForTest("Off")
	}

	// The hosts, each already asking for a live ISO: registering →
	// inspecting → available → provisioning → provisioned.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}}); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "bmc"},
		Data: map[string][]byte{"username": []byte("admin"), "password": []byte("password")}}); err != nil {
		return err
	}
	if err := parallel(n, 4, func(i int) error {
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
	}); err != nil {
		return err
	}

	child := exec.Command(os.Args[0], "-bmc-agent", f.Plane("infra").Kubeconfig, "-bmc-workers", fmt.Sprint(workers), "-bmcs", fmt.Sprint(n))
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	start = time.Now()
	if err := child.Start(); err != nil {
		return err
	}
	defer func() { _ = child.Process.Kill() }()
	var provisioned int
	for {
		var hosts metal3api.BareMetalHostList
		if err := c.List(ctx, &hosts, client.InNamespace("hosts")); err != nil {
			return err
		}
		provisioned = 0
		for _, h := range hosts.Items {
			if h.Status.Provisioning.State == metal3api.StateProvisioned {
				provisioned++
			}
		}
		if provisioned == n {
			break
		}
		if time.Since(start) > 10*time.Minute {
			return fmt.Errorf("only %d of %d hosts provisioned after 10 minutes", provisioned, n)
		}
		time.Sleep(250 * time.Millisecond)
	}
	elapsed := time.Since(start)
	_ = child.Process.Signal(syscall.SIGTERM)
	_ = child.Wait()
	ru, _ := child.ProcessState.SysUsage().(*syscall.Rusage)
	var cpu time.Duration
	var rssMiB float64
	if ru != nil {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		rssMiB = float64(ru.Maxrss) / 1024
	}
	for _, b := range bmcs {
		if b.Power() != "On" {
			return fmt.Errorf("a provisioned host's BMC says %s", b.Power())
		}
	}

	kind := "answering in milliseconds"
	if slow {
		kind = "as slow as hardware (power change 2–10 s, media insert 1–3 s, inventory 1–5 s)"
	}
	fmt.Printf("\nBMC driver, %d Redfish BMCs %s, from registering to provisioned (inspection, live-ISO boot, the BMC reporting the host on), %d workers\n", n, kind, workers)
	fmt.Printf("  baseline: the same calls one host after another: %s (%s per host)\n",
		baseline.Round(10*time.Millisecond), (baseline / time.Duration(n)).Round(time.Millisecond))
	if sample < n {
		fmt.Printf("            measured over the first %d hosts (%s), the other %d added from their BMCs' latencies and the loop's measured cost per host\n",
			sample, measured.Round(10*time.Millisecond), n-sample)
	}
	fmt.Printf("  agent:    %s for all %d (%.1f hosts/s), including its start and cache sync\n", elapsed.Round(10*time.Millisecond), n, float64(n)/elapsed.Seconds())
	fmt.Printf("  ratio:    %.3f of the baseline's time (%.1f times faster)\n", elapsed.Seconds()/baseline.Seconds(), baseline.Seconds()/elapsed.Seconds())
	fmt.Printf("  agent process: %s CPU (%s per host), %.0f MiB peak resident memory\n",
		cpu.Round(10*time.Millisecond), (cpu / time.Duration(n)).Round(time.Millisecond), rssMiB)
	return nil
}
