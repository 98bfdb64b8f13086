package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestHubOutage: the agent loses the hub in the middle of a release. The host
// finishes deprovisioning meanwhile; the claim keeps its finalizer; a claim
// created during the outage waits. When the hub comes back, the release
// completes and the new claim binds: nothing is lost.
func TestHubOutage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, true, "h0")
	hub, infra := s.hub, s.infra
	px, err := s.f.Proxy("hub")
	g.Expect(err).NotTo(HaveOccurred())
	servesTenantA(t, s.hub, "infra-1")
	startAgentWith(t, px.Config, s.f.Plane("infra-1").Config, "infra-1", 2)

	c := hubClaim("web", "infra-1", nil)
	c.Spec.PoweredOn = true
	c.Spec.Image = &metal3api.Image{URL: "http://127.0.0.1:8099/os.qcow2", Checksum: "http://127.0.0.1:8099/os.qcow2.sha256sum"}
	mustCreate(t, hub, c)
	key := client.ObjectKeyFromObject(c)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(180 * time.Second).WithPolling(time.Second).Should(Succeed())

	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	hostKey := client.ObjectKey{Namespace: hostsNS, Name: "h0"}
	h := &metal3api.BareMetalHost{}
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateDeprovisioning))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	t.Log("hub cut while the host deprovisions")
	px.Cut()
	late := hubClaim("late", "infra-1", nil)
	mustCreate(t, hub, late)
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateAvailable))
	}).WithTimeout(120 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		got := &metal3api.HostClaim{}
		g.Expect(hub.Get(ctx, key, got)).To(Succeed(), "the claim stays while the agent cannot reach the hub")
		g.Expect(got.Finalizers).To(ContainElement(hostfleetv1alpha1.AgentFinalizer))
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(late), late)).To(Succeed())
		g.Expect(late.Finalizers).To(BeEmpty(), "the agent has not seen the new claim")
	}).WithTimeout(3 * time.Second).Should(Succeed())

	t.Log("hub back")
	px.Restore()
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(hub.Get(ctx, key, &metal3api.HostClaim{}))).To(BeTrue(), "the release completed")
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(late), late)).To(Succeed())
		g.Expect(associated(late)).NotTo(BeNil())
		g.Expect(associated(late)).To(HaveField("Status", metav1.ConditionTrue), "the claim made during the outage is served")
		g.Expect(late.Status.BareMetalHost.Name).To(Equal("h0"))
	}).WithTimeout(180 * time.Second).WithPolling(time.Second).Should(Succeed())
}
