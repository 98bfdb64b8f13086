package main_test

import (
	"context"
	"testing"
	"time"

	"github.com/hostfleet/hostfleet/e2e/programs/chaos"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestLeaderElection: two replicas, one leader (the Lease on the managed
// cluster says which); when the leader stops, the other takes over and serves
// the next claim; when that one is killed (SIGKILL), a third takes over
// within 15 s and binds the claim that waited.
func TestLeaderElection(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bin, f, hub, infra := agentScene(t, 3, 6230, hostName)
	args := []string{
		"--hub-kubeconfig=" + f.Plane("hub").Kubeconfig,
		"--managed-kubeconfig=" + f.Plane("infra-1").Kubeconfig,
		"--cluster-name=infra-1",
		// An 8 s Lease: a killed leader is replaced within 9 s.
		"--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=1s",
	}
	leaseKey := client.ObjectKey{Namespace: "hostfleet-agent", Name: "hostfleet-agent-infra-1"}
	holder := func() string {
		lease := &coordinationv1.Lease{}
		if err := infra.Get(ctx, leaseKey, lease); err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}
	// Replica a starts first and takes the lease; b waits behind it.
	a, err := f.Run("replica-a", "infra-1", bin, args)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(holder).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())
	first := holder()
	b, err := f.Run("replica-b", "infra-1", bin, args)
	g.Expect(err).NotTo(HaveOccurred())

	claim := func(name string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name,
			Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, Annotations: planes.PlacedBy()}}
		g.Expect(hub.Create(ctx, c)).To(Succeed())
		return c
	}
	waitBound := func(c *metal3api.HostClaim) {
		g.Eventually(func(g Gomega) {
			g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			g.Expect(isAssociated(c)).To(BeTrue())
		}).WithTimeout(60 * time.Second).Should(Succeed())
	}
	waitBound(claim("one"))

	g.Consistently(holder).WithTimeout(2*time.Second).Should(Equal(first), "b does not take the lease from a live leader")

	// The leader stops (and releases the lease); b takes over.
	g.Expect(a.Stop()).To(Succeed())
	g.Eventually(holder).WithTimeout(30 * time.Second).ShouldNot(Or(BeEmpty(), Equal(first)))
	second := holder()
	t.Logf("leader %s stopped; %s took over", first, second)
	waitBound(claim("two"))

	// c waits behind b; b is killed (SIGKILL: the Lease is not released)
	// with a claim waiting; c takes the Lease once it expires and binds it.
	_, err = f.Run("replica-c", "infra-1", bin, args)
	g.Expect(err).NotTo(HaveOccurred())
	g.Consistently(holder).WithTimeout(2*time.Second).Should(Equal(second), "c does not take the lease from a live leader")
	killed := time.Now()
	b.Kill()
	three := claim("three")
	g.Eventually(holder).WithTimeout(15*time.Second).WithPolling(100*time.Millisecond).ShouldNot(Equal(second),
		"the standby takes the Lease of a killed leader within its 8 s duration and a retry")
	took := time.Since(killed)
	waitBound(three)
	t.Logf("leader %s killed: %s led %s later, the waiting claim was bound %s after the kill",
		second, holder(), took.Round(100*time.Millisecond), time.Since(killed).Round(100*time.Millisecond))
	g.Expect(time.Since(killed)).To(BeNumerically("<", 15*time.Second), "served within 15 s of the kill")
	g.Eventually(func(g Gomega) {
		c, err := chaos.Invariants(ctx, hub, "tenant-a", map[string]client.Client{"infra-1": infra})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.Converged()).To(BeTrue(), c.String())
	}).WithTimeout(time.Minute).Should(Succeed(), "the invariants of make chaos hold")
}

// TestLeaderLeaseOwned: with --lease-owner, the leader election Lease is
// created owned by the agent's ServiceAccount, and so is one created again
// after it was removed (as the garbage collector removes it with the
// add-on, while a replica still runs): nothing of the agent outlives it.
func TestLeaderLeaseOwned(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bin, f, _, infra := agentScene(t, 0, 6230, hostName)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "hostfleet-agent", Name: "hostfleet-agent"}}
	g.Expect(infra.Create(ctx, sa)).To(Succeed())
	_, err := f.Run("replica", "infra-1", bin, []string{
		"--hub-kubeconfig=" + f.Plane("hub").Kubeconfig,
		"--managed-kubeconfig=" + f.Plane("infra-1").Kubeconfig,
		"--cluster-name=infra-1", "--lease-owner=hostfleet-agent",
		"--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=1s",
	})
	g.Expect(err).NotTo(HaveOccurred())
	key := client.ObjectKey{Namespace: "hostfleet-agent", Name: "hostfleet-agent-infra-1"}
	owned := HaveField("OwnerReferences", ConsistOf(HaveField("UID", sa.UID)))
	lease := &coordinationv1.Lease{}
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, key, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		g.Expect(*lease).To(owned)
		health := &coordinationv1.Lease{}
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: "hostfleet-agent", Name: "hostfleet-agent"}, health)).To(Succeed())
		g.Expect(*health).To(owned, "the health Lease too")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	holder := *lease.Spec.HolderIdentity
	// Both owned: the lease owner is done, and sets no owner any more.
	g.Consistently(func(g Gomega) {
		g.Expect(infra.Get(ctx, key, lease)).To(Succeed())
		g.Expect(*lease.Spec.HolderIdentity).To(Equal(holder))
	}).WithTimeout(6*time.Second).WithPolling(500*time.Millisecond).Should(Succeed(), "one leader, renewing")

	g.Expect(infra.Delete(ctx, lease)).To(Succeed())
	g.Eventually(func(g Gomega) {
		again := &coordinationv1.Lease{}
		g.Expect(infra.Get(ctx, key, again)).To(Succeed())
		g.Expect(again.UID).NotTo(Equal(lease.UID))
		g.Expect(*again).To(owned, "created again by leader election, owned")
	}).WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
}
