package placedclaim_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/placedclaim"
	"github.com/hostfleet/hostfleet/internal/setup"
)

func TestMain(m *testing.M) { planes.Main(m) }

// TestKeepsEachPlacedClaimsCopy follows one claim through its life on a
// real API server: placed, changed, moved, its copy deleted by hand,
// forwarded, placed again and deleted.
func TestKeepsEachPlacedClaimsCopy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	f.ManagerForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&placedclaim.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, setup.Options{})
	})
	for _, ns := range []string{"tenant-a", "c1", "c2"} {
		g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	claim := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web"}}
	g.Expect(hub.Create(ctx, claim)).To(Succeed())
	copies := func(g Gomega) []hostfleetv1alpha1.PlacedClaim {
		var l hostfleetv1alpha1.PlacedClaimList
		g.Expect(hub.List(ctx, &l)).To(Succeed())
		return l.Items
	}
	// copyIn is the claim in the one copy there is, which is in cluster.
	copyIn := func(g Gomega, cluster string) *metal3api.HostClaim {
		items := copies(g)
		g.Expect(items).To(HaveLen(1))
		g.Expect(items[0].Namespace).To(Equal(cluster))
		c := &metal3api.HostClaim{}
		g.Expect(json.Unmarshal(items[0].Claim.Raw, c)).To(Succeed())
		return c
	}
	update := func(mutate func(c *metal3api.HostClaim)) {
		g.Eventually(func() error {
			if err := hub.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
				return err
			}
			mutate(claim)
			return hub.Update(ctx, claim)
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	g.Consistently(copies).WithTimeout(time.Second).Should(BeEmpty(), "an unplaced claim has no copy")

	update(func(c *metal3api.HostClaim) { c.Labels = map[string]string{hostfleetv1alpha1.LabelCluster: "c1"} })
	g.Eventually(func(g Gomega) {
		c := copyIn(g, "c1")
		g.Expect(c.ResourceVersion).To(Equal(claim.ResourceVersion))
		g.Expect(c.UID).To(Equal(claim.UID))
	}).WithTimeout(10*time.Second).Should(Succeed(), "placed on c1: a copy in c1's namespace")

	update(func(c *metal3api.HostClaim) { c.Spec.PoweredOn = true })
	g.Eventually(func(g Gomega) {
		c := copyIn(g, "c1")
		g.Expect(c.Spec.PoweredOn).To(BeTrue())
		g.Expect(c.ResourceVersion).To(Equal(claim.ResourceVersion))
	}).WithTimeout(10*time.Second).Should(Succeed(), "a change reaches the copy")

	g.Expect(hub.Delete(ctx, &copies(g)[0])).To(Succeed())
	g.Eventually(func(g Gomega) { copyIn(g, "c1") }).WithTimeout(10*time.Second).Should(Succeed(), "a copy deleted by hand is written again")

	update(func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelCluster] = "c2" })
	g.Eventually(func(g Gomega) { copyIn(g, "c2") }).WithTimeout(10*time.Second).Should(Succeed(), "moved to c2: only c2 has it")

	update(func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelKind] = hostfleetv1alpha1.KindRemote })
	g.Eventually(copies).WithTimeout(10*time.Second).Should(BeEmpty(), "a forwarded claim has no copy")

	update(func(c *metal3api.HostClaim) { delete(c.Labels, hostfleetv1alpha1.LabelKind) })
	g.Eventually(func(g Gomega) { copyIn(g, "c2") }).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(hub.Delete(ctx, claim)).To(Succeed())
	g.Eventually(copies).WithTimeout(10*time.Second).Should(BeEmpty(), "the claim gone: its copy too")
}
