package bmcdriver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	"github.com/hostfleet/hostfleet/agent/firmwareimage"
	"github.com/hostfleet/hostfleet/agent/metrics"
	"github.com/hostfleet/hostfleet/e2e/emulators/lanplus"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// TestReleaseGate: while a claim holds a host (bound before the fleet had
// a baseline), its tenant, root on the host, adds a BMC account in-band, turns Secure Boot off and flashes an
// older BIOS. On release each is found drifted from what inspection read,
// and restored out of band (the
// account removed, the setting staged and applied at a boot, the BIOS
// flashed through SimpleUpdate and its task followed) before the host is
// free again; until then it is never free. A second tenant does it again,
// drifted from what the host had when freed; the baseline's image is no
// firmware, so the flash fails and the host is held with the reason,
// until its administrator fixes the baseline (an image that does not match
// its checksum is never flashed) and removes the annotation.
func TestReleaseGate(t *testing.T) {
	f := planes.ForTest(t, "infra")
	c := f.Plane("infra").Client
	img := images(t)
	var mu sync.Mutex
	fb := hostfleetv1alpha1.FirmwareBaseline{ObjectMeta: metav1.ObjectMeta{Name: "emu"}, Spec: hostfleetv1alpha1.FirmwareBaselineSpec{
		Hardware:     `host.system.manufacturer == "Hostfleet"`,
		Components:   map[string]hostfleetv1alpha1.FirmwareImage{"bios": {Version: "1.2.3", URL: img.URL + "/firmware/bios-1.2.3", Checksum: digest(redfish.FirmwareImage("1.2.3"))}},
		BIOSSettings: map[string]string{"SecureBoot": "Enabled"},
		BMCAccounts:  &hostfleetv1alpha1.BMCAccountPolicy{}}}
	// The administrator writes the baseline once the first claim holds
	// the host.
	written := false
	baselines := func(context.Context) ([]hostfleetv1alpha1.FirmwareBaseline, error) {
		mu.Lock()
		defer mu.Unlock()
		if !written {
			return nil, nil
		}
		return []hostfleetv1alpha1.FirmwareBaseline{*fb.DeepCopy()}, nil
	}
	f.ManagerForTest(t, "infra", func(mgr ctrl.Manager) error {
		return (&bmcdriver.Reconciler{Client: mgr.GetClient(), Poll: 2 * time.Second, Power: fastPower, Baselines: baselines,
			Images: &firmwareimage.Checker{}, Eraser: bmcdriver.Eraser{Image: img.URL + "/erase.iso"},
			Recorder: mgr.GetEventRecorder("hostfleet-agent"), BMC: bmc.Options{Timeout: 5 * time.Second}}).
			SetupWithManager(context.Background(), mgr, setup.Options{Managed: mgr})
	})
	e := env{t: t, g: NewWithT(t), ctx: context.Background(), c: c}
	g := e.g
	g.Expect(c.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())
	b := redfish.Start(redfish.Options{TLS: true, UpdateTime: time.Hour, Erase: 100 * time.Millisecond})
	defer b.Close()
	h := e.host("a", b, "password")
	e.state(h, metal3api.StateAvailable)
	g.Expect(meta.FindStatusCondition(h.Status.Conditions, bmcdriver.ConditionBaseline)).To(BeNil(), "never released: never judged")
	g.Expect(h.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationBaselineObserved, ContainSubstring(`"Accounts":["admin"]`)),
		"what a tenant could change, as inspected: what the first claim changes is drifted")

	claimAndRelease := func(erase hostfleetv1alpha1.EraseMode, tenant func()) {
		t.Helper()
		e.update(h, func(h *metal3api.BareMetalHost) {
			if erase != "" {
				h.Annotations[hostfleetv1alpha1.AnnotationErase] = string(erase)
			}
			h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "HostClaim", Namespace: "tenant-a", Name: "c"}
			h.Spec.Image, h.Spec.Online = liveISO(img.URL+"/live.iso"), true
		})
		e.state(h, metal3api.StateProvisioned)
		tenant()
		e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Image, h.Spec.ConsumerRef, h.Spec.Online = nil, nil, false })
	}
	baseline := func(g Gomega) *metav1.Condition {
		c := meta.FindStatusCondition(e.get(g, h).Status.Conditions, bmcdriver.ConditionBaseline)
		g.Expect(c).NotTo(BeNil())
		return c
	}
	event := func(g Gomega, reason, says string) {
		var events eventsv1.EventList
		g.Expect(c.List(e.ctx, &events, client.InNamespace("hosts"))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(HaveField("Regarding.Name", "a"), HaveField("Reason", reason), HaveField("Note", ContainSubstring(says)))))
	}

	t.Log("the tenant adds a BMC account, turns Secure Boot off and flashes BIOS 0.9.0; released, the host is erased, then each is found and restored")
	claimAndRelease(hostfleetv1alpha1.EraseFull, func() {
		mu.Lock()
		written = true
		mu.Unlock()
		b.AddAccountInBand("ghost", "boo")
		b.SetBIOSInBand("SecureBoot", "Disabled")
		g.Expect(b.FlashInBand("BIOS", "0.9.0")).To(Succeed())
		t.Log("its claim drops the image first: deprovisioned, still bound, the host is not judged (it is still the tenant's)")
		e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Image = nil })
		g.Eventually(func(g Gomega) {
			g.Expect(e.get(g, h).Status.Provisioning.State).To(Equal(metal3api.StateAvailable))
			g.Expect(baseline(g).Reason).To(Equal(bmcdriver.ReasonBaselineInUse))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		g.Expect(b.Accounts()).To(ContainElement("ghost"))
	})
	g.Eventually(func(g Gomega) {
		g.Expect(baseline(g).Reason).To(Equal(bmcdriver.ReasonRestoring))
		g.Expect(meta.FindStatusCondition(h.Status.Conditions, bmcdriver.ConditionErasing)).To(HaveField("Reason", bmcdriver.ReasonErased), "erased first")
		g.Expect(b.Accounts()).To(Equal([]string{"admin"}), "removed at once")
		_, pending := b.BIOS()
		g.Expect(pending).To(Equal(map[string]string{"SecureBoot": "Enabled"}), "staged for its next boot")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(binder.Free(e.get(g, h))).To(BeFalse(), "never free while its BIOS is flashed")
		g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateDeprovisioning))
	}).WithTimeout(2 * time.Second).Should(Succeed())
	b.FinishUpdates()
	e.state(h, metal3api.StateAvailable)
	g.Expect(binder.Free(h)).To(BeTrue())
	g.Expect(b.Firmware()).To(HaveKeyWithValue("BIOS", "1.2.3"))
	current, _ := b.BIOS()
	g.Expect(current).To(HaveKeyWithValue("SecureBoot", "Enabled"), "applied at the boot the driver gave it")
	c1 := baseline(g)
	g.Expect(c1.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c1.Message).To(And(ContainSubstring("restored to baselines emu"), ContainSubstring("BMC account ghost drifted: enabled, baseline removed, absent when bound"),
		ContainSubstring("BIOS setting SecureBoot drifted: Disabled, baseline Enabled, Enabled when bound"), ContainSubstring("firmware bios drifted: 0.9.0, baseline 1.2.3, 1.2.3 when bound")))
	g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationRestore))
	g.Eventually(func(g Gomega) { event(g, "BaselineRestored", "firmware bios drifted") }).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(strings.Join(b.Actions(), "\n")).NotTo(ContainSubstring("password"))

	t.Log("the next tenant does it again, the baseline's image is no firmware: the flash fails and the host is held, saying why")
	mu.Lock()
	bios := fb.Spec.Components["bios"]
	bios.URL, bios.Checksum = img.URL+"/live.iso", digest(make([]byte, redfish.ImageSize))
	fb.Spec.Components["bios"] = bios
	mu.Unlock()
	claimAndRelease("", func() {
		b.AddAccountInBand("ghost", "boo")
		g.Expect(b.FlashInBand("BIOS", "0.9.0")).To(Succeed())
	})
	g.Eventually(func(g Gomega) { g.Expect(baseline(g).Reason).To(Equal(bmcdriver.ReasonRestoring)) }).WithTimeout(30 * time.Second).Should(Succeed())
	b.FinishUpdates()
	g.Eventually(func(g Gomega) {
		c := baseline(g)
		g.Expect(c.Reason).To(Equal(bmcdriver.ReasonRestoreFailed))
		g.Expect(c.Message).To(ContainSubstring("the update of bios failed: the image is not firmware for BIOS"))
		g.Expect(h.Status.ErrorMessage).To(ContainSubstring("held out of the pool"))
		reason, held := bmcdriver.Held(h)
		g.Expect([]any{reason, held}).To(Equal([]any{bmcdriver.ReasonRestoreFailed, true}))
		event(g, bmcdriver.ReasonRestoreFailed, "the update of bios failed")
		g.Expect(heldMetric(g, e.c)).To(Equal(map[string]float64{bmcdriver.ReasonRestoreFailed: 1}))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(b.Accounts()).To(Equal([]string{"admin"}), "the account it added was drifted from what the host had when freed, and is gone")
	g.Consistently(func(g Gomega) {
		g.Expect(binder.Free(e.get(g, h))).To(BeFalse())
		g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateDeprovisioning))
	}).WithTimeout(2*time.Second).Should(Succeed(), "held, never free")

	t.Log("the administrator fixes the image's URL but not its checksum: the agent verifies the image before any flash, and holds the host")
	mu.Lock()
	bios.URL = img.URL + "/firmware/bios-1.2.3"
	fb.Spec.Components["bios"] = bios
	mu.Unlock()
	e.update(h, func(h *metal3api.BareMetalHost) { delete(h.Annotations, hostfleetv1alpha1.AnnotationRestore) })
	g.Eventually(func(g Gomega) {
		c := baseline(g)
		g.Expect(c.Reason).To(Equal(bmcdriver.ReasonRestoreFailed))
		g.Expect(c.Message).To(ContainSubstring("the image of bios 1.2.3: the image does not match its checksum: " + bios.URL + " has sha256 " + strings.TrimPrefix(digest(redfish.FirmwareImage("1.2.3")), "sha256:")))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(b.Firmware()).To(HaveKeyWithValue("BIOS", "0.9.0"), "nothing flashed")

	t.Log("then the checksum too, and removes hostfleet.io/restore: judged again, restored, free")
	mu.Lock()
	bios.Checksum = digest(redfish.FirmwareImage("1.2.3"))
	fb.Spec.Components["bios"] = bios
	mu.Unlock()
	e.update(h, func(h *metal3api.BareMetalHost) { delete(h.Annotations, hostfleetv1alpha1.AnnotationRestore) })
	g.Eventually(func(g Gomega) { g.Expect(baseline(g).Reason).To(Equal(bmcdriver.ReasonRestoring)) }).WithTimeout(30 * time.Second).Should(Succeed())
	b.FinishUpdates()
	e.state(h, metal3api.StateAvailable)
	g.Expect(baseline(g).Message).To(ContainSubstring("firmware bios drifted: 0.9.0, baseline 1.2.3, 1.2.3 when bound"))
	g.Expect(b.Firmware()).To(HaveKeyWithValue("BIOS", "1.2.3"))
	g.Expect(heldMetric(g, c)).To(BeEmpty())

	t.Log("a claim that only powers its host on (no image) is judged too: the host ran what its tenant booted")
	e.update(h, func(h *metal3api.BareMetalHost) {
		h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "HostClaim", Namespace: "tenant-a", Name: "d"}
		h.Spec.Online = true
	})
	g.Eventually(func(g Gomega) {
		g.Expect(baseline(g).Reason).To(Equal(bmcdriver.ReasonBaselineInUse))
		g.Expect(b.Power()).To(Equal("On"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	b.AddAccountInBand("ghost2", "boo")
	e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.ConsumerRef, h.Spec.Online = nil, false })
	g.Eventually(func(g Gomega) {
		c := baseline(g)
		g.Expect(c.Reason).To(Equal(bmcdriver.ReasonBaselineCurrent))
		g.Expect(c.Message).To(ContainSubstring("BMC account ghost2 drifted: enabled, baseline removed, absent when bound"))
		g.Expect(binder.Free(h)).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(b.Accounts()).To(Equal([]string{"admin"}))
}

// digest is a baseline's checksum of an image.
func digest(image []byte) string {
	sum := sha256.Sum256(image)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// heldMetric is hostfleet_agent_held_hosts by reason, as the agent's
// host collector reports it from the hosts.
func heldMetric(g Gomega, c client.Client) map[string]float64 {
	reg := prometheus.NewPedanticRegistry()
	g.Expect(reg.Register(metrics.NewHostCollector(c, "c1"))).To(Succeed())
	mfs, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "hostfleet_agent_held_hosts" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// TestReleaseGateOnIPMI: an IPMI host's tenant adds an administrator to its
// BMC in-band (ipmitool user set name/password, user enable); on release
// the user is disabled before the host is free, the driver's own account
// untouched. A baseline that also wants a BIOS setting holds the host:
// IPMI cannot read BIOS settings, so the host cannot be verified.
func TestReleaseGateOnIPMI(t *testing.T) {
	f := planes.ForTest(t, "infra")
	c := f.Plane("infra").Client
	var mu sync.Mutex
	fb := hostfleetv1alpha1.FirmwareBaseline{ObjectMeta: metav1.ObjectMeta{Name: "accounts"}, Spec: hostfleetv1alpha1.FirmwareBaselineSpec{
		BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{}}}
	baselines := func(context.Context) ([]hostfleetv1alpha1.FirmwareBaseline, error) {
		mu.Lock()
		defer mu.Unlock()
		return []hostfleetv1alpha1.FirmwareBaseline{*fb.DeepCopy()}, nil
	}
	f.ManagerForTest(t, "infra", func(mgr ctrl.Manager) error {
		return (&bmcdriver.Reconciler{Client: mgr.GetClient(), Poll: 2 * time.Second, Power: fastPower, Baselines: baselines,
			Recorder: mgr.GetEventRecorder("hostfleet-agent"), BMC: bmc.Options{Timeout: 5 * time.Second}}).
			SetupWithManager(context.Background(), mgr, setup.Options{Managed: mgr})
	})
	e := env{t: t, g: NewWithT(t), ctx: context.Background(), c: c}
	g := e.g
	g.Expect(c.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())
	b, err := lanplus.Start("admin", "secret")
	g.Expect(err).NotTo(HaveOccurred())
	defer b.Close()
	g.Expect(c.Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "i-bmc"},
		Data: map[string][]byte{"username": []byte("admin"), "password": []byte("secret")}})).To(Succeed())
	h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "i",
		Annotations: map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}},
		Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "ipmi://" + b.Address(), CredentialsName: "i-bmc"}}}
	g.Expect(c.Create(e.ctx, h)).To(Succeed())
	e.state(h, metal3api.StateAvailable)
	g.Expect(h.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationBaselineObserved, ContainSubstring(`"Accounts":["admin"]`)))
	baseline := func(g Gomega) *metav1.Condition {
		c := meta.FindStatusCondition(e.get(g, h).Status.Conditions, bmcdriver.ConditionBaseline)
		g.Expect(c).NotTo(BeNil())
		return c
	}
	useAndRelease := func(tenant func()) {
		t.Helper()
		e.update(h, func(h *metal3api.BareMetalHost) {
			h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "HostClaim", Namespace: "tenant-a", Name: "c"}
			h.Spec.Online = true
		})
		g.Eventually(func(g Gomega) {
			g.Expect(baseline(g).Reason).To(Equal(bmcdriver.ReasonBaselineInUse))
			g.Expect(b.Power()).To(BeTrue())
		}).WithTimeout(30 * time.Second).Should(Succeed())
		tenant()
		e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.ConsumerRef, h.Spec.Online = nil, false })
	}

	t.Log("the tenant adds user ghost in-band; released, ghost is disabled and the host is free")
	useAndRelease(func() {
		b.SetUserInBand(lanplus.User{ID: 5, Name: "ghost", Password: "boo", Enabled: true, Privilege: 4})
	})
	g.Eventually(func(g Gomega) {
		c := baseline(g)
		g.Expect(c.Reason).To(Equal(bmcdriver.ReasonBaselineCurrent))
		g.Expect(c.Message).To(ContainSubstring("BMC account ghost drifted: enabled, baseline removed, absent when bound"))
		g.Expect(binder.Free(h)).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(b.Users()).To(ConsistOf(
		lanplus.User{ID: 2, Name: "admin", Password: "secret", Enabled: true, Privilege: 4},
		lanplus.User{ID: 5, Name: "ghost", Password: "boo", Enabled: false, Privilege: 4}), "disabled; the driver's own account as it was")

	t.Log("a baseline that wants a BIOS setting: IPMI cannot read it, the host is held as unverifiable")
	mu.Lock()
	fb.Spec.BIOSSettings = map[string]string{"SecureBoot": "Enabled"}
	mu.Unlock()
	useAndRelease(func() {})
	g.Eventually(func(g Gomega) {
		c := baseline(g)
		g.Expect(c.Reason).To(Equal(bmcdriver.ReasonUnverifiable))
		g.Expect(c.Message).To(ContainSubstring("BIOS setting SecureBoot"))
		g.Expect(binder.Free(h)).To(BeFalse())
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
