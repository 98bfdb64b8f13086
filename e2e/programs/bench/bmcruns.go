package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"time"

	bmclib "github.com/bmc-toolbox/bmclib/v2"
	"github.com/go-logr/logr"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

// bmcRun is what one BMC driver run measured.
type bmcRun struct {
	n, workers int
	slow       bool
	// limit is, with slow BMCs, the slowest host's own chain of BMC waits.
	limit time.Duration
	// elapsed is the agent's time for all n; cpu and rssMiB its process's;
	// agentBusy the machine's busy CPU time (every process) meanwhile.
	elapsed, cpu, agentBusy time.Duration
	rssMiB                  float64
	// split is the other processes' CPU during the agent's run.
	split cpuSplit
	// agentTraffic is what the BMCs served during the agent's run.
	agentTraffic traffic
}

// loopRun is a plain loop's run over instant BMCs: its time, the machine's
// busy CPU meanwhile and what the BMCs served.
type loopRun struct {
	elapsed, busy time.Duration
	traffic       traffic
}

// runBMC runs the profiles asked for: n BMCs answering in milliseconds
// beside two plain loops, then slowN BMCs as slow as hardware beside the
// slowest host's own chain (0 skips either).
func runBMC(n, slowN, workers int) error {
	if n > 0 {
		if err := runBMCProfile(n, workers, false); err != nil {
			return err
		}
	}
	if slowN > 0 {
		return runBMCProfile(slowN, workers, true)
	}
	return nil
}

func runBMCProfile(n, workers int, slow bool) error {
	run := bmcRun{n: n, workers: workers, slow: slow}
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
	var plain, floor loopRun
	if slow {
		for _, w := range waits {
			run.limit = max(run.limit, w)
		}
	} else {
		// A loop on BMCs of their own: the agent's connections are new too.
		if plain, err = timeLoop(ctx, image, n, bmclibProvision); err != nil {
			return err
		}
		if floor, err = timeLoop(ctx, image, n, bmcProvision); err != nil {
			return err
		}
	}
	if err := createBMCHosts(ctx, f.Plane("infra").Client, bmcs, image); err != nil {
		return err
	}
	if err := run.agent(ctx, f.Plane("infra")); err != nil {
		return err
	}
	for _, b := range bmcs {
		if b.Power() != "On" {
			return fmt.Errorf("a provisioned host's BMC says %s", b.Power())
		}
	}
	run.agentTraffic = trafficOf(bmcs)
	if slow {
		run.printSlow()
	} else {
		run.printFast(plain, floor)
	}
	return nil
}

// timeLoop provisions n instant BMCs of its own one after another with
// provision.
func timeLoop(ctx context.Context, image string, n int, provision func(context.Context, *redfish.BMC, string) error) (loopRun, error) {
	bmcs, _ := startBMCs(n, false)
	defer func() {
		for _, b := range bmcs {
			b.Close()
		}
	}()
	busy, err := planes.MachineCPU()
	if err != nil {
		return loopRun{}, err
	}
	start := time.Now()
	for _, b := range bmcs {
		if err := provision(ctx, b, image); err != nil {
			return loopRun{}, err
		}
	}
	run := loopRun{elapsed: time.Since(start), traffic: trafficOf(bmcs)}
	run.busy, err = busySince(busy)
	return run, err
}

// bmcProvision makes the driver's calls for one host through the agent's
// BMC client, without Kubernetes: open, power, inventory, media, boot
// device, power on, then power reads until the BMC reports the host on.
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

// bmclibProvision is the plain loop's host: the same calls through bmclib
// v2's Redfish provider as it ships.
func bmclibProvision(ctx context.Context, b *redfish.BMC, image string) error {
	host, port, _ := strings.Cut(b.HostPort(), ":")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the emulator's self-signed certificate
	c := bmclib.NewClient(host, "admin", "password", bmclib.WithLogger(logr.Discard()), bmclib.WithRedfishPort(port),
		bmclib.WithHTTPClient(&http.Client{Transport: tr}))
	c.Registry.Drivers = c.Registry.For("gofish")
	if err := c.Open(ctx); err != nil {
		return err
	}
	defer func() { _ = c.Close(ctx) }()
	if _, err := c.GetPowerState(ctx); err != nil {
		return err
	}
	if _, err := c.Inventory(ctx); err != nil {
		return err
	}
	if _, err := c.SetVirtualMedia(ctx, "CD", image); err != nil {
		return err
	}
	if _, err := c.SetBootDevice(ctx, "cdrom", false, true); err != nil {
		return err
	}
	if _, err := c.SetPowerState(ctx, "on"); err != nil {
		return err
	}
	for {
		s, err := c.GetPowerState(ctx)
		if err != nil || strings.EqualFold(s, "on") {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// traffic is what BMCs served: connections (each a TLS handshake) and
// requests.
type traffic struct{ conns, requests int64 }

func trafficOf(bmcs []*redfish.BMC) traffic {
	var t traffic
	for _, b := range bmcs {
		c, r := b.Traffic()
		t.conns, t.requests = t.conns+c, t.requests+r
	}
	return t
}

func (t traffic) per(n int) string {
	return fmt.Sprintf("%.1f connections, %.1f requests per host", float64(t.conns)/float64(n), float64(t.requests)/float64(n))
}

// msPer is d per host in milliseconds.
func msPer(d time.Duration, n int) float64 { return d.Seconds() * 1000 / float64(n) }

func (run *bmcRun) printFast(plain, floor loopRun) {
	n := run.n
	fmt.Printf("\nBMC driver, %d Redfish BMCs answering in milliseconds, from registering to provisioned (inspection, live-ISO boot, the BMC reporting the host on), %d workers\n", n, run.workers)
	fmt.Printf("  plain loop (bmclib's Redfish provider, host after host): %s, %s\n", plain.elapsed.Round(10*time.Millisecond), plain.traffic.per(n))
	fmt.Printf("  the agent's BMC client, host after host, no Kubernetes: %s, %s\n", floor.elapsed.Round(10*time.Millisecond), floor.traffic.per(n))
	fmt.Printf("  agent: %s for all %d (%.1f hosts/s) with its start and cache sync; %s\n", run.elapsed.Round(10*time.Millisecond), n,
		float64(n)/run.elapsed.Seconds(), run.agentTraffic.per(n))
	a, b, f := msPer(run.agentBusy, n), msPer(plain.busy, n), msPer(floor.busy, n)
	fmt.Printf("bmc cpu: agent %.0f ms/host, loop %.0f ms/host, ratio %.2f\n", a, b, a/b)
	fmt.Printf("  machine CPU per host (every process, /proc/stat): the agent's client alone %.0f ms (the agent's run %.2f× it)\n", f, a/f)
	fmt.Printf("  the agent's run by process, ms per host: agent %.1f, API server %.1f, etcd %.1f, BMCs and this process %.1f\n",
		msPer(run.cpu, n), msPer(run.split.apiServer, n), msPer(run.split.etcd, n), msPer(run.split.bmcs, n))
	fmt.Printf("  agent process: %.0f MiB peak resident memory\n", run.rssMiB)
}

func (run *bmcRun) printSlow() {
	n := run.n
	cores := runtime.NumCPU()
	fmt.Printf("\nBMC driver, %d Redfish BMCs as slow as hardware (power change 2–10 s, media insert 1–3 s, inventory 1–5 s), from registering to provisioned, %d workers\n", n, run.workers)
	fmt.Printf("bmc slow: %d hosts in %.1f s, limit %.1f s (slowest host's own chain), ratio %.2f\n", n, run.elapsed.Seconds(), run.limit.Seconds(),
		run.elapsed.Seconds()/run.limit.Seconds())
	fmt.Printf("  the agent's time includes its start and cache sync; the limit is the slowest host's inventory, media insert and power change\n")
	fmt.Printf("  CPU bound: the run's busy CPU (every process) over %d cores is %.1f s; agent %.0f MiB peak resident memory, %.0f ms CPU per host\n",
		cores, run.agentBusy.Seconds()/float64(cores), run.rssMiB, msPer(run.cpu, n))
	fmt.Printf("  the agent's run by process, ms per host: agent %.1f, API server %.1f, etcd %.1f, BMCs and this process %.1f; %s\n",
		msPer(run.cpu, n), msPer(run.split.apiServer, n), msPer(run.split.etcd, n), msPer(run.split.bmcs, n), run.agentTraffic.per(n))
}
