package claim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestQuarantineThenErase: tenant a replaces failed hosts and erases Full.
// Its claim's host, driven over Redfish, reports Critical: it is fenced and
// quarantined, and stays off, its erase image never booted, while it is
// quarantined. Once its administrator returns it, it erases before any
// claim gets it.
func TestQuarantineThenErase(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	erasing := redfish.ImageServer() // the erase image, apart from the claims' images
	t.Cleanup(erasing.Close)
	hub, infra, bmcs, iso, _ := redfishScene(t, hostfleetv1alpha1.ServedTenant{Erase: hostfleetv1alpha1.EraseFull, Healing: replacing()},
		redfish.Options{Erase: 5 * time.Second}, []string{"rf-a", "rf-b"}, func(o *app.Options) {
			o.BMCPoll, o.BMCTimeout, o.FenceTimeout = time.Second, 3*time.Second, 10*time.Second
			o.EraseImage, o.EraseTimeout = erasing.URL+"/erase.iso", 30*time.Second
			o.BreakerMaxPercent = 100 // one claim's host is not a rack
		})
	waitAvailable(g, infra, "rf-a", "rf-b")
	claim := func(name string) *metal3api.HostClaim {
		c := hubClaim(name, "infra-1", nil)
		c.Spec.PoweredOn = true
		c.Spec.Image = &metal3api.Image{URL: iso.URL + "/live.iso", DiskFormat: ptr.To("live-iso")}
		mustCreate(t, hub, c)
		return c
	}
	ready := func(g Gomega, c *metal3api.HostClaim) {
		g.Expect(healthOf(g, hub, c).Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}
	c := claim("live")
	g.Eventually(func(g Gomega) { ready(g, c) }).WithTimeout(90 * time.Second).Should(Succeed())
	failed := c.Status.BareMetalHost.Name
	erased := func(name string) bool {
		for _, a := range bmcs[name].Actions() {
			if strings.HasPrefix(a, "InsertMedia "+erasing.URL+"/erase.iso") {
				return true
			}
		}
		return false
	}

	t.Log("its BMC reports it Critical: fenced, quarantined, the claim Ready on the other host")
	bmcs[failed].SetHealth("Critical", "")
	g.Eventually(func(g Gomega) {
		ready(g, c)
		g.Expect(c.Status.BareMetalHost.Name).NotTo(Equal(failed))
	}).WithTimeout(90 * time.Second).Should(Succeed())
	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h)).To(Succeed())
	g.Expect(h.Annotations).To(HaveKey(hostfleetv1alpha1.AnnotationQuarantined))
	g.Expect(h.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationErase, "Full"), "its erase waits for its return")
	g.Consistently(func(g Gomega) {
		g.Expect(bmcs[failed].Power()).To(Equal("Off"), "a quarantined host stays off: %v", bmcs[failed].Actions())
		g.Expect(erased(failed)).To(BeFalse(), "no erase image is booted on a quarantined host")
	}).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.Log("repaired and returned by its administrator: it erases, then a claim gets it")
	bmcs[failed].SetHealth("OK", "")
	mutate(g, infra, client.ObjectKeyFromObject(h), &metal3api.BareMetalHost{}, func(h *metal3api.BareMetalHost) {
		delete(h.Annotations, hostfleetv1alpha1.AnnotationQuarantined)
	})
	next := claim("next")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(next), next)).To(Succeed())
		g.Expect(next.Status.BareMetalHost).NotTo(BeNil())
		g.Expect(next.Status.BareMetalHost.Name).To(Equal(failed))
	}).WithTimeout(90 * time.Second).Should(Succeed())
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h)).To(Succeed())
	g.Expect(meta.FindStatusCondition(h.Status.Conditions, bmcdriver.ConditionErasing)).To(HaveField("Reason", bmcdriver.ReasonErased))
	g.Expect(bmcs[failed].Actions()).To(ContainElement("Erased: the erase image powered the system off"), "erased before it was handed on")
}
