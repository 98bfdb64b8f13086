package tenant_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestMain(m *testing.M) { planes.Main(m) }

func ready(t *hostfleetv1alpha1.Tenant) metav1.Condition {
	if c := meta.FindStatusCondition(t.Status.Conditions, hostfleetv1alpha1.ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func TestTenantRegistration(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	f.HubForTest(t, "hub")

	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "edge"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "lab"}}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c2", Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "lab"}}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c3", Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "edge"}}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{
			ClusterSet: "lab", MaxClaims: ptr.To[int32](2),
			Admins: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}

	t.Log("namespace, RBAC, cluster set binding, quota and status appear")
	ta := &hostfleetv1alpha1.Tenant{}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ready(ta).Status).To(Equal(metav1.ConditionTrue), ready(ta).Message)
		g.Expect(ta.Status.Namespaces).To(Equal([]string{"tenant-a"}))
		g.Expect(ta.Status.Clusters).To(Equal([]string{"c1", "c2"}))
		g.Expect(ta.Finalizers).To(ContainElement(hostfleetv1alpha1.TenantFinalizer))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	ns := &corev1.Namespace{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "tenant-a"}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelTenant, "a"))
	mcsb := &clusterv1beta2.ManagedClusterSetBinding{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "lab"}, mcsb)).To(Succeed())
	g.Expect(mcsb.Spec.ClusterSet).To(Equal("lab"))
	quota := &corev1.ResourceQuota{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: hostfleetv1alpha1.TenantQuota}, quota)).To(Succeed())
	g.Expect(quota.Spec.Hard[hostfleetv1alpha1.QuotaClaims]).To(Equal(resource.MustParse("2")))

	t.Log("the admin edits claims and secrets in the tenant's namespace, and nothing else")
	aliceCfg, err := f.AddUser("hub", "alice")
	g.Expect(err).NotTo(HaveOccurred())
	alice, err := client.New(aliceCfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	claim := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "c",
		Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "c1"}}} // placed on c1: its agent may write its status
	g.Expect(alice.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "ud"}})).To(Succeed())
	g.Expect(alice.Create(ctx, claim)).To(Succeed())
	claim.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "x", Name: "forged"}
	g.Expect(apierrors.IsForbidden(alice.Status().Update(ctx, claim))).To(BeTrue(), "tenants never write claim status")
	g.Expect(apierrors.IsForbidden(alice.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}}))).To(BeTrue())
	g.Expect(apierrors.IsForbidden(alice.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "x"}}))).To(BeTrue())

	t.Log("exactly the agents of the set's clusters serve the namespace")
	agent := func(cluster string) client.Client {
		cfg, err := f.AddUser("hub", "system:open-cluster-management:cluster:"+cluster+":addon:hostfleet-agent:agent:hostfleet-agent", hostfleetv1alpha1.AgentHubGroup(cluster))
		g.Expect(err).NotTo(HaveOccurred())
		c, err := client.New(cfg, client.Options{Scheme: f.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		return c
	}
	c1, c3 := agent("c1"), agent("c3")
	g.Expect(c1.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
	g.Expect(c1.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "ud"}, &corev1.Secret{})).To(Succeed())
	claim.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h0"}
	g.Expect(c1.Status().Update(ctx, claim)).To(Succeed())
	g.Expect(apierrors.IsForbidden(c3.Get(ctx, client.ObjectKeyFromObject(claim), &metal3api.HostClaim{}))).To(BeTrue(), "c3 is not in set lab")
	g.Expect(apierrors.IsForbidden(c1.Delete(ctx, claim))).To(BeTrue(), "agents never delete claims")

	t.Log("moving the tenant to another set moves the grants")
	g.Eventually(func() error {
		if err := hub.Get(ctx, client.ObjectKey{Name: "a"}, ta); err != nil {
			return err
		}
		ta.Spec.ClusterSet = "edge"
		return hub.Update(ctx, ta)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ta.Status.Clusters).To(Equal([]string{"c3"}))
		g.Expect(c3.Get(ctx, client.ObjectKeyFromObject(claim), &metal3api.HostClaim{})).To(Succeed())
		g.Expect(apierrors.IsForbidden(c1.Get(ctx, client.ObjectKeyFromObject(claim), &metal3api.HostClaim{}))).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	t.Log("a cluster joining the set gains access")
	g.Expect(hub.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c4",
		Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "edge"}}})).To(Succeed())
	c4 := agent("c4")
	g.Eventually(func() error { return c4.Get(ctx, client.ObjectKeyFromObject(claim), &metal3api.HostClaim{}) }).
		WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("bad inputs: a missing cluster set, a namespace that belongs to another tenant")
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "nope"}})).To(Succeed())
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "thief"},
		Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab", Namespaces: []string{"tenant-a", "thief-ns"}}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		tb := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "b"}, tb)).To(Succeed())
		g.Expect(ready(tb).Reason).To(Equal(hostfleetv1alpha1.ReasonClusterSetMissing))
		g.Expect(ready(tb).Message).To(ContainSubstring("ManagedClusterSet nope does not exist: create it or fix spec.clusterSet"))
		th := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "thief"}, th)).To(Succeed())
		g.Expect(ready(th).Reason).To(Equal(hostfleetv1alpha1.ReasonNamespaceConflict))
		g.Expect(ready(th).Message).To(ContainSubstring("namespace tenant-a belongs to tenant a"))
		g.Expect(th.Status.Namespaces).To(Equal([]string{"thief-ns"}))
		g.Expect(planes.Events(ctx, hub, tb)).To(ContainElement(HavePrefix("Warning/ClusterSetMissing: ManagedClusterSet nope does not exist")))
		g.Expect(planes.Events(ctx, hub, th)).To(ContainElement(HavePrefix("Warning/NamespaceConflict: namespace tenant-a belongs to tenant a")))
		g.Expect(planes.Events(ctx, hub, ta)).To(ContainElement(HavePrefix("Normal/Registered: namespaces tenant-a serve")))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	rb := &rbacv1.RoleBinding{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: hostfleetv1alpha1.TenantAdminRole}, rb)).To(Succeed())
	g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}), "the thief did not touch tenant-a")

	t.Log("a tenant with claims is kept, and says why (admission refuses the delete; should one get through, the finalizer keeps it)")
	g.Expect(hub.Delete(ctx, ta)).To(MatchError(ContainSubstring("tenant a still has 1 claims in tenant-a; delete them first")))
	g.Expect(hub.Delete(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "hostfleet-tenant-delete"}})).To(Succeed())
	g.Eventually(func() error { return hub.Delete(ctx, ta) }).WithTimeout(20 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ready(ta).Reason).To(Equal(hostfleetv1alpha1.ReasonDeletionBlocked))
		g.Expect(ready(ta).Message).To(ContainSubstring("tenant-a/c; delete them first"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(hub.Delete(ctx, claim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(hub.Get(ctx, client.ObjectKey{Name: "a"}, &hostfleetv1alpha1.Tenant{}))).To(BeTrue())
		ns := &corev1.Namespace{}
		err := hub.Get(ctx, client.ObjectKey{Name: "tenant-a"}, ns)
		g.Expect(apierrors.IsNotFound(err) || !ns.DeletionTimestamp.IsZero()).To(BeTrue(), "the namespace is being deleted")
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
