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

// capm3Pause is the value Cluster API Provider Metal3 writes in the pause
// annotation of the hosts (here, claims) of a paused cluster.
const capm3Pause = "metal3.io/capm3"

// TestPausedClaimFreezesItsHost: while a claim carries
// baremetalhost.metal3.io/paused, the agent changes nothing on its host —
// not the claim's new spec, not a change someone made on the host — while
// the host's state still reaches the claim; unpaused, the claim's spec is
// applied. A paused claim's deletion waits for the pause to end. The claim
// names its host's UID (a providerID for Cluster API) and its HardwareData
// copy carries the NIC addresses.
func TestPausedClaimFreezesItsHost(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, true, "h0")
	hub, infra := s.hub, s.infra
	startAgent(t, s.f, "infra-1", 2)

	c := hubClaim("web", "infra-1", nil)
	c.Spec.PoweredOn = true
	mustCreate(t, hub, c)
	key, hostKey := client.ObjectKeyFromObject(c), client.ObjectKey{Namespace: hostsNS, Name: "h0"}
	h := &metal3api.BareMetalHost{}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
	g.Expect(c.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationHostUID, string(h.UID)), "the host's identity, for a providerID")
	hw := &metal3api.HardwareData{}
	g.Expect(hub.Get(ctx, key, hw)).To(Succeed())
	g.Expect(hw.Spec.HardwareDetails.NIC).To(ContainElement(HaveField("IP", "192.168.100.1")), "the copy carries the NIC addresses")

	edit := func(change func(*metal3api.HostClaim)) { updateClaim(g, hub, c, change) }
	pause := func() {
		edit(func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationPaused] = capm3Pause })
	}
	unpause := func() {
		edit(func(c *metal3api.HostClaim) { delete(c.Annotations, hostfleetv1alpha1.AnnotationPaused) })
	}

	t.Log("paused: the claim says so and by whom; nothing changed, so it stays Ready")
	pause()
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		p := condition(c, hostfleetv1alpha1.ConditionPaused)
		g.Expect(p.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(p.Message).To(ContainSubstring(`paused by "metal3.io/capm3"`))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("the claim asks for an image, and someone powers the host off: the agent corrects neither, and the power reaches the claim")
	edit(func(c *metal3api.HostClaim) {
		c.Spec.Image = &metal3api.Image{URL: "http://127.0.0.1:8099/os.qcow2", Checksum: "http://127.0.0.1:8099/os.qcow2.sha256sum"}
	})
	g.Eventually(func() error {
		if err := infra.Get(ctx, hostKey, h); err != nil {
			return err
		}
		h.Spec.Online = false
		return infra.Update(ctx, h)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(c.Status.PoweredOn).To(BeFalse(), "the host's state keeps flowing back")
		sync := condition(c, hostfleetv1alpha1.ConditionSynchronized)
		g.Expect(sync.Reason).To(Equal(hostfleetv1alpha1.ReasonPaused))
		g.Expect(sync.ObservedGeneration).To(Equal(c.Generation), "the agent has seen the new spec")
		g.Expect(sync.Message).To(ContainSubstring("the claim's changes reach host hosts/h0 once the annotation is removed"))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Reason).To(Equal(hostfleetv1alpha1.ReasonPaused))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Spec.Online).To(BeFalse(), "nothing moves while paused")
		g.Expect(h.Spec.Image).To(BeNil())
	}).WithTimeout(3 * time.Second).Should(Succeed())

	t.Log("unpaused: the claim's spec reaches the host")
	unpause()
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(c.Status.Conditions).NotTo(ContainElement(HaveField("Type", hostfleetv1alpha1.ConditionPaused)))
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Spec.Online).To(BeTrue())
		g.Expect(h.Spec.Image).NotTo(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("a paused claim's deletion waits for the pause to end")
	pause()
	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionPaused).Message).To(ContainSubstring("the claim's deletion waits for it"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, &metal3api.HostClaim{})).To(Succeed())
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).NotTo(BeNil())
		g.Expect(h.Spec.Online).To(BeTrue(), "not released while paused")
	}).WithTimeout(3 * time.Second).Should(Succeed())
	unpause()
	g.Eventually(func(g Gomega) {
		err := hub.Get(ctx, key, &metal3api.HostClaim{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "claim gone, got %v", err)
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
	}).WithTimeout(180 * time.Second).WithPolling(time.Second).Should(Succeed())
}
