package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/agent/claim"
	"github.com/hostfleet/hostfleet/agent/metrics"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestOrphanedHostIsReleased: a claim deleted with its finalizer forced off
// (or lost with a hub restore) leaves its host bound to nothing; after the
// grace period the agent releases it, and says so on the host. A live
// claim's host is never touched.
func TestOrphanedHostIsReleased(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, false, "h0", "h1")
	grace := func(o *app.Options) { o.OrphanGrace = 3 * time.Second }
	stop := startAgent(t, s.f, "infra-1", 2, grace)
	before := testutil.ToFloat64(metrics.OrphansReleased)

	gone, live := hubClaim("gone", "infra-1", nil), hubClaim("live", "infra-1", nil)
	mustCreate(t, s.hub, gone, live)
	hostOf := map[string]string{}
	g.Eventually(func(g Gomega) {
		for _, c := range []*metal3api.HostClaim{gone, live} {
			g.Expect(s.hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			g.Expect(associated(c)).To(HaveField("Status", metav1.ConditionTrue))
			hostOf[c.Name] = c.Status.BareMetalHost.Name
		}
		g.Expect(hostOf["gone"]).NotTo(Equal(hostOf["live"]))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("while the agent is down, the claim is deleted with its finalizer forced off, as an administrator could")
	stop()
	g.Expect(s.hub.Delete(ctx, gone)).To(Succeed())
	g.Eventually(func() error {
		if err := s.hub.Get(ctx, client.ObjectKeyFromObject(gone), gone); err != nil {
			return client.IgnoreNotFound(err)
		}
		gone.Finalizers = nil
		return s.hub.Update(ctx, gone)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(s.hub.Get(ctx, client.ObjectKeyFromObject(gone), &metal3api.HostClaim{}))
	}).WithTimeout(10 * time.Second).Should(BeTrue())
	startAgent(t, s.f, "infra-1", 2, grace)

	orphan := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: hostOf["gone"]}}
	g.Eventually(func(g Gomega) {
		g.Expect(s.infra.Get(ctx, client.ObjectKeyFromObject(orphan), orphan)).To(Succeed())
		g.Expect(orphan.Annotations).To(HaveKey(hostfleetv1alpha1.AnnotationOrphanedSince))
		g.Expect(planes.Events(ctx, s.infra, orphan)).To(ContainElement(HavePrefix("Warning/" + claim.ReasonClaimGone + ": the claim tenant-a/gone")))
	}).WithTimeout(20*time.Second).Should(Succeed(), "found, and kept for the grace period")
	g.Eventually(func(g Gomega) {
		g.Expect(s.infra.Get(ctx, client.ObjectKeyFromObject(orphan), orphan)).To(Succeed())
		g.Expect(orphan.Spec.ConsumerRef).To(BeNil())
		g.Expect(orphan.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationClaimUID))
		g.Expect(orphan.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationOrphanedSince))
		g.Expect(planes.Events(ctx, s.infra, orphan)).To(ContainElement(HavePrefix("Normal/" + claim.ReasonOrphanReleased)))
	}).WithTimeout(30*time.Second).Should(Succeed(), "then released")
	g.Expect(testutil.ToFloat64(metrics.OrphansReleased) - before).To(BeNumerically(">=", 1))

	held := &metal3api.BareMetalHost{}
	g.Consistently(func(g Gomega) {
		g.Expect(s.infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: hostOf["live"]}, held)).To(Succeed())
		g.Expect(held.Spec.ConsumerRef).NotTo(BeNil())
		g.Expect(held.Spec.ConsumerRef.Name).To(Equal("live"))
		g.Expect(held.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationOrphanedSince))
	}).WithTimeout(4*time.Second).Should(Succeed(), "a live claim's host is never touched")
}
