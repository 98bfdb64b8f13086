package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/placedclaim"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// TestClaimWatchPlaced: an agent with --claim-watch=placed reads its claims
// from the PlacedClaims the hub keeps in its cluster's namespace, and never
// lists or watches the claims themselves; it binds, reports and releases
// as with the label watch, and another cluster's claim stays untouched. A
// bind writes the claim's status once, and its metadata once.
func TestClaimWatchPlaced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub", "infra-1")
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	f.ManagerForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&placedclaim.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, setup.Options{})
	})
	f.StartBMOForTest(t, "infra-1")
	mustCreate(t, hub,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-2"}})
	hostInfra(t, infra)
	mustCreate(t, infra, bmh("gpu-0", 0, map[string]string{"example.com/gpu": "yes"}))
	waitAvailable(g, infra, "gpu-0")

	rc := &requestCounter{}
	servesTenantA(t, f.Plane("hub").Client, "infra-1")
	startAgentWith(t, rc.wrap(f.Plane("hub").Config), f.Plane("infra-1").Config, "infra-1", 2,
		func(o *app.Options) { o.ClaimWatch = "placed" })

	elsewhere := hubClaim("elsewhere", "infra-2", nil)
	first := hubClaim("first", "infra-1", map[string]string{"example.com/gpu": "yes"})
	mustCreate(t, hub, elsewhere, first)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(first), first)).To(Succeed())
		g.Expect(first.Status.BareMetalHost).To(Equal(&metal3api.ObjectReference{Namespace: hostsNS, Name: "gpu-0"}))
		g.Expect(associated(first)).To(HaveField("Status", metav1.ConditionTrue))
		g.Expect(first.Finalizers).To(ContainElement(hostfleetv1alpha1.AgentFinalizer))
	}).WithTimeout(30*time.Second).Should(Succeed(), "bound through the PlacedClaim, written to the claim")
	g.Consistently(func() []int { return []int{rc.written("PATCH hostclaims/status"), rc.written("PATCH hostclaims")} }).
		WithTimeout(2*time.Second).Should(Equal([]int{1, 1}), "one status write per bind, its conditions (health too) in it; one metadata write")
	host := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "gpu-0"}, host)).To(Succeed())
	g.Expect(host.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationClaimUID, string(first.UID)))

	// A change of the claim reaches the agent through its copy: powered on.
	g.Eventually(func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(first), first); err != nil {
			return err
		}
		first.Spec.PoweredOn = true
		return hub.Update(ctx, first)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "gpu-0"}, host)).To(Succeed())
		g.Expect(host.Spec.Online).To(BeTrue())
	}).WithTimeout(30*time.Second).Should(Succeed(), "the claim's poweredOn reaches the host")

	g.Consistently(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(elsewhere), elsewhere)).To(Succeed())
		g.Expect(elsewhere.Finalizers).To(BeEmpty())
		g.Expect(elsewhere.Status.Conditions).To(BeEmpty())
	}).WithTimeout(2*time.Second).Should(Succeed(), "infra-2's claim is not infra-1's agent's")

	g.Expect(hub.Delete(ctx, first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := hub.Get(ctx, client.ObjectKeyFromObject(first), &metal3api.HostClaim{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "claim gone after release, got %v", err)
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "gpu-0"}, host)).To(Succeed())
		g.Expect(host.Spec.ConsumerRef).To(BeNil())
	}).WithTimeout(60*time.Second).Should(Succeed(), "deleted: the host released, then the claim gone")

	lists, watches := rc.counts()
	g.Expect(lists).NotTo(HaveKey("hostclaims"), "the claims are never listed")
	g.Expect(watches).NotTo(HaveKey("hostclaims"), "the claims are never watched")
	g.Expect(lists).To(HaveKey("placedclaims"))
	g.Expect(watches).To(HaveKey("placedclaims"))
}
