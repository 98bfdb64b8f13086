package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// releaseRun is the release benchmark's plane, BMCs, and the baselines
// its BMC driver reads.
type releaseRun struct {
	p         *planes.Plane
	bmcs      []*redfish.BMC
	baselines atomic.Pointer[[]hostfleetv1alpha1.FirmwareBaseline]
}

// runRelease measures what the release gate costs a release with nothing
// to restore: n hosts, driven by the BMC driver, are provisioned; half are
// released with no FirmwareBaseline, half with one that selects them and
// finds them as it wants them. Printed: the BMC requests per release of
// each, and the difference against one read round of what the gate reads
// (firmware, BIOS settings, accounts).
func runRelease(n int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, stop, err := startPlanes(ctx, "infra-1")
	if err != nil {
		return err
	}
	defer stop()
	images := redfish.ImageServer()
	defer images.Close()
	run := &releaseRun{p: f.Plane("infra-1")}
	run.bmcs, _ = startBMCs(n, false)
	defer func() {
		for _, b := range run.bmcs {
			b.Close()
		}
	}()
	if err := run.start(ctx, images.URL+"/live.iso"); err != nil {
		return err
	}
	half := n / 2
	plain, err := run.release(ctx, 0, half, false)
	if err != nil {
		return err
	}
	run.baselines.Store(&[]hostfleetv1alpha1.FirmwareBaseline{{ObjectMeta: metav1.ObjectMeta{Name: "all"}, Spec: hostfleetv1alpha1.FirmwareBaselineSpec{
		BIOSSettings: map[string]string{"SecureBoot": "Enabled"}, BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{}}}})
	judged, err := run.release(ctx, half, n, true)
	if err != nil {
		return err
	}
	round, err := readRound(ctx, run.bmcs[0])
	if err != nil {
		return err
	}
	fmt.Printf("\nrelease gate, %d BMC-driven hosts released, half with no FirmwareBaseline, half with one that finds nothing to restore\n", n)
	fmt.Printf("  BMC requests per release: %.1f without, %.1f with: +%.1f; one read round (firmware, BIOS settings, accounts) is %d\n",
		plain, judged, judged-plain, round)
	fmt.Printf("release: extra requests %.1f over one read round %d, ratio %.2f\n", judged-plain, round, (judged-plain)/float64(round))
	return nil
}

// start creates a bound host per BMC and runs the BMC driver until ctx
// ends; it returns once every host is provisioned.
func (run *releaseRun) start(ctx context.Context, image string) error {
	if err := createBMCHosts(ctx, run.p.Client, run.bmcs, image); err != nil {
		return err
	}
	run.baselines.Store(&[]hostfleetv1alpha1.FirmwareBaseline{})
	mgr, err := ctrl.NewManager(run.p.Config, ctrl.Options{Scheme: app.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	r := &bmcdriver.Reconciler{Client: mgr.GetClient(), Poll: time.Hour, BMC: bmc.Options{Timeout: 10 * time.Second},
		Baselines: func(context.Context) ([]hostfleetv1alpha1.FirmwareBaseline, error) { return *run.baselines.Load(), nil }}
	if err := r.SetupWithManager(ctx, mgr, setup.Options{Managed: mgr}); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return waitProvisioned(ctx, run.p.Config, len(run.bmcs), 5*time.Minute)
}

// release lets hosts [from, to) go and returns the BMC requests per host
// until each is available again (and, judged, matches its baselines).
func (run *releaseRun) release(ctx context.Context, from, to int, judged bool) (float64, error) {
	c := run.p.Client
	before := trafficOf(run.bmcs[from:to])
	err := parallel(to-from, 4, func(i int) error {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%04d", from+i)}}
		return c.Patch(ctx, h, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"consumerRef":null,"image":null,"online":false}}`)))
	})
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for i := from; i < to; {
		h := &metal3api.BareMetalHost{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: fmt.Sprintf("h%04d", i)}, h); err != nil {
			return 0, err
		}
		cond := meta.FindStatusCondition(h.Status.Conditions, bmcdriver.ConditionBaseline)
		if h.Status.Provisioning.State == metal3api.StateAvailable && (!judged || (cond != nil && cond.Reason == bmcdriver.ReasonBaselineCurrent)) {
			i++
			continue
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("host h%04d not released: %s %s", i, h.Status.Provisioning.State, h.Status.ErrorMessage)
		}
		time.Sleep(100 * time.Millisecond)
	}
	after := trafficOf(run.bmcs[from:to])
	return float64(after.requests-before.requests) / float64(to-from), nil
}

// readRound is how many requests one read of what the release gate reads
// takes on b.
func readRound(ctx context.Context, b *redfish.BMC) (int, error) {
	a, err := bmc.ParseAddress("redfish-virtualmedia://" + b.HostPort() + redfish.SystemPath)
	if err != nil {
		return 0, err
	}
	d, err := bmc.Open(ctx, a, "admin", "password", bmc.Options{Timeout: 10 * time.Second, InsecureSkipVerify: true})
	if err != nil {
		return 0, err
	}
	defer d.Close(ctx)
	r := d.(bmc.Restorer)
	_, before := b.Traffic()
	if _, err := r.Firmware(ctx); err != nil {
		return 0, err
	}
	if _, err := r.BIOS(ctx); err != nil {
		return 0, err
	}
	if _, err := r.Accounts(ctx); err != nil {
		return 0, err
	}
	_, after := b.Traffic()
	return int(after - before), nil
}
