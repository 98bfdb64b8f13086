package admission_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/admission"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/tenant"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// TestClaimFinalizers: while a claim's cluster is Available, nobody but
// the hub and that cluster's own agent lets go of the claim, a cluster
// administrator with plain kubectl included (forget-cluster's rule, held
// by the API server); once the cluster is not Available, the
// administrator may.
func TestClaimFinalizers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	g.Expect(admission.Install(ctx, hub)).To(Succeed())
	f.ManagerForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&tenant.Reconciler{Client: mgr.GetClient(), Scheme: f.Scheme}).SetupWithManager(context.Background(), mgr, setup.Options{})
	})
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "lab"}}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c2", Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "lab"}}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	g.Expect(planes.SetClusterAvailable(ctx, hub, "c1", metav1.ConditionTrue)).To(Succeed())
	g.Expect(planes.SetClusterAvailable(ctx, hub, "c2", metav1.ConditionTrue)).To(Succeed())
	tenantSays := func(unavailable ...string) {
		g.Eventually(func(g Gomega) {
			ta := &hostfleetv1alpha1.Tenant{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
			g.Expect(ta.Status.Clusters).To(Equal([]string{"c1", "c2"}))
			g.Expect(ta.Status.UnavailableClusters).To(Equal(unavailable))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
	tenantSays()

	admin, err := f.AddUser("hub", "cluster-admin", "system:masters")
	g.Expect(err).NotTo(HaveOccurred())
	root, err := client.New(admin, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	agentCfg, err := f.AddUser("hub", "system:open-cluster-management:cluster:c1:addon:hostfleet-agent:agent:hostfleet-agent",
		hostfleetv1alpha1.AgentHubGroup("c1"), hostfleetv1alpha1.AgentSharedGroup)
	g.Expect(err).NotTo(HaveOccurred())
	ownAgent, err := client.New(agentCfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hub.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "agent-c1"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: hostfleetv1alpha1.AgentHubGroup("c1")}}})).To(Succeed())

	deleting := func(name, cluster string, finalizers ...string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name, Finalizers: finalizers,
			Labels: map[string]string{hostfleetv1alpha1.LabelCluster: cluster}}}
		g.Eventually(func() error { return hub.Create(ctx, c) }).WithTimeout(30 * time.Second).Should(Succeed())
		g.Expect(hub.Delete(ctx, c)).To(Succeed())
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		return c
	}
	strip := func(as client.Client, c *metal3api.HostClaim) error {
		fresh := &metal3api.HostClaim{}
		if err := as.Get(ctx, client.ObjectKeyFromObject(c), fresh); err != nil {
			return err
		}
		fresh.Finalizers = nil
		return as.Update(ctx, fresh, client.DryRunAll)
	}
	pulled := deleting("pulled", "c1", hostfleetv1alpha1.AgentFinalizer)
	forwarded := deleting("forwarded", "c1", hostfleetv1alpha1.ForwarderFinalizer)
	onC2 := deleting("on-c2", "c2", hostfleetv1alpha1.AgentFinalizer)

	t.Log("c1 Available: a cluster administrator may not let go of its claims; c1's agent and the hub may")
	g.Eventually(func() error { return strip(root, pulled) }).WithTimeout(20 * time.Second).Should(MatchError(ContainSubstring(
		"cluster c1 is Available: its agent removes hostfleet.io/agent once it has released the claim's host")))
	g.Expect(strip(root, forwarded)).To(MatchError(ContainSubstring("the hub removes hostfleet.io/forwarder")))
	g.Expect(strip(ownAgent, pulled)).To(Succeed(), "its own agent")
	g.Expect(strip(ownAgent, onC2)).NotTo(Succeed(), "not another cluster's agent")
	// The packages' tests share the plane, and another's Install may have
	// named another hub user: the API server takes the policy this test
	// installed a moment later.
	g.Eventually(func() error { return strip(hub, pulled) }).WithTimeout(20*time.Second).Should(Succeed(), "the hub")
	g.Expect(strip(hub, forwarded)).To(Succeed(), "the hub")

	t.Log("c1 no longer Available: the administrator lets go (forget-cluster); c2's claim stays guarded")
	g.Expect(planes.SetClusterAvailable(ctx, hub, "c1", metav1.ConditionUnknown)).To(Succeed())
	tenantSays("c1")
	g.Eventually(func() error { return strip(root, pulled) }).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(strip(root, forwarded)).To(Succeed())
	g.Expect(strip(root, onC2)).To(MatchError(ContainSubstring("cluster c2 is Available")))
}
