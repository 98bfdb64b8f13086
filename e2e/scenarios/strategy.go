package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// installByStrategy enables the agent for the clusters of a cluster set
// the OCM way a fleet administrator does it for many: a Placement over the
// set and the ClusterManagementAddOn's installStrategy naming it, with an
// AddOnDeploymentConfig that puts the agent in installNamespace. A Hosted
// cluster's ManagedClusterAddOn is made first, annotated with its hosting
// cluster (OCM v1.2 makes add-ons Hosted by that annotation only, and its
// registration agent reads it): one the strategy made would run in Default
// mode until annotated, and OCM's work agent can leave that Default agent
// behind on the managed cluster (a resource dropped from a ManifestWork
// before the work agent recorded it is never deleted). The strategy's
// config then reaches it, and nothing of the agent runs on the managed
// cluster at any time. The strategy is set only once the Placement has
// decided on the cluster: OCM's addon-manager deletes every add-on of the
// strategy's name that the Placement's decisions do not list, the
// annotated one included, and makes it again unannotated.
func (e *fleet) installByStrategy(set, cluster, hosting, installNamespace string) {
	e.t.Helper()
	g := NewWithT(e.t)
	ctx := context.Background()
	hub := e.Client("hub")
	const ns = "fleet-addons"
	start := time.Now()
	g.Eventually(func() error {
		return hub.Create(ctx, &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: hostfleetv1alpha1.AddonName,
			Annotations: map[string]string{addonv1beta1.HostingClusterNameAnnotationKey: hosting, addonv1beta1.InstallNamespaceAnnotation: installNamespace}}})
	}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Succeed(), "the Hosted add-on for %s, before any strategy selects it", cluster)
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
	g.Eventually(func(g Gomega) {
		var decisions clusterv1beta1.PlacementDecisionList
		g.Expect(hub.List(ctx, &decisions, client.InNamespace(ns), client.MatchingLabels{clusterv1beta1.PlacementLabel: "hostfleet-agents"})).To(Succeed())
		var chosen []string
		for _, d := range decisions.Items {
			for _, c := range d.Status.Decisions {
				chosen = append(chosen, c.ClusterName)
			}
		}
		g.Expect(chosen).To(ContainElement(cluster))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "Placement %s/hostfleet-agents decides on %s", ns, cluster)
	made := &addonv1beta1.ManagedClusterAddOn{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: hostfleetv1alpha1.AddonName}, made)).To(Succeed())
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
		NewWithT(e.t).Expect(mca.UID).To(Equal(made.UID), "the annotated add-on is the one the strategy configures, never deleted and made again")
		var names []string
		for _, r := range mca.Status.ConfigReferences {
			if r.DesiredConfig != nil {
				names = append(names, r.DesiredConfig.Namespace+"/"+r.DesiredConfig.Name)
			}
		}
		g.Expect(names).To(ContainElement(ns + "/hosted-agents"))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "OCM's addon-manager gives the add-on on %s the strategy's config", cluster)
	e.t.Logf("the add-on on %s, Hosted on %s, configured by Placement %s/hostfleet-agents and the installStrategy (%s)",
		cluster, hosting, ns, time.Since(start).Round(100*time.Millisecond))
}

// hostedSwitchReport says, when the agent of a Hosted add-on is found on
// its managed cluster, how it got there: the add-on's mode and conditions,
// the deploy works on the hub, the agent's Deployments on the managed
// cluster and what the work agent recorded there.
func (e *fleet) hostedSwitchReport(cluster string) func() string {
	return func() string {
		ctx := context.Background()
		hub := e.Client("hub")
		var b strings.Builder
		mca := &addonv1beta1.ManagedClusterAddOn{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: hostfleetv1alpha1.AddonName}, mca); err != nil {
			fmt.Fprintf(&b, "ManagedClusterAddOn: %v\n", err)
		} else {
			fmt.Fprintf(&b, "ManagedClusterAddOn annotations %v finalizers %v\n", mca.Annotations, mca.Finalizers)
			for _, c := range mca.Status.Conditions {
				fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		works := &workv1.ManifestWorkList{}
		if err := hub.List(ctx, works, client.MatchingLabels{"open-cluster-management.io/addon-name": hostfleetv1alpha1.AddonName}); err != nil {
			fmt.Fprintf(&b, "ManifestWorks: %v\n", err)
		}
		for _, w := range works.Items {
			var kinds []string
			for _, m := range w.Spec.Workload.Manifests {
				u := &unstructured.Unstructured{}
				if err := u.UnmarshalJSON(m.Raw); err == nil {
					kinds = append(kinds, u.GetKind()+"/"+u.GetName())
				}
			}
			fmt.Fprintf(&b, "ManifestWork %s/%s generation %d deleting %v: %v\n", w.Namespace, w.Name, w.Generation, w.DeletionTimestamp != nil, kinds)
			for _, c := range w.Status.Conditions {
				fmt.Fprintf(&b, "  %s=%s %s (observed %d): %s\n", c.Type, c.Status, c.Reason, c.ObservedGeneration, c.Message)
			}
		}
		deploys := &appsv1.DeploymentList{}
		if err := e.Client(cluster).List(ctx, deploys, client.MatchingLabels{"app.kubernetes.io/name": hostfleetv1alpha1.AddonName}); err != nil {
			fmt.Fprintf(&b, "Deployments on %s: %v\n", cluster, err)
		}
		for _, d := range deploys.Items {
			fmt.Fprintf(&b, "Deployment %s/%s on %s: deleting %v finalizers %v owners %v\n", d.Namespace, d.Name, cluster, d.DeletionTimestamp != nil, d.Finalizers, d.OwnerReferences)
		}
		applied := &workv1.AppliedManifestWorkList{}
		if err := e.Client(cluster).List(ctx, applied); err != nil {
			fmt.Fprintf(&b, "AppliedManifestWorks on %s: %v\n", cluster, err)
		}
		for _, a := range applied.Items {
			var res []string
			for _, r := range a.Status.AppliedResources {
				res = append(res, r.Resource+"/"+r.Namespace+"/"+r.Name)
			}
			fmt.Fprintf(&b, "AppliedManifestWork %s on %s: deleting %v: %v\n", a.Name, cluster, a.DeletionTimestamp != nil, res)
		}
		return b.String()
	}
}
