package scheduler_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/scheduler"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/setup"
)

func TestMain(m *testing.M) { planes.Main(m) }

func scheduled(c *metal3api.HostClaim) metav1.Condition {
	if s := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled); s != nil {
		return *s
	}
	return metav1.Condition{}
}

// deadline is the bind deadline in this test: long enough for a loaded
// machine to bind a claim in time, short enough to watch one expire.
const deadline = 8 * time.Second

// schedulerPlane is a hub plane running the tenant controller and the
// scheduler with the given bind deadline.
func schedulerPlane(t *testing.T, deadline time.Duration) client.Client {
	f := planes.ForTest(t, "hub")
	f.HubForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&scheduler.Reconciler{Client: mgr.GetClient(), Deadline: deadline}).SetupWithManager(context.Background(), mgr, setup.Options{})
	})
	return f.Plane("hub").Client
}

// lab makes cluster set lab, tenant a over it (label sync prefix
// example.com) and, for each cluster, its ManagedCluster, namespace and
// HostInventory with pools, as the cluster's agent would publish them. It
// returns once the tenant lists the clusters.
func lab(g Gomega, hub client.Client, pools map[string][]hostfleetv1alpha1.HostPool) {
	ctx := context.Background()
	objs := []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"},
			Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab", LabelSyncPrefixes: []string{"example.com"}}},
	}
	clusters := slices.Sorted(maps.Keys(pools))
	for _, c := range clusters {
		objs = append(objs,
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c, Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "lab"}}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}},
		)
	}
	for _, o := range objs {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	for c, pools := range pools {
		inv := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: c, Name: c}, Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: c}}
		g.Expect(hub.Create(ctx, inv)).To(Succeed())
		inv.Status.Pools = pools
		g.Expect(hub.Status().Update(ctx, inv)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		ta := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ta.Status.Clusters).To(Equal(clusters))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// createClaim makes a claim in tenant-a.
func createClaim(g Gomega, hub client.Client, name string, mut func(*metal3api.HostClaim)) *metal3api.HostClaim {
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
	if mut != nil {
		mut(c)
	}
	g.Expect(hub.Create(context.Background(), c)).To(Succeed())
	return c
}

// getter reads a claim again.
func getter(hub client.Client) func(g Gomega, c *metal3api.HostClaim) *metal3api.HostClaim {
	return func(g Gomega, c *metal3api.HostClaim) *metal3api.HostClaim {
		g.Expect(hub.Get(context.Background(), client.ObjectKeyFromObject(c), c)).To(Succeed())
		return c
	}
}

func TestScheduling(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub := schedulerPlane(t, deadline)

	gpu := map[string]string{"example.com/gpu": "yes"}
	// The agents' inventories: one free gpu host on each cluster, and plain hosts on c1.
	lab(g, hub, map[string][]hostfleetv1alpha1.HostPool{
		"c1": {{Labels: gpu, Namespaces: []string{"tenant-a"}, Total: 1, Available: 1}, {Namespaces: []string{"tenant-a"}, Total: 5, Available: 5}},
		"c2": {{Labels: gpu, Namespaces: []string{"tenant-a"}, Total: 1, Available: 1}},
	})

	newClaim := func(name string, mut func(*metal3api.HostClaim)) *metal3api.HostClaim {
		return createClaim(g, hub, name, mut)
	}
	get := getter(hub)

	t.Log("two gpu claims take the one free gpu host of each cluster; a third waits and says why")
	first := newClaim("gpu-1", func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = gpu })
	var firstCluster string
	g.Eventually(func(g Gomega) {
		get(g, first)
		g.Expect(scheduled(first).Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced))
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
				g.Expect(scheduled(c).Reason).To(Equal(hostfleetv1alpha1.ReasonNoCapacity))
				g.Expect(scheduled(c).Message).To(ContainSubstring("no cluster has a free host matching {example.com/gpu=yes} for namespace tenant-a"))
				g.Expect(planes.Events(ctx, hub, c)).To(ContainElement(HavePrefix("Warning/NoCapacity: no cluster has a free host matching")), "unschedulable, with why")
			}
		}
		g.Expect(placed).To(Equal(map[string]int{"c1": 1, "c2": 1}), "one per cluster")
		g.Expect(waiting).To(Equal(1))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("a bound claim stays; an unbound one is placed elsewhere after the deadline")
	var bound *metal3api.HostClaim
	for _, c := range []*metal3api.HostClaim{second, third} {
		if get(g, c).Labels[hostfleetv1alpha1.LabelCluster] == "" {
			continue
		}
		// This one is bound, as its agent would report; and its agent's
		// status write won a race against the scheduler's, leaving a stale
		// Scheduled condition (the scheduler writes the same status:
		// re-read on conflict).
		bound = c
		g.Eventually(func() error {
			if err := hub.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
				return err
			}
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionAssociated, Status: metav1.ConditionTrue, Reason: "BareMetalHostAssociated"})
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionScheduled, Status: metav1.ConditionFalse,
				Reason: hostfleetv1alpha1.ReasonNoCapacity, Message: "no cluster has a free host (stale)"})
			c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h"}
			return hub.Status().Update(ctx, c)
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	g.Expect(bound).NotTo(BeNil())
	g.Eventually(func(g Gomega) {
		get(g, bound)
		g.Expect(scheduled(bound).Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced), "a stale Scheduled condition on a bound claim is repaired")
		g.Expect(scheduled(bound).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		get(g, first)
		g.Expect(first.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationExcluded, firstCluster))
		g.Expect(scheduled(first).Reason).To(BeElementOf(hostfleetv1alpha1.ReasonNoCapacity, hostfleetv1alpha1.ReasonRescheduling))
		g.Expect(planes.Events(ctx, hub, first)).To(ContainElement(HavePrefix("Warning/Rescheduling: "+firstCluster+" did not bind the claim")), "scheduled, then re-placed")
	}).WithTimeout(deadline + 20*time.Second).Should(Succeed())

	t.Log("a bound claim that loses its cluster label is not placed again: it holds a host")
	boundCluster := bound.Labels[hostfleetv1alpha1.LabelCluster]
	g.Eventually(func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(bound), bound); err != nil {
			return err
		}
		delete(bound.Labels, hostfleetv1alpha1.LabelCluster)
		return hub.Update(ctx, bound)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		get(g, bound)
		g.Expect(scheduled(bound).Reason).To(Equal(hostfleetv1alpha1.ReasonHoldsHost))
		g.Expect(scheduled(bound).Message).To(ContainSubstring("the claim holds host hosts/h but has no hostfleet.io/cluster label"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, bound).Labels).NotTo(HaveKey(hostfleetv1alpha1.LabelCluster), "never re-placed (it was on %s)", boundCluster)
	}).WithTimeout(3 * time.Second).Should(Succeed())

	t.Log("pins: inside the set honoured and never moved, outside refused with what to do")
	pinned := newClaim("pinned", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelCluster] = "c1" })
	outside := newClaim("outside", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelCluster] = "c9" })
	g.Eventually(func(g Gomega) {
		g.Expect(scheduled(get(g, pinned)).Reason).To(Equal(hostfleetv1alpha1.ReasonPinned))
		g.Expect(scheduled(get(g, outside)).Reason).To(Equal(hostfleetv1alpha1.ReasonPinnedOutsideSet))
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
		g.Expect(scheduled(c).Reason).To(Equal(hostfleetv1alpha1.ReasonNoTenant))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("a 42 KB placement annotation (an administrator's: tenants are refused at admission) still gets a bounded condition")
	huge := newClaim("huge-placement", func(c *metal3api.HostClaim) {
		c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationPlacement: strings.Repeat("p", 42*1024)}
	})
	g.Eventually(func(g Gomega) {
		get(g, huge)
		g.Expect(scheduled(huge).Reason).To(Equal(hostfleetv1alpha1.ReasonNoCapacity))
		g.Expect(len(scheduled(huge).Message)).To(BeNumerically("<=", conditions.MaxConditionMessage))
		g.Expect(scheduled(huge).Message).To(HavePrefix("Placement ppp"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

// TestPlacementAndShrink: a Placement that selects nothing, then something;
// an inventory that shrinks under claims placed and not yet bound. The bind
// deadline is long here: nothing is re-placed behind the test's back.
func TestPlacementAndShrink(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub := schedulerPlane(t, time.Hour)
	objs := []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "lab"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
	}
	for _, o := range objs {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	inv := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"}, Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "c1"}}
	g.Expect(hub.Create(ctx, inv)).To(Succeed())
	setAvailable := func(n int32) {
		g.Eventually(func() error {
			if err := hub.Get(ctx, client.ObjectKeyFromObject(inv), inv); err != nil {
				return err
			}
			inv.Status.Pools = []hostfleetv1alpha1.HostPool{{Namespaces: []string{"tenant-a"}, Total: 3, Available: n}}
			return hub.Status().Update(ctx, inv)
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	setAvailable(3)
	g.Eventually(func(g Gomega) {
		ta := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ta.Status.Clusters).To(Equal([]string{"c1"}))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	claim := func(name string, annotations map[string]string) *metal3api.HostClaim {
		return createClaim(g, hub, name, func(c *metal3api.HostClaim) { c.Annotations = annotations })
	}
	get := getter(hub)

	t.Log("a Placement that selects nothing: the claim waits and says which Placement to fix")
	nowhere := claim("nowhere", map[string]string{hostfleetv1alpha1.AnnotationPlacement: "picky"})
	g.Eventually(func(g Gomega) {
		s := scheduled(get(g, nowhere))
		g.Expect(s.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(s.Reason).To(Equal(hostfleetv1alpha1.ReasonNoCapacity))
		g.Expect(s.Message).To(Equal("Placement picky selects none of the tenant's clusters (c1): change the Placement, or remove the hostfleet.io/placement annotation"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(nowhere.Labels).NotTo(HaveKey(hostfleetv1alpha1.LabelCluster))

	t.Log("... and is placed as soon as the Placement decides for c1")
	pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "picky-1",
		Labels: map[string]string{clusterv1beta1.PlacementLabel: "picky"}}}
	g.Expect(hub.Create(ctx, pd)).To(Succeed())
	pd.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "c1"}}
	g.Expect(hub.Status().Update(ctx, pd)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, nowhere).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
		g.Expect(scheduled(nowhere).Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("two more claims fill c1's three free hosts, none bound yet")
	more := []*metal3api.HostClaim{claim("m1", nil), claim("m2", nil)}
	g.Eventually(func(g Gomega) {
		for _, c := range more {
			g.Expect(get(g, c).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
		}
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("the inventory shrinks to one free host under three placed claims: nothing more goes to c1")
	setAvailable(1)
	late := claim("late", nil)
	g.Eventually(func(g Gomega) {
		s := scheduled(get(g, late))
		g.Expect(s.Reason).To(Equal(hostfleetv1alpha1.ReasonNoCapacity))
		g.Expect(s.Message).To(ContainSubstring("c1 (1 free matching hosts after 3 pending claims)"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(late.Labels).NotTo(HaveKey(hostfleetv1alpha1.LabelCluster))
	for _, c := range append(more, nowhere) {
		g.Expect(get(g, c).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"), "placed claims are not taken back before their deadline")
	}

	t.Log("hosts come back: the waiting claim is placed")
	setAvailable(3)
	g.Eventually(func(g Gomega) {
		s := scheduled(get(g, late))
		g.Expect(s.Reason).To(Equal(hostfleetv1alpha1.ReasonNoCapacity), "three free hosts, three pending claims: still full")
		g.Expect(s.Message).To(ContainSubstring("c1 (3 free matching hosts after 3 pending claims)"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	// The agent binds one of them: one host is taken, one claim no longer pending.
	g.Eventually(func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(more[0]), more[0]); err != nil {
			return err
		}
		meta.SetStatusCondition(&more[0].Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionAssociated, Status: metav1.ConditionTrue, Reason: "BareMetalHostAssociated"})
		more[0].Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h"}
		return hub.Status().Update(ctx, more[0])
	}).WithTimeout(10 * time.Second).Should(Succeed())
	setAvailable(4)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, late).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"), "%+v", scheduled(late))
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

// TestPlacementIsOneStatusWrite: placing a claim is two writes, its
// cluster label, then its Scheduled condition (the scheduler's alone:
// claimstatus), which says why it went there; no Event, and once placed,
// the scheduler writes nothing more.
func TestPlacementIsOneStatusWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	f.HubForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&scheduler.Reconciler{Client: mgr.GetClient(), Deadline: time.Hour}).SetupWithManager(ctx, mgr, setup.Options{})
	})
	hub := f.Plane("hub").Client
	lab(g, hub, map[string][]hostfleetv1alpha1.HostPool{"c1": {{Namespaces: []string{"tenant-a"}, Total: 3, Available: 3}}})
	get := getter(hub)
	// A first claim placed: the scheduler's cache has the tenant's
	// clusters (before, a claim may be said NoCapacity for a moment).
	first := createClaim(g, hub, "first", nil)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, first).Labels).To(HaveKey(hostfleetv1alpha1.LabelCluster))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	watcher, err := client.NewWithWatch(f.Plane("hub").Config, client.Options{Scheme: hub.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := watcher.Watch(ctx, &metal3api.HostClaimList{}, client.InNamespace("tenant-a"), client.MatchingFields{"metadata.name": "placed"})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	var writes atomic.Int32
	go func() {
		for e := range w.ResultChan() {
			if e.Type == watch.Modified {
				writes.Add(1)
			}
		}
	}()
	c := createClaim(g, hub, "placed", nil)
	g.Eventually(func(g Gomega) {
		got := get(g, c)
		g.Expect(got.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
		g.Expect(scheduled(got)).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", hostfleetv1alpha1.ReasonPlaced),
			HaveField("Message", "placed on c1: 2 free hosts match")))
	}).WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	g.Consistently(writes.Load).WithTimeout(3*time.Second).Should(Equal(int32(2)), "the label, then the condition; nothing after")
	g.Expect(planes.Events(ctx, hub, c)).To(BeEmpty(), "the condition says it: no Event")
}

// TestPausedClaimStays: the bind deadline moves an unbound claim, never a
// paused one (a Cluster API cluster paused or being moved), nor one whose
// failed host its agent replaced there (it waits there for another).
func TestPausedClaimStays(t *testing.T) {
	g := NewWithT(t)
	hub := schedulerPlane(t, deadline)
	lab(g, hub, map[string][]hostfleetv1alpha1.HostPool{
		"c1": {{Namespaces: []string{"tenant-a"}, Total: 3, Available: 3}},
	})
	get := getter(hub)
	paused := createClaim(g, hub, "paused", func(c *metal3api.HostClaim) {
		c.Annotations[hostfleetv1alpha1.AnnotationPaused] = "metal3.io/capm3"
	})
	replaced := createClaim(g, hub, "replaced", func(c *metal3api.HostClaim) {
		c.Annotations[hostfleetv1alpha1.AnnotationReplacements] = `{"count":1}`
	})
	g.Eventually(func(g Gomega) {
		g.Expect(scheduled(get(g, paused)).Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced))
		g.Expect(scheduled(get(g, replaced)).Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	unpaused := createClaim(g, hub, "unpaused", nil)
	g.Eventually(func(g Gomega) {
		for _, c := range []*metal3api.HostClaim{get(g, paused), get(g, unpaused)} {
			g.Expect(scheduled(c).Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced), c.Name)
		}
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("neither binds: past the deadline, the unpaused claim moves and the paused one stays")
	g.Eventually(func(g Gomega) {
		get(g, unpaused)
		g.Expect(unpaused.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationExcluded, "c1"))
	}).WithTimeout(deadline + 20*time.Second).Should(Succeed())
	// The paused claim was placed first: its deadline passed before the
	// other's; it stays while the scheduler would have moved it.
	g.Consistently(func(g Gomega) {
		for _, c := range []*metal3api.HostClaim{get(g, paused), get(g, replaced)} {
			g.Expect(c.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"), c.Name)
			g.Expect(c.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationExcluded), c.Name)
			g.Expect(scheduled(c).Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced), c.Name)
		}
	}).WithTimeout(3 * time.Second).Should(Succeed())
}
