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
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// runRelease measures what the release gate costs a release with nothing
// to restore: n hosts, driven by the BMC driver, are provisioned; half are
// released with no FirmwareBaseline, half with one that selects them and
// finds them as it wants them. Printed: the BMC requests per release of
// each, and the difference against one read round of what the gate reads
// (firmware, BIOS settings, accounts).
func runRelease(n int) error {
	ctx := context.Background()
	f, stop, err := startPlanes(ctx, "infra-1")
	if err != nil {
		return err
	}
	defer stop()
	p := f.Plane("infra-1")
	images := redfish.ImageServer()
	defer images.Close()
	bmcs, _ := startBMCs(n, false)
	defer func() {
		for _, b := range bmcs {
			b.Close()
		}
	}()
	if err := createBMCHosts(ctx, p.Client, bmcs, images.URL+"/live.iso"); err != nil {
		return err
	}
	var baselines atomic.Pointer[[]hostfleetv1alpha1.FirmwareBaseline]
	baselines.Store(&[]hostfleetv1alpha1.FirmwareBaseline{})
	mgr, err := ctrl.NewManager(p.Config, ctrl.Options{Scheme: app.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	r := &bmcdriver.Reconciler{Client: mgr.GetClient(), Poll: time.Hour, BMC: bmc.Options{Timeout: 10 * time.Second},
		Baselines: func(context.Context) ([]hostfleetv1alpha1.FirmwareBaseline, error) { return *baselines.Load(), nil }}
	if err := r.SetupWithManager(ctx, mgr, setup.Options{Managed: mgr}); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = mgr.Start(runCtx) }()
	if err := waitProvisioned(ctx, p.Config, n, 5*time.Minute); err != nil {
		return err
	}

	half := n / 2
	release := func(from, to int, judged bool) (float64, error) {
		before := trafficOf(bmcs[from:to])
		err := parallel(to-from, 4, func(i int) error {
			h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%04d", from+i)}}
			return p.Client.Patch(ctx, h, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"consumerRef":null,"image":null,"online":false}}`)))
		})
		if err != nil {
			return 0, err
		}
		deadline := time.Now().Add(5 * time.Minute)
		for i := from; i < to; {
			h := &metal3api.BareMetalHost{}
			if err := p.Client.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: fmt.Sprintf("h%04d", i)}, h); err != nil {
				return 0, err
			}
			c := meta.FindStatusCondition(h.Status.Conditions, bmcdriver.ConditionBaseline)
			if h.Status.Provisioning.State == metal3api.StateAvailable && (!judged || (c != nil && c.Reason == bmcdriver.ReasonBaselineCurrent)) {
				i++
				continue
			}
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("host h%04d not released: %s %s", i, h.Status.Provisioning.State, h.Status.ErrorMessage)
			}
			time.Sleep(100 * time.Millisecond)
		}
		after := trafficOf(bmcs[from:to])
		return float64(after.requests-before.requests) / float64(to-from), nil
	}
	plain, err := release(0, half, false)
	if err != nil {
		return err
	}
	baselines.Store(&[]hostfleetv1alpha1.FirmwareBaseline{{ObjectMeta: metav1.ObjectMeta{Name: "all"}, Spec: hostfleetv1alpha1.FirmwareBaselineSpec{
		BIOSSettings: map[string]string{"SecureBoot": "Enabled"}, BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{}}}})
	judged, err := release(half, n, true)
	if err != nil {
		return err
	}
	// One read round of what the gate reads, on a host as the driver sees it.
	round, err := readRound(ctx, bmcs[0])
	if err != nil {
		return err
	}
	fmt.Printf("\nrelease gate, %d BMC-driven hosts released, half with no FirmwareBaseline, half with one that finds nothing to restore\n", n)
	fmt.Printf("  BMC requests per release: %.1f without, %.1f with: +%.1f; one read round (firmware, BIOS settings, accounts) is %d\n",
		plain, judged, judged-plain, round)
	fmt.Printf("release: extra requests %.1f over one read round %d, ratio %.2f\n", judged-plain, round, (judged-plain)/float64(round))
	return nil
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
