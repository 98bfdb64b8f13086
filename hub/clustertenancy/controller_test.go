package clustertenancy_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestMain(m *testing.M) { planes.Main(m) }

type served = hostfleetv1alpha1.ServedTenant

// TestClusterTenancy: each cluster's ClusterTenancy lists the tenants it
// serves and whose workload cluster it is; it follows their namespaces,
// prefixes and cluster sets, is written once its namespace exists, is put
// back when edited by hand, and is not rewritten by claim counts.
func TestClusterTenancy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	f.HubForTest(t, "hub")

	set := func(name string) map[string]string { return map[string]string{clusterv1beta2.ClusterSetLabel: name} }
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "edge"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c3"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: set("lab")}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c2", Labels: set("lab")}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c3", Labels: map[string]string{
			clusterv1beta2.ClusterSetLabel: "edge", hostfleetv1alpha1.LabelTenant: "a"}}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{
			ClusterSet: "lab", LabelSyncPrefixes: []string{"example.com"}}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: hostfleetv1alpha1.TenantSpec{
			ClusterSet: "edge", Namespaces: []string{"b1", "b2"}}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	g.Expect(planes.AcceptCluster(ctx, hub, "c3")).To(Succeed())
	tenancy := func(g Gomega, cluster string) *hostfleetv1alpha1.ClusterTenancy {
		ct := &hostfleetv1alpha1.ClusterTenancy{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: hostfleetv1alpha1.TenancyName}, ct)).To(Succeed())
		return ct
	}
	labelled := func(ns, tenant string) hostfleetv1alpha1.NamespaceLabels {
		return hostfleetv1alpha1.NamespaceLabels{Name: ns, Labels: map[string]string{corev1.LabelMetadataName: ns, hostfleetv1alpha1.LabelTenant: tenant}}
	}
	a := served{Name: "a", Namespaces: []string{"tenant-a"}, LabelSyncPrefixes: []string{"example.com"},
		NamespaceLabels: []hostfleetv1alpha1.NamespaceLabels{labelled("tenant-a", "a")}}
	b := served{Name: "b", Namespaces: []string{"b1", "b2"}, NamespaceLabels: []hostfleetv1alpha1.NamespaceLabels{labelled("b1", "b"), labelled("b2", "b")}}

	t.Log("c1 serves a; c3 serves b and is a's only workload cluster; c2 has no namespace yet, so no ClusterTenancy")
	var c1 *hostfleetv1alpha1.ClusterTenancy
	g.Eventually(func(g Gomega) {
		c1 = tenancy(g, "c1")
		g.Expect(c1.Spec).To(Equal(hostfleetv1alpha1.ClusterTenancySpec{ClusterName: "c1", Tenants: []served{a}}))
		g.Expect(c1.OwnerReferences).To(ConsistOf(HaveField("Name", "c1")), "owned by the ManagedCluster: it goes with it")
		onlyA := a
		onlyA.OnlyWorkloadCluster = true
		g.Expect(tenancy(g, "c3").Spec).To(Equal(hostfleetv1alpha1.ClusterTenancySpec{ClusterName: "c3",
			Tenants: []served{b}, WorkloadTenants: []served{onlyA}}))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	err := hub.Get(ctx, client.ObjectKey{Namespace: "c2", Name: hostfleetv1alpha1.TenancyName}, &hostfleetv1alpha1.ClusterTenancy{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no namespace c2, no ClusterTenancy: %v", err)

	t.Log("c2's namespace appears: so does its ClusterTenancy")
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c2"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(tenancy(g, "c2").Spec.Tenants).To(Equal([]served{a}))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("claims counted on the Tenant do not rewrite the ClusterTenancies")
	c1 = tenancy(g, "c1")
	g.Expect(hub.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "x"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		tn := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, tn)).To(Succeed())
		g.Expect(tn.Status.Claims).To(BeEquivalentTo(1))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(tenancy(g, "c1").ResourceVersion).To(Equal(c1.ResourceVersion))
	}).WithTimeout(2 * time.Second).Should(Succeed())

	t.Log("a's prefixes change: every cluster of a, infrastructure or workload, sees them")
	tn := &hostfleetv1alpha1.Tenant{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, tn)).To(Succeed())
	tn.Spec.LabelSyncPrefixes = []string{"example.com", "rack.example.com"}
	g.Expect(hub.Update(ctx, tn)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, c := range []string{"c1", "c2"} {
			g.Expect(tenancy(g, c).Spec.Tenants).To(ConsistOf(HaveField("LabelSyncPrefixes", ConsistOf("example.com", "rack.example.com"))))
		}
		g.Expect(tenancy(g, "c3").Spec.WorkloadTenants).To(ConsistOf(HaveField("LabelSyncPrefixes", ConsistOf("example.com", "rack.example.com"))))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("a namespace of a is labelled: every cluster of a sees its labels (agents read no hub Namespace)")
	ns := &corev1.Namespace{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "tenant-a"}, ns)).To(Succeed())
	ns.Labels["rack"] = "r1"
	g.Expect(hub.Update(ctx, ns)).To(Succeed())
	rack := HaveField("NamespaceLabels", ConsistOf(HaveField("Labels", HaveKeyWithValue("rack", "r1"))))
	g.Eventually(func(g Gomega) {
		for _, c := range []string{"c1", "c2"} {
			g.Expect(tenancy(g, c).Spec.Tenants).To(ConsistOf(rack))
		}
		g.Expect(tenancy(g, "c3").Spec.WorkloadTenants).To(ConsistOf(rack))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("c2 moves to edge: it serves b instead of a; c1 is not rewritten")
	c1 = tenancy(g, "c1")
	mc := &clusterv1.ManagedCluster{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "c2"}, mc)).To(Succeed())
	mc.Labels = set("edge")
	g.Expect(hub.Update(ctx, mc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(tenancy(g, "c2").Spec.Tenants).To(Equal([]served{b}))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(tenancy(g, "c1").ResourceVersion).To(Equal(c1.ResourceVersion))

	t.Log("an edit by hand is put back")
	c1 = tenancy(g, "c1")
	c1.Spec.Tenants = append(c1.Spec.Tenants, served{Name: "z", Namespaces: []string{"kube-system"}})
	g.Expect(hub.Update(ctx, c1)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(tenancy(g, "c1").Spec.Tenants).To(ConsistOf(HaveField("Name", "a")))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("a FirmwareBaseline is carried to every cluster, and follows its changes")
	fb := &hostfleetv1alpha1.FirmwareBaseline{ObjectMeta: metav1.ObjectMeta{Name: "r750"}, Spec: hostfleetv1alpha1.FirmwareBaselineSpec{
		BIOSSettings: map[string]string{"SecureBoot": "Enabled"}, BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{}}}
	g.Expect(hub.Create(ctx, fb)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, c := range []string{"c1", "c2", "c3"} {
			g.Expect(tenancy(g, c).Spec.FirmwareBaselines).To(Equal([]hostfleetv1alpha1.ServedBaseline{{Name: "r750", Spec: fb.Spec}}))
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
	fb.Spec.BIOSSettings["BootMode"] = "Uefi"
	g.Expect(hub.Update(ctx, fb)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(tenancy(g, "c1").Baselines()).To(ConsistOf(HaveField("Spec.BIOSSettings", HaveKeyWithValue("BootMode", "Uefi"))))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("b is deleted: c2 and c3 no longer serve it")
	g.Expect(hub.Delete(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "b"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(tenancy(g, "c2").Spec.Tenants).To(BeEmpty())
		g.Expect(tenancy(g, "c3").Spec.Tenants).To(BeEmpty())
		g.Expect(tenancy(g, "c3").Spec.WorkloadTenants).To(ConsistOf(HaveField("Name", "a")))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
