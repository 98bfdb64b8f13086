package isolation_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/scheduler"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// schedulingHub is a hub plane of its own with the hub's controllers and
// its scheduler running.
func schedulingHub(t *testing.T) (*planes.Fleet, client.Client) {
	f := planes.ForTestWith(t, planes.Options{Dir: t.TempDir()}, "hub")
	f.HubForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&scheduler.Reconciler{Client: mgr.GetClient(), Deadline: time.Hour}).SetupWithManager(context.Background(), mgr, setup.Options{})
	})
	return f, f.Plane("hub").Client
}

// TestNoPinGetsAroundAClass: a tenant admin whose host class gpu is full
// pins a gpu claim to one of her clusters. The scheduler holds it back as
// it holds back the same claim unpinned (ClassQuotaExceeded): no agent
// serves it (conditions.Admitted), and the annotation that would say the
// scheduler placed it is hers to write no more than its status is.
func TestNoPinGetsAroundAClass(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub := schedulingHub(t)
	gpu := map[string]string{"example.com/gpu": "yes"}
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "lab"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
			LabelSyncPrefixes: []string{"example.com"}, Admins: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
			Quotas: []hostfleetv1alpha1.ClassQuota{{Name: "gpu", MaxClaims: 1, HostSelector: hostfleetv1alpha1.ClassSelector{MatchLabels: gpu}}}}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	inv := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"}, Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "c1"}}
	g.Expect(hub.Create(ctx, inv)).To(Succeed())
	orig := inv.DeepCopy()
	inv.Status.Pools = []hostfleetv1alpha1.HostPool{{Labels: gpu, Namespaces: []string{"tenant-a"}, Total: 4, Available: 4}}
	g.Expect(hub.Status().Patch(ctx, inv, client.MergeFrom(orig))).To(Succeed())
	cfg, err := f.AddUser("hub", "alice", "system:authenticated")
	g.Expect(err).NotTo(HaveOccurred())
	alice, err := client.New(cfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	claim := func(name, pin string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name, Labels: map[string]string{}},
			Spec: metal3api.HostClaimSpec{HostSelector: metal3api.HostSelector{MatchLabels: gpu}}}
		if pin != "" {
			c.Labels[hostfleetv1alpha1.LabelCluster] = pin
		}
		return c
	}
	scheduled := func(g Gomega, c *metal3api.HostClaim) string {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		for _, cond := range c.Status.Conditions {
			if cond.Type == hostfleetv1alpha1.ConditionScheduled {
				return cond.Reason
			}
		}
		return ""
	}

	first := claim("gpu-1", "")
	g.Eventually(func() error { return alice.Create(ctx, first) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(scheduled(g, first)).To(Equal(hostfleetv1alpha1.ReasonPlaced)) }).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("the class is full: the same claim unpinned and pinned are both held back")
	unpinned, pinned := claim("gpu-2", ""), claim("gpu-pinned", "c1")
	g.Expect(alice.Create(ctx, unpinned)).To(Succeed())
	g.Expect(alice.Create(ctx, pinned)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(scheduled(g, unpinned)).To(Equal(hostfleetv1alpha1.ReasonClassQuotaExceeded))
		g.Expect(scheduled(g, pinned)).To(Equal(hostfleetv1alpha1.ReasonClassQuotaExceeded))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(scheduled(g, pinned)).To(Equal(hostfleetv1alpha1.ReasonClassQuotaExceeded))
		g.Expect(conditions.Admitted(pinned)).To(BeFalse(), "no agent serves it")
	}).WithTimeout(3 * time.Second).Should(Succeed())
}
