package isolation_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestProfileNameIsEachClustersOwn: cluster evil, serving tenant a,
// publishes the name of cluster c1's GPU profile with hardware that has
// no GPU. Tenant a's claim asks for a GPU first, so the scheduler judges
// evil's profile under that name first; tenant b's claim, asking the
// same, is still placed on c1's GPU hosts: what a cluster says a profile
// name stands for is judged for that cluster's hosts alone.
func TestProfileNameIsEachClustersOwn(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, hub := schedulingHub(t)
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab-a"}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab-b"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "evil", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "lab-a"}}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "lab-b"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "evil"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab-a"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab-b"}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	gpuHost := hardware.View{CPU: hardware.CPU{Count: 64, Arch: "x86_64"}, MemoryMiB: 262144,
		GPUs: []hardware.GPU{{Vendor: "NVIDIA", Model: "H100"}}}
	hardware.Normalize(&gpuHost)
	plain := hardware.View{CPU: hardware.CPU{Count: 8, Arch: "x86_64"}, MemoryMiB: 16384}
	hardware.Normalize(&plain)
	name := hardware.Profile(&gpuHost)
	report := func(cluster, tenantNS string, v hardware.View) {
		inv := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: cluster},
			Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: cluster}}
		g.Expect(hub.Create(ctx, inv)).To(Succeed())
		orig := inv.DeepCopy()
		inv.Status.Pools = []hostfleetv1alpha1.HostPool{{Namespaces: []string{tenantNS}, Profile: name, Total: 2, Available: 2}}
		inv.Status.Profiles = []hostfleetv1alpha1.HardwareProfile{{Name: name, Hardware: v}}
		g.Expect(hub.Status().Patch(ctx, inv, client.MergeFrom(orig))).To(Succeed())
	}
	report("c1", "tenant-b", gpuHost)
	report("evil", "tenant-a", plain) // c1's name, other hardware
	claim := func(ns string) *metal3api.HostClaim {
		return &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gpu",
			Annotations: map[string]string{hostfleetv1alpha1.AnnotationHardware: `host.gpus.exists(g, g.model == "H100")`}}}
	}
	scheduled := func(g Gomega, c *metal3api.HostClaim) *metav1.Condition {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		s := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)
		g.Expect(s).NotTo(BeNil())
		return s
	}

	t.Log("tenant a's claim is judged first, on evil's profile: no cluster of its set has the hardware")
	first := claim("tenant-a")
	g.Eventually(func() error { return hub.Create(ctx, first) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		s := scheduled(g, first)
		g.Expect(s.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(s.Message).To(ContainSubstring("lacks host.gpus.exists"), "judged on the hardware evil reports")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(first.Labels[hostfleetv1alpha1.LabelCluster]).To(BeEmpty())

	t.Log("tenant b's claim, asking the same, is placed on c1: evil's word about the name stands for evil's hosts only")
	second := claim("tenant-b")
	g.Eventually(func() error { return hub.Create(ctx, second) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		s := scheduled(g, second)
		g.Expect(s.Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced), s.Message)
		g.Expect(second.Labels[hostfleetv1alpha1.LabelCluster]).To(Equal("c1"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
