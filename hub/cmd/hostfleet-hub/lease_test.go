package main_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestLeaseEndsAcrossFailover: a claim's lease is warned by the leading
// hub, the leader is killed with SIGKILL before the end, and the standby
// ends the lease at its time: the claim is marked released by its lease
// and deleted, with one LeaseEnded Event (and at most one LeaseEnding). Both replicas
// count a cluster's usage record alike.
func TestLeaseEndsAcrossFailover(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTestWith(t, planes.Options{Dir: t.TempDir()}, "hub")
	hub := f.Plane("hub").Client
	g.Expect(hub.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}})).To(Succeed())
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
		LeaseWarning: &metav1.Duration{Duration: 10 * time.Second}}})).To(Succeed())
	replicas, addrs, leader := startReplicas(t, g, f)
	g.Eventually(leader).WithTimeout(60 * time.Second).Should(BeNumerically(">=", 0))
	first := leader()
	g.Eventually(func() error {
		return hub.Get(ctx, client.ObjectKey{Name: "tenant-a"}, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}})
	}).WithTimeout(30 * time.Second).Should(Succeed())
	// A cluster's usage ledger: the same host-seconds from either replica.
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}})).To(Succeed())
	rec := &hostfleetv1alpha1.UsageLedger{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"}, Spec: hostfleetv1alpha1.UsageLedgerSpec{ClusterName: "c1"}}
	g.Expect(hub.Create(ctx, rec)).To(Succeed())
	rec.Status.Counted = []hostfleetv1alpha1.UsageEntry{{Period: time.Now().UTC().Format("2006-01-02"), Namespace: "tenant-a", Seconds: 4242}}
	g.Expect(hub.Status().Update(ctx, rec)).To(Succeed())
	const used = `hostfleet_usage_host_seconds_total{class="",cluster="c1",tenant="a"} 4242`
	g.Eventually(func() string { return metric(addrs[first], "hostfleet_usage_host_seconds_total") }).WithTimeout(30*time.Second).Should(Equal(used), "the leader counts it")

	until := time.Now().Add(30 * time.Second).Truncate(time.Second)
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "leased", Finalizers: []string{"test.hostfleet.io/hold"},
		Annotations: map[string]string{hostfleetv1alpha1.AnnotationLeaseUntil: until.UTC().Format(time.RFC3339)}}}
	g.Expect(hub.Create(ctx, c)).To(Succeed())
	reason := func(g Gomega) string {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		if x := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionLeaseExpiring); x != nil {
			return x.Reason
		}
		return ""
	}
	g.Eventually(reason).WithTimeout(40*time.Second).Should(Equal(hostfleetv1alpha1.ReasonLeaseEnding), "warned by the leader")
	g.Expect(time.Now()).To(BeTemporally("<", until), "warned before the end")
	t.Logf("the lease ends at %s; replica %d, leading, warned; it is killed %s before the end", until.Format(time.TimeOnly), first,
		time.Until(until).Round(100*time.Millisecond))
	replicas[first].Kill()
	g.Eventually(leader).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(Equal(1-first), "the standby leads")
	g.Expect(metric(addrs[1-first], "hostfleet_usage_host_seconds_total")).To(Equal(used), "and so does the standby that took over")
	g.Eventually(func(g Gomega) {
		g.Expect(reason(g)).To(Equal(hostfleetv1alpha1.ReasonLeaseEnded))
		g.Expect(c.DeletionTimestamp).NotTo(BeNil())
	}).WithTimeout(60*time.Second).Should(Succeed(), "released by the standby")
	released := time.Now()
	g.Expect(c.DeletionTimestamp.Time).To(BeTemporally(">=", until), "not before the end")
	g.Expect(c.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationReleasedBy, hostfleetv1alpha1.ReleasedByLease))
	t.Logf("released %s after the end", released.Sub(until).Round(100*time.Millisecond))
	g.Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(hub.List(ctx, &list, client.InNamespace("tenant-a"))).To(Succeed())
		n := map[string]int{}
		for _, ev := range list.Items {
			if ev.Regarding.Name == c.Name {
				n[ev.Reason]++
			}
		}
		// The warning's Event may die with the killed leader (Events are
		// sent after the condition, best effort): never two.
		g.Expect(n[hostfleetv1alpha1.ReasonLeaseEnding]).To(BeNumerically("<=", 1))
		g.Expect(n).To(HaveKeyWithValue(hostfleetv1alpha1.ReasonLeaseEnded, 1), "released exactly once")
	}).WithTimeout(10 * time.Second).Should(Succeed())
	controllerutil.RemoveFinalizer(c, "test.hostfleet.io/hold")
	g.Expect(hub.Update(ctx, c)).To(Succeed())
}
