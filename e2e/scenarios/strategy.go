package scenarios

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// installByStrategy enables the agent for the clusters of a cluster set
// the OCM way a fleet administrator does it for many: a Placement over the
// set and the ClusterManagementAddOn's installStrategy naming it, with an
// AddOnDeploymentConfig that puts the agent in installNamespace. OCM's
// addon-manager makes the cluster's ManagedClusterAddOn; the administrator
// annotates it with its hosting cluster (OCM v1.2 makes add-ons Hosted by
// that annotation only), and the agent runs on the hosting cluster, nothing
// of it on the managed cluster.
func (e *fleet) installByStrategy(set, cluster, hosting, installNamespace string) {
	e.t.Helper()
	g := NewWithT(e.t)
	ctx := context.Background()
	hub := e.Client("hub")
	const ns = "fleet-addons"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: set},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}},
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hostfleet-agents"},
			Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{set}}},
		&addonv1beta1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hosted-agents"},
			Spec: addonv1beta1.AddOnDeploymentConfigSpec{AgentInstallNamespace: installNamespace}},
	} {
		g.Expect(client.IgnoreAlreadyExists(hub.Create(ctx, o))).To(Succeed())
	}
	start := time.Now()
	g.Eventually(func(g Gomega) {
		cma := &addonv1beta1.ClusterManagementAddOn{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: hostfleetv1alpha1.AddonName}, cma)).To(Succeed())
		cma.Spec.InstallStrategy = addonv1beta1.InstallStrategy{Type: addonv1beta1.AddonInstallStrategyPlacements,
			Placements: []addonv1beta1.PlacementStrategy{{PlacementRef: addonv1beta1.PlacementRef{Namespace: ns, Name: "hostfleet-agents"},
				Configs: []addonv1beta1.AddOnConfig{{ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: addonv1beta1.GroupName, Resource: "addondeploymentconfigs"},
					ConfigReferent: addonv1beta1.ConfigReferent{Namespace: ns, Name: "hosted-agents"}}}}}}
		g.Expect(hub.Update(ctx, cma)).To(Succeed())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the hub registered its add-on")
	g.Eventually(func(g Gomega) {
		mca := &addonv1beta1.ManagedClusterAddOn{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: hostfleetv1alpha1.AddonName}, mca)).To(Succeed())
		if mca.Annotations == nil {
			mca.Annotations = map[string]string{}
		}
		mca.Annotations[addonv1beta1.HostingClusterNameAnnotationKey] = hosting
		g.Expect(hub.Update(ctx, mca)).To(Succeed())
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "OCM's addon-manager installs the add-on on %s from the Placement", cluster)
	e.t.Logf("OCM installed the add-on on %s from Placement %s/hostfleet-agents and the installStrategy; annotated Hosted on %s (%s)",
		cluster, ns, hosting, time.Since(start).Round(100*time.Millisecond))
}
