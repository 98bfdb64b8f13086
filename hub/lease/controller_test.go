package lease_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/lease"
	"github.com/hostfleet/hostfleet/internal/setup"
)

func TestMain(m *testing.M) { planes.Main(m) }

// hold keeps a released claim visible until the test lets it go, as the
// agent's finalizer keeps it while its host is released.
const hold = "test.hostfleet.io/hold"

func expiring(c *metal3api.HostClaim) metav1.Condition {
	if x := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionLeaseExpiring); x != nil {
		return *x
	}
	return metav1.Condition{}
}

// TestLeases: a lease given as a length becomes an end; the claim says
// LeaseActive, then LeaseEnding within the tenant's warning (with an
// Event), and at the end is marked released by its lease (one Event) and
// deleted. A claim extended before its end keeps its host; under a cap, a
// claim without an end gets the cap.
func TestLeases(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	f.HubForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&lease.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, setup.Options{})
	})
	hub := f.Plane("hub").Client
	g.Expect(hub.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}})).To(Succeed())
	ta := &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
		LeaseWarning: &metav1.Duration{Duration: 4 * time.Second}}}
	g.Expect(hub.Create(ctx, ta)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(ta), ta)).To(Succeed())
		g.Expect(ta.Status.Namespaces).To(ContainElement("tenant-a"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	claim := func(name string, ann map[string]string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name, Annotations: ann, Finalizers: []string{hold}}}
		g.Expect(hub.Create(ctx, c)).To(Succeed())
		return c
	}
	get := func(g Gomega, c *metal3api.HostClaim) *metal3api.HostClaim {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		return c
	}

	t.Log("a 10 s lease: its end written from the creation, active, then ending within the 4 s warning")
	short := claim("short", map[string]string{hostfleetv1alpha1.AnnotationLeaseFor: "10s"})
	end := short.CreationTimestamp.Add(10 * time.Second).UTC().Format(time.RFC3339)
	extended := claim("extended", map[string]string{hostfleetv1alpha1.AnnotationLeaseUntil: end})
	g.Eventually(func(g Gomega) {
		get(g, short)
		g.Expect(short.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationLeaseUntil, end))
		g.Expect(short.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationLeaseFor))
		g.Expect(expiring(short).Reason).To(Equal(hostfleetv1alpha1.ReasonLeaseActive))
		g.Expect(expiring(short).Status).To(Equal(metav1.ConditionFalse))
	}).WithTimeout(5 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(expiring(get(g, extended)).Reason).To(Equal(hostfleetv1alpha1.ReasonLeaseEnding))
		g.Expect(expiring(extended).Message).To(ContainSubstring("kubectl hostfleet extend tenant-a/extended --for 2h"))
	}).WithTimeout(15 * time.Second).Should(Succeed())

	t.Log("the tenant extends one lease by an hour: it is active again; the other ends")
	extended.Annotations[hostfleetv1alpha1.AnnotationLeaseUntil] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	g.Expect(hub.Update(ctx, extended)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(g, short)
		g.Expect(short.DeletionTimestamp).NotTo(BeNil(), "deleted at the end of its lease")
		g.Expect(short.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationReleasedBy, hostfleetv1alpha1.ReleasedByLease))
		g.Expect(expiring(short).Reason).To(Equal(hostfleetv1alpha1.ReasonLeaseEnded))
	}).WithTimeout(15 * time.Second).Should(Succeed())
	g.Expect(time.Now()).To(BeTemporally(">=", short.CreationTimestamp.Add(10*time.Second)), "not before its end, on the hub's clock")
	g.Expect(expiring(get(g, extended)).Reason).To(Equal(hostfleetv1alpha1.ReasonLeaseActive))
	g.Expect(extended.DeletionTimestamp).To(BeNil())
	g.Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(hub.List(ctx, &list, client.InNamespace("tenant-a"))).To(Succeed())
		reasons := map[string]int{}
		for _, ev := range list.Items {
			if ev.Regarding.Name == "short" {
				reasons[ev.Reason]++
			}
		}
		g.Expect(reasons).To(HaveKeyWithValue(hostfleetv1alpha1.ReasonLeaseEnding, 1))
		g.Expect(reasons).To(HaveKeyWithValue(hostfleetv1alpha1.ReasonLeaseEnded, 1))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	controllerutil.RemoveFinalizer(short, hold)
	g.Expect(hub.Update(ctx, short)).To(Succeed())

	t.Log("a cap of one hour: a claim without an end gets one, an hour from its creation")
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(ta), ta)).To(Succeed())
	ta.Spec.MaxLeaseDuration = &metav1.Duration{Duration: time.Hour}
	g.Expect(hub.Update(ctx, ta)).To(Succeed())
	capped := claim("capped", nil)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, capped).Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationLeaseUntil,
			capped.CreationTimestamp.Add(time.Hour).UTC().Format(time.RFC3339)))
		g.Expect(expiring(capped).Reason).To(Equal(hostfleetv1alpha1.ReasonLeaseActive))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	for _, c := range []*metal3api.HostClaim{extended, capped} {
		get(g, c)
		controllerutil.RemoveFinalizer(c, hold)
		g.Expect(hub.Update(ctx, c)).To(Succeed())
		g.Expect(client.IgnoreNotFound(hub.Delete(ctx, c))).To(Succeed())
	}
	g.Eventually(func() bool {
		return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(short), &metal3api.HostClaim{}))
	}).WithTimeout(10 * time.Second).Should(BeTrue())
}
