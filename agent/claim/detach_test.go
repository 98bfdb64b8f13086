package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestDetach: baremetalhost.metal3.io/detached reaches the host only where its
// HostDeployPolicy allows detaching; otherwise the claim says how to fix it.
func TestDetach(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, true, "h0")
	hub, infra := s.hub, s.infra
	startAgent(t, s.f, "infra-1", 2)

	c := hubClaim("c", "infra-1", nil)
	c.Annotations[metal3api.DetachedAnnotation] = ""
	mustCreate(t, hub, c)
	key := client.ObjectKeyFromObject(c)
	hostKey := client.ObjectKey{Namespace: hostsNS, Name: "h0"}
	h := &metal3api.BareMetalHost{}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		s := condition(c, hostfleetv1alpha1.ConditionSynchronized)
		g.Expect(s.Reason).To(Equal(hostfleetv1alpha1.ReasonDetachNotAllowed))
		g.Expect(s.Message).To(ContainSubstring("annotate the policy hostfleet.io/allow-detach=true"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
	g.Expect(h.Annotations).NotTo(HaveKey(metal3api.DetachedAnnotation))

	t.Log("the administrator allows detaching")
	mutate(g, infra, client.ObjectKey{Namespace: hostsNS, Name: "tenants"}, &metal3api.HostDeployPolicy{}, func(p *metal3api.HostDeployPolicy) {
		p.Annotations = map[string]string{hostfleetv1alpha1.AnnotationAllowDetach: "true"}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Annotations).To(HaveKey(metal3api.DetachedAnnotation))
		g.Expect(h.Status.OperationalStatus).To(Equal(metal3api.OperationalStatusDetached), "baremetal-operator detached it")
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionSynchronized).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(120 * time.Second).Should(Succeed())

	t.Log("the tenant removes the annotation: the host is attached again")
	setAnnotation(g, hub, key, metal3api.DetachedAnnotation, "-")
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Annotations).NotTo(HaveKey(metal3api.DetachedAnnotation))
		g.Expect(h.Status.OperationalStatus).To(Equal(metal3api.OperationalStatusOK))
	}).WithTimeout(120 * time.Second).Should(Succeed())
}
