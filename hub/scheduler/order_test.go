package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// clusterInv is cluster's inventory as decide reads it (named after it, in
// its namespace).
func clusterInv(cluster string, pools ...hostfleetv1alpha1.HostPool) *hostfleetv1alpha1.HostInventory {
	i := inv(pools...)
	i.Namespace, i.Name = cluster, cluster
	return i
}

func TestOrder(t *testing.T) {
	g := NewWithT(t)
	o := newOrder()
	o.set("a", clusterInv("a", pool(2, "", nil), pool(1, "", nil)))
	o.set("b", clusterInv("b", pool(3, "", nil)))
	o.set("c", clusterInv("c", pool(1, "", nil)))
	o.set("d", clusterInv("d", pool(3, "", nil)))
	g.Expect(o.levels).To(Equal([]int32{3, 1}))
	g.Expect(o.at[3]).To(Equal([]string{"a", "b", "d"}))

	visited := func(start uint32, best int) []string {
		var out []string
		o.walk(start, func() int { return best }, func(cl string) bool { out = append(out, cl); return true })
		return out
	}
	g.Expect(visited(0, 0)).To(Equal([]string{"a", "b", "d", "c"}), "most first, then by name")
	g.Expect(visited(4, 0)).To(Equal([]string{"b", "d", "a", "c"}), "equals from the start-th on, wrapping")
	g.Expect(visited(0, 1)).To(Equal([]string{"a", "b", "d"}), "none that cannot beat the best")
	g.Expect(visited(0, 3)).To(BeEmpty())

	o.set("a", clusterInv("a", pool(0, "", nil)))
	o.set("c", nil)
	g.Expect(o.levels).To(Equal([]int32{3, 0}))
	g.Expect(o.at).NotTo(HaveKey(int32(1)), "a count without clusters goes")
	g.Expect(o.of).NotTo(HaveKey("c"))
	var out []string
	o.walk(0, func() int { return len(out) * 3 }, func(cl string) bool { out = append(out, cl); return true })
	g.Expect(out).To(Equal([]string{"b"}), "the walk stops as soon as the best found cannot be beaten")
}

// TestWalkFindsTheMostFree: over random inventories and pending claims, the
// cluster a decision chooses from its walk's shortlist has as many free
// matching hosts as the best of every cluster (Place over all of them), and
// a claim placed nowhere is told why as Place over all of them tells it.
func TestWalkFindsTheMostFree(t *testing.T) {
	g := NewWithT(t)
	rng := rand.New(rand.NewPCG(1, 2))
	gpu := map[string]string{"example.com/gpu": "yes"}
	for round := range 20 {
		r := &Reconciler{order: newOrder(),
			inventories: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{}),
			claims:      toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, claimIndexers())}
		var clusters []string
		invs := map[string]*hostfleetv1alpha1.HostInventory{}
		pending := map[string][]*metal3api.HostClaim{}
		for i := range 60 {
			cl := fmt.Sprintf("c%02d", i)
			clusters = append(clusters, cl)
			i := clusterInv(cl, pool(rng.Int32N(4), "", nil), pool(rng.Int32N(4), "", gpu), pool(rng.Int32N(4), "", nil, "tenant-b"))
			invs[cl] = i
			g.Expect(r.inventories.Add(i)).To(Succeed())
			r.order.set(cl, i)
			for j := range rng.IntN(3) {
				p := claim(func(c *metal3api.HostClaim) {
					c.Name, c.UID = fmt.Sprintf("p-%s-%d", cl, j), types.UID(fmt.Sprintf("p-%s-%d", cl, j))
					c.Labels = map[string]string{hostfleetv1alpha1.LabelCluster: cl}
					c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationPlacedBy: hostfleetv1alpha1.PlacedByScheduler}
				})
				g.Expect(r.claims.Add(p)).To(Succeed())
				pending[cl] = append(pending[cl], p)
			}
		}
		for k := range 10 {
			c := claim(func(c *metal3api.HostClaim) {
				c.UID = types.UID(fmt.Sprintf("u-%d-%d", round, k))
				switch k % 3 {
				case 0:
					c.Spec.HostSelector.MatchLabels = gpu
				case 1:
					c.Spec.HostSelector.MatchLabels = map[string]string{"example.com/gpu": "no"} // nowhere
				}
			})
			tenant := &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"},
				Spec: hostfleetv1alpha1.TenantSpec{LabelSyncPrefixes: []string{"example.com"}}, Status: hostfleetv1alpha1.TenantStatus{Clusters: clusters}}
			got, _, _, err := r.decide(context.Background(), c, tenant, clusters)
			g.Expect(err).NotTo(HaveOccurred())
			r.expect = expectations{} // each claim decided on the same state
			all := Place(Input{Claim: c, Clusters: clusters, Inventories: invs, Pending: pending, Prefixes: []string{"example.com"}})
			g.Expect(got.Cluster != "").To(Equal(all.Cluster != ""), "round %d claim %d: %s / %s", round, k, got.Message, all.Message)
			g.Expect(got.Free).To(Equal(all.Free), "round %d claim %d: %s / %s", round, k, got.Message, all.Message)
			if all.Cluster == "" {
				g.Expect(got.Message).To(Equal(all.Message), "nowhere: why, of every cluster")
			}
		}
	}
}
