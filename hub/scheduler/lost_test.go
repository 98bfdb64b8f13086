package scheduler_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestLostCluster: c1 stops being Available (its klusterlet gone, OCM's
// grace past). Its bound claim says so with since when, its unbound one is
// placed on c2, and no new claim goes there though its last inventory
// still offers hosts; a claim deleted there waits and names the command
// that lets it go. When c1 comes back, its claim is Placed again, where it
// was.
func TestLostCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub := schedulerPlane(t, time.Hour)
	lab(g, hub, map[string][]hostfleetv1alpha1.HostPool{
		"c1": {{Namespaces: []string{"tenant-a"}, Total: 9, Available: 9}},
		"c2": {{Namespaces: []string{"tenant-a"}, Total: 3, Available: 3}},
	})
	for _, c := range []string{"c1", "c2"} {
		g.Expect(planes.SetClusterAvailable(ctx, hub, c, metav1.ConditionTrue)).To(Succeed())
	}
	get := getter(hub)
	bound := createClaim(g, hub, "bound", func(c *metal3api.HostClaim) { c.Finalizers = []string{hostfleetv1alpha1.AgentFinalizer} })
	going := createClaim(g, hub, "going", func(c *metal3api.HostClaim) { c.Finalizers = []string{hostfleetv1alpha1.AgentFinalizer} })
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, bound).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
		g.Expect(get(g, going).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	for _, c := range []*metal3api.HostClaim{bound, going} {
		// As c1's agent would: bound.
		g.Eventually(func() error {
			if err := hub.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
				return err
			}
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionAssociated, Status: metav1.ConditionTrue, Reason: "BareMetalHostAssociated"})
			c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: c.Name}
			return hub.Status().Update(ctx, c)
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	unbound := createClaim(g, hub, "unbound", nil)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, unbound).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("c1 is lost: OCM marks its ManagedCluster Available Unknown")
	g.Expect(planes.SetClusterAvailable(ctx, hub, "c1", metav1.ConditionUnknown)).To(Succeed())
	start := time.Now()
	g.Eventually(func(g Gomega) {
		s := scheduled(get(g, bound))
		g.Expect(s.Reason).To(Equal(hostfleetv1alpha1.ReasonClusterUnavailable))
		g.Expect(s.Message).To(MatchRegexp(`placed on c1, whose ManagedCluster has not been Available since \S+Z: .*kubectl hostfleet forget-cluster c1`))
		g.Expect(get(g, unbound).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c2"), "unbound, it goes elsewhere: %v", unbound.Status.Conditions)
	}).WithTimeout(20 * time.Second).Should(Succeed())
	t.Logf("said %s after the cluster became unavailable", time.Since(start).Round(10*time.Millisecond))
	fresh := createClaim(g, hub, "fresh", nil)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, fresh).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c2"), "not on c1, though its inventory offers 9 hosts")
	}).WithTimeout(20 * time.Second).Should(Succeed())
	third := createClaim(g, hub, "third", nil)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, third).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c2"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	late := createClaim(g, hub, "late", nil)
	g.Eventually(func(g Gomega) {
		s := scheduled(get(g, late))
		g.Expect(s.Reason).To(Equal(hostfleetv1alpha1.ReasonNoCapacity))
		g.Expect(s.Message).To(ContainSubstring("c1 (not Available since"))
	}).WithTimeout(20*time.Second).Should(Succeed(), "c2 is full: nowhere, and the message says why not c1")

	t.Log("a claim deleted on c1 waits, and says what an administrator does")
	g.Expect(hub.Delete(ctx, going)).To(Succeed())
	g.Eventually(func(g Gomega) {
		s := scheduled(get(g, going))
		g.Expect(s.Reason).To(Equal(hostfleetv1alpha1.ReasonClusterUnavailable))
		g.Expect(s.Message).To(ContainSubstring("being deleted: waiting for c1 to release its host"))
		g.Expect(s.Message).To(ContainSubstring("runs `kubectl hostfleet forget-cluster c1`"))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("c1 comes back: its claim is Placed again, on c1")
	g.Expect(planes.SetClusterAvailable(ctx, hub, "c1", metav1.ConditionTrue)).To(Succeed())
	g.Eventually(func(g Gomega) {
		s := scheduled(get(g, bound))
		g.Expect(s.Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced))
		g.Expect(bound.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(going), going)).To(Succeed(), "still waits for c1's agent")
}
