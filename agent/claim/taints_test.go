package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestTaintedHost: a host tainted gpu is published as a pool of its own
// and bound only to a claim that tolerates gpu; a claim that does not
// waits, naming the tainted host it may not take.
func TestTaintedHost(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, false, "plain", "gpu")
	h := &metal3api.BareMetalHost{}
	g.Expect(s.infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "gpu"}, h)).To(Succeed())
	h.Annotations = map[string]string{hostfleetv1alpha1.AnnotationTaints: "gpu"}
	g.Expect(s.infra.Update(ctx, h)).To(Succeed())
	mustCreate(t, s.hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		planes.Tenancy("infra-1", hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{tenantNS}}))
	startAgent(t, s.f, "infra-1", 2, func(o *app.Options) { o.InventoryInterval = time.Second })
	g.Eventually(func(g Gomega) {
		inv := &hostfleetv1alpha1.HostInventory{}
		g.Expect(s.hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, inv)).To(Succeed())
		g.Expect(inv.Status.Pools).To(ContainElement(And(HaveField("Taints", []string{"gpu"}), HaveField("Available", int32(1)))))
	}).WithTimeout(30*time.Second).Should(Succeed(), "the tainted host is a pool of its own")

	first := hubClaim("first", "infra-1", nil)
	mustCreate(t, s.hub, first)
	bound := func(c *metal3api.HostClaim, host string) {
		g.Eventually(func(g Gomega) {
			g.Expect(s.hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			g.Expect(c.Status.BareMetalHost).NotTo(BeNil())
			g.Expect(c.Status.BareMetalHost.Name).To(Equal(host))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
	bound(first, "plain")
	second := hubClaim("second", "infra-1", nil)
	mustCreate(t, s.hub, second)
	g.Eventually(func(g Gomega) {
		g.Expect(s.hub.Get(ctx, client.ObjectKeyFromObject(second), second)).To(Succeed())
		a := associated(second)
		g.Expect(a).NotTo(BeNil())
		g.Expect(a.Reason).To(Equal(hostfleetv1alpha1.ReasonNoHostAvailable))
		g.Expect(a.Message).To(ContainSubstring("1 free matching hosts are tainted (hostfleet.io/taints) with keys the claim's hostfleet.io/tolerations does not name"))
	}).WithTimeout(30*time.Second).Should(Succeed(), "a claim that does not tolerate gpu waits")

	tolerant := hubClaim("tolerant", "infra-1", nil)
	tolerant.Annotations[hostfleetv1alpha1.AnnotationTolerations] = "gpu"
	mustCreate(t, s.hub, tolerant)
	bound(tolerant, "gpu")
	g.Expect(s.hub.Get(ctx, client.ObjectKeyFromObject(second), second)).To(Succeed())
	g.Expect(second.Status.BareMetalHost).To(BeNil())
}
