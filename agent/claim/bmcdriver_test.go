package claim_test

import (
	"context"
	"encoding/base64"
	"net/http/httptest"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// drivenScene is a hub and infra-1 with no baremetal-operator: one host,
// named name, driven by the agent through an emulated Redfish BMC; an
// image server whose only image is */live.iso; the agent running.
func drivenScene(t *testing.T, g Gomega, name string, i int, latency ...redfish.Latency) (*scene, *redfish.BMC, *metal3api.BareMetalHost, *httptest.Server) {
	t.Helper()
	s := newScene(t, g, false)
	iso := redfish.ImageServer()
	t.Cleanup(iso.Close)
	// NICs only as the system's EthernetInterfaces, as most BMCs have them.
	o := redfish.Options{Username: "admin", Password: "secret", EthernetInterfacesOnly: true}
	if len(latency) > 0 {
		o.Latency = latency[0]
	}
	b := redfish.Start(o)
	t.Cleanup(b.Close)
	h := bmh(name, i, nil)
	h.Annotations = map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}
	h.Spec.BMC.Address = "redfish-virtualmedia+http://" + b.HostPort() + redfish.SystemPath
	mustCreate(t, s.infra, h)
	startAgent(t, s.f, "infra-1", 2, func(o *app.Options) { o.BMCPoll = 2 * time.Second; o.BMCTimeout = 5 * time.Second })
	return s, b, h, iso
}

// TestBMCDriverServesClaims: no baremetal-operator; the agent drives a host
// through its (emulated Redfish) BMC, binds a hub claim to it, boots the
// claim's live ISO, reflects Ready and HardwareData, and releases the host
// through deprovisioning when the claim goes.
func TestBMCDriverServesClaims(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s, b, h, iso := drivenScene(t, g, "rf0", 0)
	hub, infra := s.hub, s.infra

	c := hubClaim("live", "infra-1", nil)
	c.Spec.PoweredOn = true
	c.Spec.Image = &metal3api.Image{URL: iso.URL + "/live.iso", DiskFormat: ptr.To("live-iso")}
	mustCreate(t, hub, c)
	key := client.ObjectKeyFromObject(c)
	start := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		ready := condition(c, hostfleetv1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(condition(c, hostfleetv1alpha1.ConditionAssociated).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionProvisioned).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Status.PoweredOn).To(BeTrue())
		g.Expect(c.Status.HardwareData).NotTo(BeNil())
	}).WithTimeout(60 * time.Second).Should(Succeed())
	t.Logf("registered, inspected, bound, provisioned and Ready in %s", time.Since(start).Round(100*time.Millisecond))
	hd := &metal3api.HardwareData{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: c.Status.HardwareData.Name}, hd)).To(Succeed())
	g.Expect(hd.Spec.HardwareDetails.SystemVendor).To(Equal(metal3api.HardwareSystemVendor{Manufacturer: "Hostfleet", ProductName: "Emulated R1", SerialNumber: "EMU0001"}),
		"the BMC's inventory reached the hub")
	g.Expect(hd.Spec.HardwareDetails.NIC).To(Equal([]metal3api.NIC{{Name: "eno1", MAC: "52:54:00:00:00:01", SpeedGbps: 10}}),
		"NICs from the system's EthernetInterfaces")
	g.Expect(b.Power()).To(Equal("On"))
	inserted, url, _ := b.Media()
	g.Expect(inserted).To(BeTrue())
	g.Expect(url).To(Equal(iso.URL + "/live.iso"))

	t.Log("the BMC's password is changed: Ready says HostError, then Ready again once the Secret has it")
	b.SetPasswordInBand("admin", "rotated")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		ready := condition(c, hostfleetv1alpha1.ConditionReady)
		g.Expect(ready.Reason).To(Equal(hostfleetv1alpha1.ReasonHostError), ready.Message)
		g.Expect(ready.Message).To(ContainSubstring("host hosts/rf0 cannot be managed (registration error)"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: h.Spec.BMC.CredentialsName}}
	g.Expect(infra.Patch(ctx, secret, client.RawPatch(types.MergePatchType,
		[]byte(`{"data":{"password":"`+base64.StdEncoding.EncodeToString([]byte("rotated"))+`"}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("the claim goes: the host is deprovisioned (off, media ejected) and available again")
	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
		g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateAvailable))
		g.Expect(b.Power()).To(Equal("Off"))
		inserted, _, _ := b.Media()
		g.Expect(inserted).To(BeFalse())
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Eventually(func() error { return hub.Get(ctx, key, &metal3api.HostClaim{}) }).WithTimeout(30*time.Second).
		Should(Satisfy(apierrors.IsNotFound), "the claim's finalizer is removed once the host is released")
}

// TestClaimFollowsASlowBMC: a BMC that takes seconds to change power. The
// claim is never Ready on a power state the BMC has not reported: while a
// change is under way, Ready is False with reason PowerChanging and says
// what is under way since when; each change is one BMC command.
func TestClaimFollowsASlowBMC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s, b, _, iso := drivenScene(t, g, "slow0", 0, redfish.Latency{PowerChange: 3 * time.Second, MediaInsert: time.Second, Inventory: time.Second})
	hub := s.hub

	c := hubClaim("slow", "infra-1", nil)
	c.Spec.PoweredOn = true
	c.Spec.Image = &metal3api.Image{URL: iso.URL + "/live.iso", DiskFormat: ptr.To("live-iso")}
	mustCreate(t, hub, c)
	key := client.ObjectKeyFromObject(c)
	// ready waits for Ready on the claim's current spec and checks, at
	// every read, that a Ready claim's power is what the BMC reports (the
	// claim is read first: the BMC cannot change since without a command).
	ready := func(phase string) (sawChanging bool) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			g.Expect(hub.Get(ctx, key, c)).To(Succeed())
			bmcPower := b.Power()
			r := condition(c, hostfleetv1alpha1.ConditionReady)
			if r.ObservedGeneration == c.Generation && r.Status == metav1.ConditionTrue {
				NewWithT(t).Expect(bmcPower).To(Equal(map[bool]string{true: "On", false: "Off"}[c.Spec.PoweredOn]),
					"%s: the claim is Ready powered %v: the BMC must report it", phase, c.Spec.PoweredOn)
			}
			if r.Reason == hostfleetv1alpha1.ReasonPowerChanging {
				sawChanging = true
				g.Expect(r.Message).To(MatchRegexp(`^host hosts/slow0 is (((powering on|powering off|rebooting) since \S+: \w+ sent once, last at \S+?(, to provision)?; the BMC reports \w+)|rebooting: requested, not yet carried out)$`))
			}
			g.Expect(r.ObservedGeneration).To(Equal(c.Generation))
			g.Expect(r.Status).To(Equal(metav1.ConditionTrue), r.Message)
		}).WithPolling(50 * time.Millisecond).WithTimeout(90 * time.Second).Should(Succeed())
		return sawChanging
	}
	update := func(mut func(*metal3api.HostClaim)) { updateClaim(g, hub, c, mut) }

	ready("provisioning")
	g.Expect(b.Resets()).To(Equal([]string{"On"}))

	t.Log("powered off: Ready False (PowerChanging) until the BMC reports Off; one command")
	update(func(c *metal3api.HostClaim) { c.Spec.PoweredOn = false })
	g.Expect(ready("power off")).To(BeTrue(), "the claim said a power change was under way")
	g.Expect(c.Status.PoweredOn).To(BeFalse())
	g.Expect(b.Resets()).To(Equal([]string{"On", "GracefulShutdown"}))

	t.Log("powered on again")
	update(func(c *metal3api.HostClaim) { c.Spec.PoweredOn = true })
	g.Expect(ready("power on")).To(BeTrue())
	g.Expect(b.Resets()).To(Equal([]string{"On", "GracefulShutdown", "On"}))

	t.Log(`a hard reboot: one ForceRestart, and the claim not Ready until the BMC reports the host on again`)
	update(func(c *metal3api.HostClaim) {
		c.Annotations[metal3api.RebootAnnotationPrefix] = `{"mode":"hard"}`
	})
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Reason).To(Equal(hostfleetv1alpha1.ReasonPowerChanging))
	}).WithPolling(20 * time.Millisecond).WithTimeout(20 * time.Second).Should(Succeed())
	ready("reboot")
	g.Expect(b.Resets()).To(Equal([]string{"On", "GracefulShutdown", "On", "ForceRestart"}))

	t.Log("the image goes (deprovisioned: ForceOff), the host stays claimed powered on: a power-only claim")
	update(func(c *metal3api.HostClaim) { c.Spec.Image = nil })
	ready("power only")
	g.Expect(b.Resets()[4:]).To(Equal([]string{"ForceOff", "On"}))

	t.Log("released: the host is free only once its BMC reports it off")
	infra := s.infra
	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: "slow0"}, h)).To(Succeed())
	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
		bmcPower := b.Power() // after the read: it cannot turn on again without a command
		if h.Spec.ConsumerRef == nil {
			NewWithT(t).Expect(bmcPower).To(Equal("Off"), "a released host's BMC reports it off")
		}
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
	}).WithPolling(50 * time.Millisecond).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(b.Resets()[6:]).To(Equal([]string{"GracefulShutdown"}), "a power-only host is shut down softly")
	g.Eventually(func() error { return hub.Get(ctx, key, &metal3api.HostClaim{}) }).WithTimeout(30 * time.Second).
		Should(Satisfy(apierrors.IsNotFound))
}
