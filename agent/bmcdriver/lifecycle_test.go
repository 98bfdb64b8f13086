package bmcdriver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	"github.com/hostfleet/hostfleet/e2e/emulators/ipmisim"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/setup"
)

func TestMain(m *testing.M) { planes.Main(m) }

// images serves */live.iso; anything else is 404.
func images(t *testing.T) *httptest.Server {
	s := redfish.ImageServer()
	t.Cleanup(s.Close)
	return s
}

type env struct {
	t   *testing.T
	g   *WithT
	ctx context.Context
	c   client.Client
	cfg *rest.Config
}

func (e env) host(name string, b *redfish.BMC, password string) *metal3api.BareMetalHost {
	e.g.Expect(e.c.Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name + "-bmc"},
		Data: map[string][]byte{"username": []byte("admin"), "password": []byte(password)}})).To(Succeed())
	scheme := "redfish-virtualmedia"
	if b.URL()[:5] == "http:" {
		scheme = "redfish-virtualmedia+http"
	}
	h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name,
		Annotations: map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}},
		Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: scheme + "://" + b.HostPort() + redfish.SystemPath,
			CredentialsName: name + "-bmc", DisableCertificateVerification: true}}}
	e.g.Expect(e.c.Create(e.ctx, h)).To(Succeed())
	return h
}

func (e env) get(g Gomega, h *metal3api.BareMetalHost) *metal3api.BareMetalHost {
	g.Expect(e.c.Get(e.ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
	return h
}

// update changes a host's spec or metadata, re-reading on conflict.
func (e env) update(h *metal3api.BareMetalHost, mut func(*metal3api.BareMetalHost)) {
	e.g.Eventually(func() error {
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(h), h); err != nil {
			return err
		}
		mut(h)
		return e.c.Update(e.ctx, h)
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

func (e env) state(h *metal3api.BareMetalHost, want metal3api.ProvisioningState) {
	e.t.Helper()
	e.g.Eventually(func(g Gomega) {
		e.get(g, h)
		g.Expect(h.Status.Provisioning.State).To(Equal(want), "error: %s %s", h.Status.ErrorType, h.Status.ErrorMessage)
		g.Expect(h.Status.OperationalStatus).To(Equal(metal3api.OperationalStatusOK), h.Status.ErrorMessage)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func (e env) failing(h *metal3api.BareMetalHost, kind metal3api.ErrorType, msg string) {
	e.t.Helper()
	e.g.Eventually(func(g Gomega) {
		e.get(g, h)
		g.Expect(h.Status.OperationalStatus).To(Equal(metal3api.OperationalStatusError))
		g.Expect(h.Status.ErrorType).To(Equal(kind))
		g.Expect(h.Status.ErrorMessage).To(ContainSubstring(msg))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func liveISO(url string) *metal3api.Image {
	return &metal3api.Image{URL: url, DiskFormat: ptr.To("live-iso")}
}

func start(t *testing.T) env {
	f := planes.ForTest(t, "infra")
	c := f.Plane("infra").Client
	f.ManagerForTest(t, "infra", func(mgr ctrl.Manager) error {
		return (&bmcdriver.Reconciler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Poll: 2 * time.Second, Power: fastPower,
			BMC: bmc.Options{Timeout: 3 * time.Second}}).SetupWithManager(context.Background(), mgr, setup.Options{Managed: mgr})
	})
	e := env{t: t, g: NewWithT(t), ctx: context.Background(), c: c, cfg: f.Plane("infra").Config}
	e.g.Expect(c.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())
	return e
}

func TestLifecycle(t *testing.T) {
	e := start(t)
	g := e.g
	img := images(t)
	hw := redfish.DefaultHardware("EMU-A")
	hw.GPUs = []redfish.GPU{{Manufacturer: "NVIDIA", Model: "L40S"}}
	b := redfish.Start(redfish.Options{TLS: true, Hardware: hw})
	defer b.Close()
	h := e.host("a", b, "password")

	t.Log("registering → inspecting → available, with HardwareData (its GPUs in hostfleet.io/gpus, its firmware in hostfleet.io/firmware)")
	e.state(h, metal3api.StateAvailable)
	g.Expect(h.Status.GoodCredentials.Reference.Name).To(Equal("a-bmc"))
	g.Expect(h.Status.HardwareDetails).NotTo(BeNil())
	g.Expect(h.Status.HardwareDetails.CPU.Count).To(Equal(32))
	hd := &metal3api.HardwareData{}
	g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: "hosts", Name: "a"}, hd)).To(Succeed())
	g.Expect(hd.Spec.HardwareDetails.NIC).To(ConsistOf(HaveField("MAC", "52:54:00:00:00:01")))
	g.Expect(hardware.OfData(hd).GPUs).To(Equal([]hostfleetv1alpha1.HardwareGPU{{Vendor: "NVIDIA", Model: "L40S"}}))
	g.Expect(hardware.OfData(hd).Firmware).To(Equal(map[string]string{"bios": "1.2.3", "bmc": "1.0.0", "nic:NIC.1": "22.31.6"}), "read out of band")
	g.Expect(hd.OwnerReferences).To(ContainElement(HaveField("Name", "a")))
	g.Expect(hd.Finalizers).To(ContainElement(hostfleetv1alpha1.BMCDriverFinalizer), "kept until the host goes, as baremetal-operator keeps its own")
	g.Expect(h.Status.PoweredOn).To(BeFalse())

	t.Log("provisioning a live ISO: virtual media, one-time CD boot, power on → provisioned")
	e.update(h, func(h *metal3api.BareMetalHost) {
		h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "HostClaim", Namespace: "tenant-a", Name: "c"}
		h.Spec.Image = liveISO(img.URL + "/live.iso")
		h.Spec.Online = true
	})
	e.state(h, metal3api.StateProvisioned)
	g.Expect(h.Status.PoweredOn).To(BeTrue())
	g.Expect(h.Status.Provisioning.Image.URL).To(Equal(img.URL + "/live.iso"))
	g.Expect(b.Power()).To(Equal("On"))
	inserted, url, size := b.Media()
	g.Expect([]any{inserted, url, size}).To(Equal([]any{true, img.URL + "/live.iso", int64(redfish.ImageSize)}))
	enabled, _ := b.BootOverride()
	g.Expect(enabled).To(Equal("Disabled"), "the one-time CD boot was used")
	g.Expect(b.Actions()).To(ContainElements("InsertMedia "+img.URL+"/live.iso", "PATCH Boot Once/Cd", "Reset On"))

	t.Log("a reboot annotation reboots once (soft: a soft power-off, then on) and is removed")
	e.update(h, func(h *metal3api.BareMetalHost) { h.Annotations[metal3api.RebootAnnotationPrefix] = "" })
	g.Eventually(func(g Gomega) {
		g.Expect(e.get(g, h).Annotations).NotTo(HaveKey(metal3api.RebootAnnotationPrefix))
		g.Expect(meta.IsStatusConditionTrue(h.Status.Conditions, hostfleetv1alpha1.ConditionPowerChanging)).To(BeFalse())
		g.Expect(b.Resets()).To(Equal([]string{"On", "GracefulShutdown", "On"}))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("online drives power")
	e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Online = false })
	g.Eventually(func(g Gomega) {
		g.Expect(e.get(g, h).Status.PoweredOn).To(BeFalse())
		g.Expect(b.Power()).To(Equal("Off"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	t.Log("power changed at the BMC is seen")
	b.SetPowerForTest("On")
	g.Eventually(func(g Gomega) {
		g.Expect(b.Power()).To(Equal("Off"), "spec.online is false: the agent powers it off again")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("deprovisioning: the image goes, the host is powered off, the media ejected, available again")
	e.update(h, func(h *metal3api.BareMetalHost) {
		h.Spec.Image, h.Spec.ConsumerRef, h.Spec.Online = nil, nil, true
	})
	e.state(h, metal3api.StateAvailable)
	g.Expect(h.Status.Provisioning.Image.URL).To(BeEmpty())
	inserted, _, _ = b.Media()
	g.Expect(inserted).To(BeFalse())
	g.Expect(b.Actions()).To(ContainElement("EjectMedia"))

	t.Log("a re-inspection replaces the HardwareData (a new UID, so every copy of it follows), never edits it")
	g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: "hosts", Name: "a"}, hd)).To(Succeed())
	oldUID := hd.UID
	e.update(h, func(h *metal3api.BareMetalHost) { h.Annotations[metal3api.InspectAnnotationPrefix] = "" })
	g.Eventually(func(g Gomega) {
		g.Expect(e.get(g, h).Annotations).NotTo(HaveKey(metal3api.InspectAnnotationPrefix), "state %s, error %s %s", h.Status.Provisioning.State, h.Status.ErrorType, h.Status.ErrorMessage)
		g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: "hosts", Name: "a"}, hd)).To(Succeed())
		g.Expect(hd.UID).NotTo(Equal(oldUID))
		g.Expect(hd.Finalizers).To(ContainElement(hostfleetv1alpha1.BMCDriverFinalizer))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func TestLifecycleFailures(t *testing.T) {
	e := start(t)
	g := e.g
	img := images(t)

	t.Log("wrong password: a registration error that says so; fixed, the host registers")
	wrong := redfish.Start(redfish.Options{})
	defer wrong.Close()
	hw := e.host("wrongpass", wrong, "nope")
	e.failing(hw, metal3api.RegistrationError, "refused the username and password in Secret hosts/wrongpass-bmc")
	g.Expect(hw.Status.Provisioning.State).To(Equal(metal3api.StateRegistering))
	g.Expect(hw.Status.ErrorCount).To(BeNumerically(">=", 1))
	s := &corev1.Secret{}
	g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: "hosts", Name: "wrongpass-bmc"}, s)).To(Succeed())
	s.Data["password"] = []byte("password")
	g.Expect(e.c.Update(e.ctx, s)).To(Succeed())
	e.state(hw, metal3api.StateAvailable)
	g.Expect(hw.Status.ErrorCount).To(Equal(0))

	t.Log("an unreachable BMC is told apart from bad credentials")
	gone := redfish.Start(redfish.Options{})
	gone.Close()
	hg := e.host("gone", gone, "password")
	e.failing(hg, metal3api.RegistrationError, "does not answer")

	t.Log("a BMC that answers 500s")
	broken := redfish.Start(redfish.Options{})
	defer broken.Close()
	broken.SetFaults(redfish.Faults{Status: http.StatusInternalServerError})
	hb := e.host("broken", broken, "password")
	e.failing(hb, metal3api.RegistrationError, "500")

	t.Log("the BMC goes down mid-provision: the BMC's fault, not the image's (a power management error), retried until it is back")
	flaky := redfish.Start(redfish.Options{})
	defer flaky.Close()
	hf := e.host("flaky", flaky, "password")
	e.state(hf, metal3api.StateAvailable)
	flaky.SetDown(true)
	e.update(hf, func(h *metal3api.BareMetalHost) {
		h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "HostClaim", Namespace: "tenant-a", Name: "f"}
		h.Spec.Image = liveISO(img.URL + "/live.iso")
		h.Spec.Online = true
	})
	e.failing(hf, metal3api.PowerManagementError, "does not answer")
	flaky.SetDown(false)
	e.state(hf, metal3api.StateProvisioned)

	t.Log("an image the BMC cannot fetch")
	h404 := redfish.Start(redfish.Options{})
	defer h404.Close()
	hm := e.host("missing", h404, "password")
	e.state(hm, metal3api.StateAvailable)
	e.update(hm, func(h *metal3api.BareMetalHost) {
		h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "HostClaim", Namespace: "tenant-a", Name: "m"}
		h.Spec.Image = liveISO(img.URL + "/missing.iso")
	})
	e.failing(hm, metal3api.ProvisioningError, "404")

	t.Log("an image that is not a live ISO")
	e.update(hm, func(h *metal3api.BareMetalHost) {
		h.Spec.Image = &metal3api.Image{URL: img.URL + "/disk.qcow2", Checksum: "x"}
	})
	e.failing(hm, metal3api.ProvisioningError, "live-ISO images only (set spec.image.format: live-iso)")

	t.Log("a host without the annotation is left to baremetal-operator")
	other := redfish.Start(redfish.Options{})
	defer other.Close()
	ho := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "not-ours"},
		Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "redfish+http://" + other.HostPort() + redfish.SystemPath,
			CredentialsName: "flaky-bmc"}}}
	g.Expect(e.c.Create(e.ctx, ho)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(e.get(g, ho).Status.Provisioning.State).To(BeEmpty())
	}).WithTimeout(3 * time.Second).Should(Succeed())
}

// TestIPMIHost: an ipmi:// host registers, has no inventory to inspect,
// follows spec.online, and cannot boot an ISO (no virtual media).
func TestIPMIHost(t *testing.T) {
	e := start(t)
	g := e.g
	sim, err := ipmisim.Start(t.TempDir(), "admin", "password")
	g.Expect(err).NotTo(HaveOccurred())
	defer sim.Close()
	g.Expect(e.c.Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "ipmi-bmc"},
		Data: map[string][]byte{"username": []byte("admin"), "password": []byte("password")}})).To(Succeed())
	h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "ipmi",
		Annotations: map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}},
		Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "ipmi://" + sim.Address(), CredentialsName: "ipmi-bmc"}}}
	g.Expect(e.c.Create(e.ctx, h)).To(Succeed())
	e.state(h, metal3api.StateAvailable)
	g.Expect(h.Status.HardwareDetails).To(BeNil(), "a BMC without a FRU inventory reports no hardware")

	t.Log("a BMC with a FRU inventory: the system's manufacturer, product and serial, which a hardware requirement can ask for")
	withFRU, err := ipmisim.Start(t.TempDir(), "admin", "password", ipmisim.WithFRU("Supermicro", "SYS-1029U-TRT", "S123"))
	g.Expect(err).NotTo(HaveOccurred())
	defer withFRU.Close()
	fru := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "ipmi-fru", Annotations: h.Annotations},
		Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "ipmi://" + withFRU.Address(), CredentialsName: "ipmi-bmc"}}}
	g.Expect(e.c.Create(e.ctx, fru)).To(Succeed())
	e.state(fru, metal3api.StateAvailable)
	g.Expect(fru.Status.HardwareDetails).NotTo(BeNil())
	g.Expect(fru.Status.HardwareDetails.SystemVendor).To(Equal(metal3api.HardwareSystemVendor{Manufacturer: "Supermicro", ProductName: "SYS-1029U-TRT", SerialNumber: "S123"}))
	hd := &metal3api.HardwareData{}
	g.Expect(e.c.Get(e.ctx, client.ObjectKeyFromObject(fru), hd)).To(Succeed())
	req, err := hardware.Parse(`host.system.manufacturer == "Supermicro" && host.system.product.startsWith("SYS-1029")`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(req.Meets(hardware.OfData(hd))).To(BeTrue())
	req, err = hardware.Parse(`host.cpu.count >= 1`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(req.Meets(hardware.OfData(hd))).To(BeFalse(), "IPMI tells no CPUs: a requirement on them is not met")

	t.Log("a chassis that takes 2 s to power on: IPMI reports no change under way, so the old state is read until it lands; one command")
	g.Expect(sim.SetLatency(2 * time.Second)).To(Succeed())
	e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Online = true })
	g.Eventually(func(g Gomega) {
		e.get(g, h)
		if h.Status.PoweredOn {
			NewWithT(t).Expect(sim.Power()).To(BeTrue(), "the host says on: the BMC reported it")
		}
		g.Expect(h.Status.PoweredOn).To(BeTrue())
		g.Expect(meta.IsStatusConditionTrue(h.Status.Conditions, hostfleetv1alpha1.ConditionPowerChanging)).To(BeFalse())
	}).WithPolling(50 * time.Millisecond).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(sim.Log()).To(Equal([]string{"power 1"}), "one power-on")

	e.update(h, func(h *metal3api.BareMetalHost) {
		h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "HostClaim", Namespace: "tenant-a", Name: "i"}
		h.Spec.Image = liveISO("http://127.0.0.1:1/live.iso")
	})
	e.failing(h, metal3api.ProvisioningError, "virtual media needs Redfish")
}

// TestDeleteDeprovisions: deleting a provisioned host powers it off and
// ejects its media before it goes.
func TestDeleteDeprovisions(t *testing.T) {
	e := start(t)
	g := e.g
	img := images(t)
	b := redfish.Start(redfish.Options{})
	defer b.Close()
	h := e.host("doomed", b, "password")
	e.state(h, metal3api.StateAvailable)
	g.Expect(h.Finalizers).To(ContainElement(hostfleetv1alpha1.BMCDriverFinalizer))
	e.update(h, func(h *metal3api.BareMetalHost) {
		h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "HostClaim", Namespace: "tenant-a", Name: "d"}
		h.Spec.Image = liveISO(img.URL + "/live.iso")
		h.Spec.Online = true
	})
	e.state(h, metal3api.StateProvisioned)
	g.Expect(b.Power()).To(Equal("On"))
	g.Expect(e.c.Delete(e.ctx, h)).To(Succeed())
	g.Eventually(func() error { return e.c.Get(e.ctx, client.ObjectKeyFromObject(h), h) }).WithTimeout(30 * time.Second).
		Should(Satisfy(apierrors.IsNotFound))
	hd := &metal3api.HardwareData{}
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: "hosts", Name: "doomed"}, hd); err == nil {
		g.Expect(hd.Finalizers).NotTo(ContainElement(hostfleetv1alpha1.BMCDriverFinalizer), "the host went: its HardwareData may go")
	} else {
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	}
	g.Expect(b.Power()).To(Equal("Off"))
	inserted, _, _ := b.Media()
	g.Expect(inserted).To(BeFalse())
}

// fastPower is a power timing for emulators that change power at once or
// within seconds: a restart that never leaves On has landed after 1 s.
var fastPower = bmcdriver.Timing{Wait: 10 * time.Second, SoftOff: 10 * time.Second, Settle: time.Second, Poll: 200 * time.Millisecond}
