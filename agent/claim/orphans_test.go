package claim_test

import (
	"context"
	"fmt"
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
// grace period the agent releases it, and says so on the host. A host bound
// moments before its claim went, with nothing deployed (the claim was
// deleted as it was bound), is released at once. A live claim's host is
// never touched.
func TestOrphanedHostIsReleased(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, false, "h0", "h1", "h2")
	grace := func(o *app.Options) { o.OrphanGrace = 15 * time.Second }
	stop := startAgent(t, s.f, "infra-1", 2, grace)
	before := testutil.ToFloat64(metrics.OrphansReleased)

	gone, crossed, live := hubClaim("gone", "infra-1", nil), hubClaim("crossed", "infra-1", nil), hubClaim("live", "infra-1", nil)
	gone.Spec.Image = &metal3api.Image{URL: "http://127.0.0.1:8099/os.qcow2", Checksum: "http://127.0.0.1:8099/os.qcow2.sha256sum"}
	mustCreate(t, s.hub, gone, crossed, live)
	hostOf := map[string]client.ObjectKey{}
	g.Eventually(func(g Gomega) {
		for _, c := range []*metal3api.HostClaim{gone, crossed, live} {
			g.Expect(s.hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			g.Expect(associated(c)).To(HaveField("Status", metav1.ConditionTrue))
			hostOf[c.Name] = client.ObjectKey{Namespace: hostsNS, Name: c.Status.BareMetalHost.Name}
		}
		h := &metal3api.BareMetalHost{}
		g.Expect(s.infra.Get(ctx, hostOf["gone"], h)).To(Succeed())
		g.Expect(h.Spec.Image).NotTo(BeNil(), "deployed")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("while the agent is down, two claims are deleted with their finalizer forced off, as an administrator could")
	stop()
	for _, c := range []*metal3api.HostClaim{gone, crossed} {
		g.Expect(s.hub.Delete(ctx, c)).To(Succeed())
		g.Eventually(func() error {
			if err := s.hub.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
				return client.IgnoreNotFound(err)
			}
			c.Finalizers = nil
			return s.hub.Update(ctx, c)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(s.hub.Get(ctx, client.ObjectKeyFromObject(c), &metal3api.HostClaim{}))
		}).WithTimeout(10 * time.Second).Should(BeTrue())
	}
	startAgent(t, s.f, "infra-1", 2, grace)

	orphan := &metal3api.BareMetalHost{}
	g.Eventually(func(g Gomega) {
		h := &metal3api.BareMetalHost{}
		g.Expect(s.infra.Get(ctx, hostOf["crossed"], h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
		g.Expect(planes.Events(ctx, s.infra, h)).To(ContainElement(HavePrefix("Normal/" + claim.ReasonOrphanReleased +
			": released: the claim tenant-a/crossed was deleted as the host was bound to it")))
		g.Expect(s.infra.Get(ctx, hostOf["gone"], orphan)).To(Succeed())
		g.Expect(orphan.Annotations).To(HaveKey(hostfleetv1alpha1.AnnotationOrphanedSince), "the deployed host is still kept")
		g.Expect(planes.Events(ctx, s.infra, orphan)).To(ContainElement(HavePrefix("Warning/" + claim.ReasonClaimGone + ": the claim tenant-a/gone")))
	}).WithTimeout(12*time.Second).Should(Succeed(), "the host bound moments ago released at once; the deployed one found, and kept for the grace period")
	g.Eventually(func(g Gomega) {
		g.Expect(s.infra.Get(ctx, hostOf["gone"], orphan)).To(Succeed())
		g.Expect(orphan.Spec.ConsumerRef).To(BeNil())
		g.Expect(orphan.Spec.Image).To(BeNil())
		g.Expect(orphan.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationClaimUID))
		g.Expect(orphan.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationOrphanedSince))
		g.Expect(planes.Events(ctx, s.infra, orphan)).To(ContainElement(HavePrefix("Normal/" + claim.ReasonOrphanReleased + ": released: the claim tenant-a/gone that held this host was gone for")))
	}).WithTimeout(40*time.Second).Should(Succeed(), "then released")
	g.Expect(testutil.ToFloat64(metrics.OrphansReleased) - before).To(BeNumerically(">=", 2))

	held := &metal3api.BareMetalHost{}
	g.Consistently(func(g Gomega) {
		g.Expect(s.infra.Get(ctx, hostOf["live"], held)).To(Succeed())
		g.Expect(held.Spec.ConsumerRef).NotTo(BeNil())
		g.Expect(held.Spec.ConsumerRef.Name).To(Equal("live"))
		g.Expect(held.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationOrphanedSince))
	}).WithTimeout(4*time.Second).Should(Succeed(), "a live claim's host is never touched")
}

// TestClaimDeletedAsItIsBound: claims deleted by their tenant as the agent
// binds them (before it sees them, right after its finalizer lands) leave
// no host bound, within seconds: the API server may remove a claim whose
// DELETE crossed the agent's finalizer, and the host is then released at
// once rather than after --orphan-grace.
func TestClaimDeletedAsItIsBound(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, false, "h0", "h1", "h2", "h3")
	startAgent(t, s.f, "infra-1", 4)
	for i := range 60 {
		c := hubClaim(fmt.Sprintf("c%02d", i), "infra-1", nil)
		mustCreate(t, s.hub, c)
		if i%3 != 0 {
			g.Eventually(func(g Gomega) {
				g.Expect(s.hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
				g.Expect(c.Finalizers).To(ContainElement(hostfleetv1alpha1.AgentFinalizer))
			}).WithTimeout(30 * time.Second).WithPolling(time.Millisecond).Should(Succeed())
		}
		g.Expect(s.hub.Delete(ctx, c)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		var claims metal3api.HostClaimList
		g.Expect(s.hub.List(ctx, &claims)).To(Succeed())
		g.Expect(claims.Items).To(BeEmpty())
		var hosts metal3api.BareMetalHostList
		g.Expect(s.infra.List(ctx, &hosts)).To(Succeed())
		for _, h := range hosts.Items {
			g.Expect(h.Spec.ConsumerRef).To(BeNil(), "host %s, annotations %v", h.Name, h.Annotations)
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
