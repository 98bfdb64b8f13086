package main_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
// the next claim.
func TestLeaderElection(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bin := buildAgent(t)
	f := planes.ForTest(t, "hub", "infra-1")
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	tenantA(t, hub)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hostfleet-agent"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "all"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: ".*"}}},
	} {
		g.Expect(infra.Create(ctx, o)).To(Succeed())
	}
	for i := 0; i < 2; i++ {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%d", i)},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", 6230+i), CredentialsName: "bmc"}}}
		g.Expect(infra.Create(ctx, h)).To(Succeed())
		h.Status.Provisioning.State = metal3api.StateAvailable
		h.Status.OperationalStatus = metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}
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
