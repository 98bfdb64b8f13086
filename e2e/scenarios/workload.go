package scenarios

import (
	"context"
	"encoding/json"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/hub/api/labelkeys"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// workloadCluster makes a joined cluster tenant acme's workload cluster: a
// hub administrator labels its ManagedCluster, the add-on is enabled there
// and runs in the workload role; the Node of the claimed host (a Cluster
// API providerID naming the claim, the labels-pending gate: Env's
// WorkloadNode) gets the claim's host labels, and follows a change on the
// host.
func (e *fleet) workloadCluster(cluster, infra, claimName string) {
	g := NewWithT(e.t)
	ctx := context.Background()
	hub := e.Client("hub")
	label, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{hostfleetv1alpha1.LabelTenant: "acme"}}})
	g.Expect(hub.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, client.RawPatch(types.MergePatchType, label))).To(Succeed())
	e.run("hub", "addon", "enable", "--names", hostfleetv1alpha1.AddonName, "--clusters", cluster)
	e.expectAgent(cluster, addonNamespace)
	e.expectAddonAvailable(cluster)
	d := &appsv1.Deployment{}
	g.Expect(e.Client(cluster).Get(ctx, client.ObjectKey{Namespace: addonNamespace, Name: hostfleetv1alpha1.AddonName}, d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--role=workload", "--bmh-driver=none"))

	claim := &metal3api.HostClaim{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "tenant-acme", Name: claimName}, claim)).To(Succeed())
	wanted := map[string]string{}
	for k, v := range claim.Labels {
		if labelkeys.UnderPrefixes(k, []string{"example.com"}) {
			wanted[k] = v
		}
	}
	g.Expect(wanted).To(HaveKey("example.com/rack"), "the claim carries its host's labels")
	registered := time.Now()
	workload := e.Client(cluster)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.WorkloadNode(e.t, cluster)}}
	g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
	g.Expect(node.Spec.ProviderID).To(Equal(WorkloadProviderID), "the Node of the claimed host")
	g.Eventually(func(g Gomega) {
		g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
		for k, v := range wanted {
			g.Expect(node.Labels).To(HaveKeyWithValue(k, v))
		}
		g.Expect(node.Labels).NotTo(HaveKey(hostfleetv1alpha1.LabelLabelsPending))
		g.Expect(node.Labels).To(HaveKey("kubernetes.io/hostname"), "labels outside the prefixes are left")
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	e.t.Logf("Node %s labelled from %s's host in %s", node.Name, claimName, time.Since(registered).Round(10*time.Millisecond))
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		cond := meta.FindStatusCondition(claim.Status.Conditions, hostfleetv1alpha1.ConditionNodeLabelsSynced)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
		g.Expect(cond.Message).To(ContainSubstring(node.Name))
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())

	// The infrastructure administrator moves the host to another rack.
	host := claim.Status.BareMetalHost
	g.Expect(host).NotTo(BeNil())
	moved, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"example.com/rack": "r9"}}})
	changed := time.Now()
	g.Expect(e.Client(infra).Patch(ctx, &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: host.Namespace, Name: host.Name}},
		client.RawPatch(types.MergePatchType, moved))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
		g.Expect(node.Labels).To(HaveKeyWithValue("example.com/rack", "r9"))
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	e.t.Logf("host %s/%s on %s relabelled: the Node on %s followed in %s", host.Namespace, host.Name, infra, cluster, time.Since(changed).Round(10*time.Millisecond))
}

// labelNodes labels every Node of a cluster, as its administrator would.
func (e *fleet) labelNodes(cluster, key, value string) {
	e.t.Helper()
	ctx := context.Background()
	g := NewWithT(e.t)
	var nodes corev1.NodeList
	g.Expect(e.Client(cluster).List(ctx, &nodes)).To(Succeed())
	g.Expect(nodes.Items).NotTo(BeEmpty(), "%s has nodes", cluster)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{key: value}}})
	for _, n := range nodes.Items {
		g.Expect(e.Client(cluster).Patch(ctx, &n, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	}
}
