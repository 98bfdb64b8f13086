package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	"github.com/hostfleet/hostfleet/e2e/emulators/ipmisim"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestEraseOnRelease: tenant a erases Metadata at least, and its claims ask
// Full. A host the agent drives over Redfish boots the erase image by
// virtual media when its claim goes, and one over IPMI boots it from the
// network: neither is bound again until it has powered itself off. An erase
// image that never finishes fails the erase and keeps its host out of the
// pool, with its state on the host, until its administrator removes the
// erase. A host baremetal-operator serves gets automatedCleaningMode
// metadata when bound, and is never bound to a claim that asks Full.
func TestEraseOnRelease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub, infra := servedScene(t, hostfleetv1alpha1.ServedTenant{Erase: hostfleetv1alpha1.EraseMetadata})
	iso := redfish.ImageServer()
	t.Cleanup(iso.Close)
	// The agent sees an erase as the host going On, then Off by itself.
	// A real erase takes minutes, so the agent always reads it On; the
	// emulated ones last 5 s, and end only once their On was read (on a
	// loaded machine reads took longer than 5 s), within the 30 s timeout.
	const eraseTakes = 5 * time.Second
	erasing := redfish.Start(redfish.Options{Username: "admin", Password: "secret", Erase: eraseTakes})
	t.Cleanup(erasing.Close)
	hanging := redfish.Start(redfish.Options{Username: "admin", Password: "secret", EraseHangs: true})
	t.Cleanup(hanging.Close)
	sim, err := ipmisim.Start(t.TempDir(), "admin", "secret")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(sim.Close)
	g.Expect(sim.EraseByNetwork(eraseTakes)).To(Succeed())
	driven := func(name, addr string, i int) {
		h := bmh(name, i, map[string]string{"name": name})
		h.Annotations = map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}
		h.Spec.BMC.Address = addr
		mustCreate(t, infra, h)
	}
	driven("rf-erases", "redfish-virtualmedia+http://"+erasing.HostPort()+redfish.SystemPath, 0)
	driven("rf-hangs", "redfish-virtualmedia+http://"+hanging.HostPort()+redfish.SystemPath, 1)
	driven("ipmi", "ipmi://"+sim.Address(), 2)
	for i, n := range []string{"served", "served-2"} {
		served := bmh(n, 3+i, map[string]string{"name": n})
		mustCreate(t, infra, served)
		served.Status.Provisioning.State, served.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, served)).To(Succeed())
	}
	startAgent(t, f, "infra-1", 4, func(o *app.Options) {
		o.BMCPoll, o.BMCTimeout = time.Second, 5*time.Second
		o.EraseImage, o.ErasePXE, o.EraseTimeout = iso.URL+"/erase.iso", true, 6*eraseTakes
	})
	for _, n := range []string{"rf-erases", "rf-hangs", "ipmi"} {
		waitAvailable(g, infra, n)
	}

	claimFor := func(name, host string, full bool) *metal3api.HostClaim {
		c := hubClaim(name, "infra-1", map[string]string{"name": host})
		c.Spec.PoweredOn = true
		if host != "ipmi" && host != "served" && host != "served-2" {
			c.Spec.Image = &metal3api.Image{URL: iso.URL + "/live.iso", DiskFormat: ptr.To("live-iso")}
		}
		if full {
			c.Annotations[hostfleetv1alpha1.AnnotationErase] = string(hostfleetv1alpha1.EraseFull)
		}
		mustCreate(t, hub, c)
		return c
	}
	bound := func(g Gomega, c *metal3api.HostClaim) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.BareMetalHost).NotTo(BeNil(), "%s is bound", c.Name)
	}
	host := func(g Gomega, name string) *metal3api.BareMetalHost {
		h := &metal3api.BareMetalHost{}
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: name}, h)).To(Succeed())
		return h
	}
	claims := []*metal3api.HostClaim{claimFor("on-rf", "rf-erases", true), claimFor("on-hang", "rf-hangs", true), claimFor("on-ipmi", "ipmi", true),
		claimFor("on-served", "served", false)}
	fullOnServed := claimFor("full-on-served", "served-2", true)
	g.Eventually(func(g Gomega) {
		for _, c := range claims {
			bound(g, c)
		}
		for _, n := range []string{"rf-erases", "rf-hangs", "ipmi"} {
			g.Expect(host(g, n).Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationErase, "Full"), "%s carries the erase its release requires", n)
		}
		g.Expect(host(g, "served").Spec.AutomatedCleaningMode).To(Equal(metal3api.CleaningModeMetadata), "baremetal-operator cleans the tenant's metadata")
		g.Expect(host(g, "served").Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationErase))
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(fullOnServed), fullOnServed)).To(Succeed())
		a := meta.FindStatusCondition(fullOnServed.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
		g.Expect(a).NotTo(BeNil())
		g.Expect(a.Reason).To(Equal(hostfleetv1alpha1.ReasonEraseUnsupported))
		g.Expect(a.Message).To(ContainSubstring("cannot erase Full at release"))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Expect(hub.Delete(ctx, fullOnServed)).To(Succeed())

	t.Log("the claims go; new claims wait for the hosts until they have erased themselves")
	for _, c := range claims[:3] {
		g.Expect(hub.Delete(ctx, c)).To(Succeed())
	}
	next := map[string]*metal3api.HostClaim{}
	for _, n := range []string{"rf-erases", "rf-hangs", "ipmi"} {
		next[n] = claimFor("next-"+n, n, false)
	}
	g.Eventually(func(g Gomega) {
		for _, n := range []string{"rf-erases", "ipmi"} {
			bound(g, next[n])
			h := host(g, n)
			g.Expect(meta.FindStatusCondition(h.Status.Conditions, bmcdriver.ConditionErasing)).To(HaveField("Reason", bmcdriver.ReasonErased), "%s erased", n)
			g.Expect(h.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationErase, "Metadata"), "the next claim's release erases tenant a's Metadata")
		}
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Expect(erasing.Actions()).To(ContainElements("InsertMedia "+iso.URL+"/erase.iso", "Erased: the erase image powered the system off"))
	g.Expect(sim.Log()).To(ContainElements("boot pxe", "erased"))

	t.Log("an erase image that never finishes: the erase fails, the host stays out with its state shown")
	g.Eventually(func(g Gomega) {
		h := host(g, "rf-hangs")
		g.Expect(h.Status.ErrorMessage).To(ContainSubstring("erase failed: the host is still On"))
		g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateDeprovisioning))
		g.Expect(meta.FindStatusCondition(h.Status.Conditions, bmcdriver.ConditionErasing)).To(HaveField("Reason", bmcdriver.ReasonEraseFailed))
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(next["rf-hangs"]), next["rf-hangs"])).To(Succeed())
		g.Expect(next["rf-hangs"].Status.BareMetalHost).To(BeNil())
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(next["rf-hangs"]), next["rf-hangs"])).To(Succeed())
		g.Expect(next["rf-hangs"].Status.BareMetalHost).To(BeNil(), "a host whose erase failed is never handed on")
	}).WithTimeout(3 * time.Second).Should(Succeed())

	t.Log("its administrator erases it by hand and removes the erase: the host is free again")
	g.Eventually(func() error {
		h := host(g, "rf-hangs")
		delete(h.Annotations, hostfleetv1alpha1.AnnotationErase)
		return infra.Update(ctx, h)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		bound(g, next["rf-hangs"])
		h := host(g, "rf-hangs")
		g.Expect(h.Status.ErrorMessage).To(BeEmpty())
		g.Expect(meta.FindStatusCondition(h.Status.Conditions, bmcdriver.ConditionErasing)).To(BeNil())
	}).WithTimeout(60 * time.Second).Should(Succeed())
}
