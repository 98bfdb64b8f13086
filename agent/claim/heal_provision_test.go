package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestFailedWhileProvisioning: a claim's host fails before its live ISO
// was booted (its BMC answers 500 from before the claim asks for it), and
// the host is fenced. When its BMC answers again, the provisioning it
// owed inserts the ISO but never powers the host on (it is asked to be
// off): it is confirmed off, quarantined, and the claim, once its selector
// lets it, is Ready on the other host. Checked every 100 ms: a quarantined
// host is off.
func TestFailedWhileProvisioning(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub, infra, bmcs, iso, _ := redfishScene(t, hostfleetv1alpha1.ServedTenant{Healing: replacing()}, redfish.Options{}, []string{"rf-a", "rf-b"}, watchful)
	waitAvailable(g, infra, "rf-a", "rf-b")
	broken := offWhileQuarantined(t, infra, "rf-a", bmcs["rf-a"])

	t.Log("a claim, off and without an image yet, binds rf-a; rf-a's BMC fails; the claim asks for its live ISO, powered on")
	c := hubClaim("live", "infra-1", map[string]string{"name": "rf-a"})
	mustCreate(t, hub, c)
	g.Eventually(func(g Gomega) {
		g.Expect(healthOf(g, hub, c).Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
		g.Expect(c.Status.BareMetalHost).NotTo(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	bmcs["rf-a"].SetFaults(redfish.Faults{Status: 500})
	mutate(g, hub, client.ObjectKeyFromObject(c), &metal3api.HostClaim{}, func(c *metal3api.HostClaim) {
		c.Spec.PoweredOn = true
		c.Spec.Image = &metal3api.Image{URL: iso.URL + "/live.iso", DiskFormat: ptr.To("live-iso")}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(healthOf(g, hub, c).Reason).To(Equal(hostfleetv1alpha1.ReasonFencing))
	}).WithTimeout(60 * time.Second).Should(Succeed())

	t.Log("fenced: its BMC answers again; the claim may move (its selector lets it) only once rf-a is off")
	bmcs["rf-a"].SetFaults(redfish.Faults{})
	setSelector := func(g Gomega) {
		mutate(g, hub, client.ObjectKeyFromObject(c), &metal3api.HostClaim{}, func(c *metal3api.HostClaim) {
			c.Spec.HostSelector.MatchLabels = nil
		})
	}
	g.Eventually(func(g Gomega) {
		h := &metal3api.BareMetalHost{}
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "rf-a"}, h)).To(Succeed())
		q, ok, err := healing.QuarantineOf(h.Annotations)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeTrue(), "quarantined")
		g.Expect(q.Fenced).To(BeTrue())
	}).WithTimeout(60 * time.Second).Should(Succeed())
	setSelector(g)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.BareMetalHost).NotTo(BeNil())
		g.Expect(c.Status.BareMetalHost.Name).To(Equal("rf-b"))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(90 * time.Second).Should(Succeed())
	g.Consistently(func() string { return bmcs["rf-a"].Power() }).WithTimeout(2*time.Second).Should(Equal("Off"), "a quarantined host stays off")
	g.Expect(broken()).To(BeEmpty())
	g.Expect(bmcs["rf-a"].Resets()).NotTo(ContainElement("On"), "a fenced host is never powered on: %v", bmcs["rf-a"].Actions())
}
