package addon_test

import (
	"context"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/hostfleet/hostfleet/hub/addon"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
)

// TestBMCNamespaces: the agent reads BMC credentials only in the namespaces
// whose hosts it drives, never cluster-wide, in both modes.
func TestBMCNamespaces(t *testing.T) {
	g := NewWithT(t)
	a, err := addon.New(nil, nil, addon.Options{Image: "registry.example/hostfleet-agent:v1", HubName: "lab-hub", BMCNamespaces: []string{"hosts", "edge"}})
	g.Expect(err).NotTo(HaveOccurred())
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	render := func(mca *addonv1beta1.ManagedClusterAddOn) map[string]runtime.Object {
		return renderAll(g, a, cluster, mca)
	}
	args := func(objs map[string]runtime.Object, key string) []string { return deploymentArgs(g, objs, key) }

	t.Log("Default mode: a Role reading Secrets in each namespace, no Secret read in the ClusterRole")
	def := render(&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: hostfleetv1alpha1.AddonName}})
	for _, ns := range []string{"hosts", "edge"} {
		role, ok := def["Role/"+ns+"/"+hostfleetv1alpha1.AgentBMCRole].(*rbacv1.Role)
		g.Expect(ok).To(BeTrue(), "Role in %s", ns)
		g.Expect(role.Rules).To(Equal(permissions.AgentBMCNamespace()))
		rb, ok := def["RoleBinding/"+ns+"/"+hostfleetv1alpha1.AgentBMCRole].(*rbacv1.RoleBinding)
		g.Expect(ok).To(BeTrue(), "RoleBinding in %s", ns)
		g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: hostfleetv1alpha1.AgentServiceAccount, Namespace: hostfleetv1alpha1.AgentNamespace}}))
	}
	cr, ok := def["ClusterRole//"+hostfleetv1alpha1.AgentManagedRole].(*rbacv1.ClusterRole)
	g.Expect(ok).To(BeTrue())
	g.Expect(cr.Rules).To(Equal(permissions.AgentManagedClusterDefault(permissions.Features{BMCDriver: true})))
	for _, r := range cr.Rules {
		if slices.Contains(r.Resources, "secrets") {
			g.Expect(r.Verbs).NotTo(ContainElement("get"), "never cluster-wide")
		}
	}
	g.Expect(args(def, "Deployment/hostfleet-agent/hostfleet-agent")).To(ContainElements("--bmh-driver=annotated", "--bmc-namespaces=hosts,edge"))

	t.Log("Hosted mode: the agent mints the same Roles itself; the hub renders none")
	hosted := render(&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: hostfleetv1alpha1.AddonName,
		Annotations: map[string]string{addonv1beta1.HostingClusterNameAnnotationKey: "hosting"}}})
	for key := range hosted {
		g.Expect(key).NotTo(HavePrefix("Role/hosts/"))
	}
	g.Expect(args(hosted, "Deployment/klusterlet-c1/hostfleet-agent")).To(ContainElements("--bmh-driver=annotated", "--bmc-namespaces=hosts,edge",
		"--bootstrap-managed-kubeconfig=/var/run/managed/kubeconfig"))
}

// renderAll renders the add-on's manifests for a cluster, by
// Kind/namespace/name.
func renderAll(g Gomega, a agent.AgentAddon, cluster *clusterv1.ManagedCluster, mca *addonv1beta1.ManagedClusterAddOn) map[string]runtime.Object {
	objs, err := a.Manifests(context.Background(), cluster, mca)
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]runtime.Object{}
	for _, o := range objs {
		m, err := meta.Accessor(o)
		g.Expect(err).NotTo(HaveOccurred())
		out[o.GetObjectKind().GroupVersionKind().Kind+"/"+m.GetNamespace()+"/"+m.GetName()] = o
	}
	return out
}

func deploymentArgs(g Gomega, objs map[string]runtime.Object, key string) []string {
	d, ok := objs[key].(*appsv1.Deployment)
	g.Expect(ok).To(BeTrue(), "%s: %T", key, objs[key])
	return d.Spec.Template.Spec.Containers[0].Args
}

// TestWorkloadRole: a ManagedCluster labelled hostfleet.io/tenant gets the
// agent in the workload role: Nodes, no host and no Secret on the cluster,
// no BMC driver, in both modes.
func TestWorkloadRole(t *testing.T) {
	g := NewWithT(t)
	a, err := addon.New(nil, nil, addon.Options{Image: "registry.example/hostfleet-agent:v1", HubName: "lab-hub", BMCNamespaces: []string{"hosts"}})
	g.Expect(err).NotTo(HaveOccurred())
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "apps", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "acme"}}}

	def := renderAll(g, a, cluster, &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: hostfleetv1alpha1.AddonName}})
	cr, ok := def["ClusterRole//"+hostfleetv1alpha1.AgentManagedRole].(*rbacv1.ClusterRole)
	g.Expect(ok).To(BeTrue())
	g.Expect(cr.Rules).To(Equal(append(permissions.AgentWorkloadCluster(), permissions.MetricsAuth()...)))
	g.Expect(def).NotTo(HaveKey("Role/hosts/"+hostfleetv1alpha1.AgentBMCRole), "no BMC credentials on a workload cluster")
	g.Expect(deploymentArgs(g, def, "Deployment/hostfleet-agent/hostfleet-agent")).To(And(
		ContainElements("--role=workload", "--bmh-driver=none"), Not(ContainElement(HavePrefix("--bmc-namespaces")))))

	hosted := renderAll(g, a, cluster, &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: hostfleetv1alpha1.AddonName,
		Annotations: map[string]string{addonv1beta1.HostingClusterNameAnnotationKey: "hosting"}}})
	g.Expect(deploymentArgs(g, hosted, "Deployment/klusterlet-apps/hostfleet-agent")).To(ContainElements("--role=workload", "--bmh-driver=none",
		"--bootstrap-managed-kubeconfig=/var/run/managed/kubeconfig"))

	unlabelled := renderAll(g, a, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "apps"}},
		&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: hostfleetv1alpha1.AddonName}})
	g.Expect(deploymentArgs(g, unlabelled, "Deployment/hostfleet-agent/hostfleet-agent")).NotTo(ContainElement("--role=workload"), "infrastructure by default")
}

// TestPlacedClaims: a hub that writes PlacedClaims deploys infrastructure
// agents that read them, through the environment (an agent older than
// --claim-watch, held back through an upgrade, ignores it); a workload
// agent reads its tenant's claims.
func TestPlacedClaims(t *testing.T) {
	g := NewWithT(t)
	placedEnv := corev1.EnvVar{Name: hostfleetv1alpha1.EnvClaimWatch, Value: "placed"}
	container := func(objs map[string]runtime.Object) corev1.Container {
		d, ok := objs["Deployment/hostfleet-agent/hostfleet-agent"].(*appsv1.Deployment)
		g.Expect(ok).To(BeTrue())
		return d.Spec.Template.Spec.Containers[0]
	}
	for _, placed := range []bool{true, false} {
		a, err := addon.New(nil, nil, addon.Options{Image: "registry.example/hostfleet-agent:v1", HubName: "lab-hub", PlacedClaims: placed})
		g.Expect(err).NotTo(HaveOccurred())
		infra := container(renderAll(g, a, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
			&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: hostfleetv1alpha1.AddonName}}))
		wl := container(renderAll(g, a, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "apps", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "acme"}}},
			&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: hostfleetv1alpha1.AddonName}}))
		g.Expect(wl.Env).NotTo(ContainElement(placedEnv))
		g.Expect(infra.Args).NotTo(ContainElement(HavePrefix("--claim-watch")), "no flag an older agent would refuse")
		if placed {
			g.Expect(infra.Env).To(ContainElement(placedEnv))
		} else {
			g.Expect(infra.Env).NotTo(ContainElement(placedEnv))
		}
	}
}
