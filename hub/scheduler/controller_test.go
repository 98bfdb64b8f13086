package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/scheduler"
	"github.com/hostfleet/hostfleet/hub/tenant"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	m.Run()
}

func scheduled(c *metal3api.HostClaim) metav1.Condition {
	if s := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled); s != nil {
		return *s
	}
	return metav1.Condition{}
}

// deadline is the bind deadline in this test: long enough for a loaded
// machine to bind a claim in time, short enough to watch one expire.
const deadline = 8 * time.Second

func TestScheduling(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	f.ManagerForTest(t, "hub", func(mgr ctrl.Manager) error {
		if err := (&tenant.Reconciler{Client: mgr.GetClient(), Scheme: f.Scheme}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&scheduler.Reconciler{Client: mgr.GetClient(), Deadline: deadline}).SetupWithManager(mgr)
	})

	gpu := map[string]string{"example.com/gpu": "yes"}
	objs := []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"},
			Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab", LabelSyncPrefixes: []string{"example.com"}}},
	}
	for _, c := range []string{"c1", "c2"} {
		objs = append(objs,
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c, Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "lab"}}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}},
		)
	}
	for _, o := range objs {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	// The agents' inventories: one free gpu host on each cluster, and plain hosts on c1.
	for c, pools := range map[string][]hostfleetv1alpha1.HostPool{
		"c1": {{Labels: gpu, Namespaces: []string{"tenant-a"}, Total: 1, Available: 1}, {Namespaces: []string{"tenant-a"}, Total: 5, Available: 5}},
		"c2": {{Labels: gpu, Namespaces: []string{"tenant-a"}, Total: 1, Available: 1}},
	} {
		inv := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: c, Name: c}, Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: c}}
		g.Expect(hub.Create(ctx, inv)).To(Succeed())
		inv.Status.Pools = pools
		g.Expect(hub.Status().Update(ctx, inv)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		ta := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ta.Status.Clusters).To(Equal([]string{"c1", "c2"}))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	newClaim := func(name string, mut func(*metal3api.HostClaim)) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
		if mut != nil {
			mut(c)
		}
		g.Expect(hub.Create(ctx, c)).To(Succeed())
		return c
	}
	get := func(g Gomega, c *metal3api.HostClaim) *metal3api.HostClaim {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		return c
	}

	t.Log("two gpu claims take the one free gpu host of each cluster; a third waits and says why")
	first := newClaim("gpu-1", func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = gpu })
	var firstCluster string
	g.Eventually(func(g Gomega) {
		get(g, first)
		g.Expect(scheduled(first).Reason).To(Equal(scheduler.ReasonPlaced))
		firstCluster = first.Labels[hostfleetv1alpha1.LabelCluster]
		g.Expect(firstCluster).To(BeElementOf("c1", "c2"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	second := newClaim("gpu-2", func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = gpu })
	third := newClaim("gpu-3", func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = gpu })
	g.Eventually(func(g Gomega) {
		placed := map[string]int{}
		waiting := 0
		for _, c := range []*metal3api.HostClaim{get(g, first), get(g, second), get(g, third)} {
			if cl := c.Labels[hostfleetv1alpha1.LabelCluster]; cl != "" {
				placed[cl]++
			} else {
				waiting++
				g.Expect(scheduled(c).Reason).To(Equal(scheduler.ReasonNoCapacity))
				g.Expect(scheduled(c).Message).To(ContainSubstring("no cluster has a free host matching {example.com/gpu=yes} for namespace tenant-a"))
			}
		}
		g.Expect(placed).To(Equal(map[string]int{"c1": 1, "c2": 1}), "one per cluster")
		g.Expect(waiting).To(Equal(1))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("a bound claim stays; an unbound one is placed elsewhere after the deadline")
	for _, c := range []*metal3api.HostClaim{second, third} {
		if get(g, c).Labels[hostfleetv1alpha1.LabelCluster] == "" {
			continue
		}
		// This one is bound, as its agent would report (the scheduler
		// writes the same status: re-read on conflict).
		g.Eventually(func() error {
			if err := hub.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
				return err
			}
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionAssociated, Status: metav1.ConditionTrue, Reason: "BareMetalHostAssociated"})
			c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h"}
			return hub.Status().Update(ctx, c)
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	g.Eventually(func(g Gomega) {
		get(g, first)
		g.Expect(first.Annotations).To(HaveKeyWithValue(scheduler.AnnotationExcluded, firstCluster))
		g.Expect(scheduled(first).Reason).To(BeElementOf(scheduler.ReasonNoCapacity, scheduler.ReasonRescheduling))
	}).WithTimeout(deadline + 20*time.Second).Should(Succeed())

	t.Log("pins: inside the set honoured and never moved, outside refused with what to do")
	pinned := newClaim("pinned", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelCluster] = "c1" })
	outside := newClaim("outside", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelCluster] = "c9" })
	g.Eventually(func(g Gomega) {
		g.Expect(scheduled(get(g, pinned)).Reason).To(Equal(scheduler.ReasonPinned))
		g.Expect(scheduled(get(g, outside)).Reason).To(Equal(scheduler.ReasonPinnedOutsideSet))
		g.Expect(outside.Status.Conditions[0].Message).To(ContainSubstring("pinned to c9, which is not among the clusters of tenant a (set lab: c1,c2)"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, pinned).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
	}).WithTimeout(deadline+2*time.Second).Should(Succeed(), "past the deadline, a pin stays")

	t.Log("a Placement restricts the clusters")
	g.Expect(hub.Create(ctx, &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "only-c2-1",
		Labels: map[string]string{clusterv1beta1.PlacementLabel: "only-c2"}}})).To(Succeed())
	pd := &clusterv1beta1.PlacementDecision{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "only-c2-1"}, pd)).To(Succeed())
	pd.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "c2"}}
	g.Expect(hub.Status().Update(ctx, pd)).To(Succeed())
	// c1 has 5 plain hosts, c2 none: only the Placement sends it to c2, which then has nothing.
	restricted := newClaim("restricted", func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationPlacement] = "only-c2" })
	free := newClaim("free", nil)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, free).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"), "%+v", scheduled(free))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Eventually(func() error { // the scheduler writes this claim's status too
		if err := hub.Get(ctx, client.ObjectKeyFromObject(free), free); err != nil {
			return err
		}
		meta.SetStatusCondition(&free.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionAssociated, Status: metav1.ConditionTrue, Reason: "BareMetalHostAssociated"})
		return hub.Status().Update(ctx, free)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, restricted).Labels[hostfleetv1alpha1.LabelCluster]).NotTo(Equal("c1"), "the Placement only allows c2")
		g.Expect(get(g, free).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"), "a bound claim is never moved")
	}).WithTimeout(deadline + 2*time.Second).Should(Succeed())
	g.Expect(scheduled(restricted).Message).NotTo(ContainSubstring("c1"))

	t.Log("a claim outside any tenant namespace")
	g.Expect(hub.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "stray"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := &metal3api.HostClaim{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "default", Name: "stray"}, c)).To(Succeed())
		g.Expect(scheduled(c).Reason).To(Equal(scheduler.ReasonNoTenant))
	}).WithTimeout(20 * time.Second).Should(Succeed())
}
