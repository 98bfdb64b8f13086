package main_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestLeaderElection: two replicas, one leader (the Lease on the managed
// cluster says which); when the leader stops, the other takes over and serves
// the next claim.
func TestLeaderElection(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bin, f, hub, infra := agentScene(t, 2, 6230, hostName)
	args := []string{
		"--hub-kubeconfig=" + f.Plane("hub").Kubeconfig,
		"--managed-kubeconfig=" + f.Plane("infra-1").Kubeconfig,
		"--cluster-name=infra-1",
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
	_, err = f.Run("replica-b", "infra-1", bin, args)
	g.Expect(err).NotTo(HaveOccurred())

	claim := func(name string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name,
			Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}}}
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
	t.Logf("leader %s stopped; %s took over", first, holder())
	waitBound(claim("two"))
}
