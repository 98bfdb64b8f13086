package scheduler

import (
	"context"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/requeue"
)

// TestExpectationsRemove: a write that failed forgets its own placement,
// not a later one of the same claim.
func TestExpectationsRemove(t *testing.T) {
	g := NewWithT(t)
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "c", UID: "u1"}}
	var e expectations
	e.add(c, "x")
	e.add(c, "y")
	e.remove(c, "x")
	g.Expect(e.has(c)).To(BeTrue(), "the placement on y stands")
	g.Expect(e.missing(func(*metal3api.HostClaim) bool { return false })).To(HaveKeyWithValue("y", HaveLen(1)))
	e.remove(c, "y")
	g.Expect(e.has(c)).To(BeFalse())
}

// TestStaleClaimNotPlacedTwice: a claim whose placement the cache does not
// show yet (the scale benchmark: an inventory event enqueued every unplaced
// claim, this one among them) is not decided again. Deciding again placed it
// a second time, and the first placement stopped being counted: its cluster
// got more claims than hosts.
func TestStaleClaimNotPlacedTwice(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub := planes.ForTest(t, "hub").Plane("hub").Client
	for _, o := range []client.Object{
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "c"}}
	g.Expect(hub.Create(ctx, c)).To(Succeed())

	// The scheduler's stores show nothing placed: the cache is behind its
	// own placement of the claim on x, which it expects.
	stores := func() toolscache.Indexer {
		return toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
			pendingIndex:  func(any) ([]string, error) { return nil, nil },
			unplacedIndex: func(any) ([]string, error) { return nil, nil },
		})
	}
	r := &Reconciler{Client: hub, Recorder: events.NewFakeRecorder(10), claims: stores(), inventories: stores()}
	g.Expect(r.claims.Add(c.DeepCopy())).To(Succeed(), "the cache shows the claim unplaced")
	r.expect.add(c, "x")

	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(requeue.CacheLag), "looked at again once the cache shows the placement")
	g.Expect(r.expect.has(c)).To(BeTrue(), "the placement on x is still counted")
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
	g.Expect(meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)).To(BeNil(), "no second decision written")
}
