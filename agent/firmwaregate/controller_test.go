package firmwaregate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	"github.com/hostfleet/hostfleet/agent/firmwaregate"
	"github.com/hostfleet/hostfleet/agent/firmwareimage"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/baseline"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/setup"
)

func TestMain(m *testing.M) { planes.Main(m) }

// TestReleaseGateThroughBareMetalOperator: two hosts baremetal-operator
// serves are released, marked to be judged; a tenant left an older BIOS
// and Secure Boot off on each. The gate asks baremetal-operator for the
// baseline's BIOS (HostFirmwareComponents spec.updates) and setting
// (HostFirmwareSettings spec.settings) and keeps the hosts out of the pool
// while it applies them (this test writes their status as it does). The
// first is restored and free; the second's flash did not take, and it is
// held with the reason.
func TestReleaseGateThroughBareMetalOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "infra")
	c := f.Plane("infra").Client
	images := redfish.ImageServer()
	defer images.Close()
	sum := sha256.Sum256(redfish.FirmwareImage("1.2.3"))
	fb := hostfleetv1alpha1.FirmwareBaseline{ObjectMeta: metav1.ObjectMeta{Name: "r1"}, Spec: hostfleetv1alpha1.FirmwareBaselineSpec{
		Hardware:     `host.system.product == "R1"`,
		Components:   map[string]hostfleetv1alpha1.FirmwareImage{"bios": {Version: "1.2.3", URL: images.URL + "/firmware/bios-1.2.3", Checksum: "sha256:" + hex.EncodeToString(sum[:])}},
		BIOSSettings: map[string]string{"SecureBoot": "Enabled"}}}
	f.ManagerForTest(t, "infra", func(mgr ctrl.Manager) error {
		return (&firmwaregate.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("hostfleet-agent"), Images: &firmwareimage.Checker{},
			Baselines: func(context.Context) ([]hostfleetv1alpha1.FirmwareBaseline, error) {
				return []hostfleetv1alpha1.FirmwareBaseline{fb}, nil
			}}).SetupWithManager(ctx, mgr, setup.Options{Managed: mgr})
	})
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())
	released := func(name string) *metal3api.BareMetalHost {
		hd := &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name}, Spec: metal3api.HardwareDataSpec{
			HardwareDetails: &metal3api.HardwareDetails{SystemVendor: metal3api.HardwareSystemVendor{Manufacturer: "Acme", ProductName: "R1"},
				CPU: metal3api.CPU{Count: 8, Arch: "x86_64"}, RAMMebibytes: 4096}}}
		g.Expect(c.Create(ctx, hd)).To(Succeed())
		hfc := &metal3api.HostFirmwareComponents{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name}, Spec: metal3api.HostFirmwareComponentsSpec{Updates: []metal3api.FirmwareUpdate{}}}
		g.Expect(c.Create(ctx, hfc)).To(Succeed())
		hfc.Status.Components = []metal3api.FirmwareComponentStatus{{Component: "bios", InitialVersion: "1.2.3", CurrentVersion: "0.9.0"}, {Component: "bmc", InitialVersion: "7.10"}}
		g.Expect(c.Status().Update(ctx, hfc)).To(Succeed())
		hfs := &metal3api.HostFirmwareSettings{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name}, Spec: metal3api.HostFirmwareSettingsSpec{Settings: metal3api.DesiredSettingsMap{}}}
		g.Expect(c.Create(ctx, hfs)).To(Succeed())
		hfs.Status.Settings = metal3api.SettingsMap{"SecureBoot": "Disabled", "BootMode": "UEFI"}
		g.Expect(c.Status().Update(ctx, hfs)).To(Succeed())
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name,
			Annotations: map[string]string{hostfleetv1alpha1.AnnotationRestore: baseline.Progress{Phase: baseline.PhaseJudge}.String()}},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "redfish://192.0.2.1/redfish/v1/Systems/1", CredentialsName: "bmc"}}}
		g.Expect(c.Create(ctx, h)).To(Succeed())
		h.Status = metal3api.BareMetalHostStatus{OperationalStatus: metal3api.OperationalStatusOK, Provisioning: metal3api.ProvisionStatus{State: metal3api.StateAvailable}}
		g.Expect(c.Status().Update(ctx, h)).To(Succeed())
		return h
	}
	get := func(g Gomega, o client.Object) client.Object {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
		return o
	}
	progress := func(g Gomega, h *metal3api.BareMetalHost) baseline.Progress {
		get(g, h)
		v, ok := h.Annotations[hostfleetv1alpha1.AnnotationRestore]
		return baseline.ProgressOf(v, ok)
	}
	event := func(g Gomega, host, reason, says string) {
		var events eventsv1.EventList
		g.Expect(c.List(ctx, &events, client.InNamespace("hosts"))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(HaveField("Regarding.Name", host), HaveField("Reason", reason), HaveField("Note", ContainSubstring(says)))))
	}
	// applied plays baremetal-operator having prepared the host: bios at
	// version, Secure Boot on, nothing more pending.
	applied := func(name, version string) {
		hfc := &metal3api.HostFirmwareComponents{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name}}
		g.Eventually(func() error {
			get(g, hfc)
			hfc.Status.Components[0].CurrentVersion = version
			hfc.Status.Updates = hfc.Spec.Updates
			meta.SetStatusCondition(&hfc.Status.Conditions, metav1.Condition{Type: string(metal3api.HostFirmwareComponentsChangeDetected), Status: metav1.ConditionFalse, Reason: "OK"})
			return c.Status().Update(ctx, hfc)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		hfs := &metal3api.HostFirmwareSettings{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name}}
		g.Eventually(func() error {
			get(g, hfs)
			hfs.Status.Settings["SecureBoot"] = "Enabled"
			return c.Status().Update(ctx, hfs)
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}

	b1, b2 := released("b1"), released("b2")
	t.Log("judged once available: baremetal-operator is asked for BIOS 1.2.3 and Secure Boot on; the hosts are never free meanwhile")
	for _, h := range []*metal3api.BareMetalHost{b1, b2} {
		g.Eventually(func(g Gomega) {
			g.Expect(progress(g, h).Phase).To(Equal(baseline.PhaseVerify))
			hfc := get(g, &metal3api.HostFirmwareComponents{ObjectMeta: h.ObjectMeta}).(*metal3api.HostFirmwareComponents)
			g.Expect(hfc.Spec.Updates).To(Equal([]metal3api.FirmwareUpdate{{Component: "bios", URL: images.URL + "/firmware/bios-1.2.3"}}), "its image verified first")
			hfs := get(g, &metal3api.HostFirmwareSettings{ObjectMeta: h.ObjectMeta}).(*metal3api.HostFirmwareSettings)
			g.Expect(hfs.Spec.Settings).To(Equal(metal3api.DesiredSettingsMap{"SecureBoot": intstr.FromString("Enabled")}))
			event(g, h.Name, "BaselineRestoring", "firmware bios behind: 0.9.0, baseline 1.2.3; BIOS setting SecureBoot behind: Disabled, baseline Enabled")
		}).WithTimeout(30 * time.Second).Should(Succeed())
		g.Expect(binder.Free(h)).To(BeFalse())
	}

	t.Log("b1: baremetal-operator applied both: free")
	applied("b1", "1.2.3")
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, b1).GetAnnotations()).NotTo(HaveKey(hostfleetv1alpha1.AnnotationRestore))
		g.Expect(binder.Free(b1)).To(BeTrue())
		event(g, "b1", "BaselineRestored", "restored to baselines r1 by baremetal-operator")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("b2: its flash did not take: held, with the reason")
	applied("b2", "0.9.0")
	g.Eventually(func(g Gomega) {
		p := progress(g, b2)
		g.Expect(p.Phase).To(Equal(baseline.PhaseHeld))
		reason, held := bmcdriver.Held(b2)
		g.Expect([]any{reason, held}).To(Equal([]any{hostfleetv1alpha1.ReasonRestoreFailed, true}))
		event(g, "b2", hostfleetv1alpha1.ReasonRestoreFailed, "still not as baselines r1 want after baremetal-operator applied the restore: firmware bios behind: 0.9.0")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(binder.Free(get(g, b2).(*metal3api.BareMetalHost))).To(BeFalse()) }).
		WithTimeout(2*time.Second).Should(Succeed(), "held, never free")
}
