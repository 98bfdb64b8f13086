package addon_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/hardening"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/addon"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
)

// TestDeploymentConfig: an AddOnDeploymentConfig, as OCM resolves it for a
// cluster's ManagedClusterAddOn, reaches that cluster's agent: node
// placement, resources, proxy, image mirror, install namespace, and the
// customized variables as flags, with the rights they need. A config the
// agent cannot honour is refused with everything that is wrong in it.
func TestDeploymentConfig(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	addons, err := addonclient.NewForConfig(f.Plane("hub").Config)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet-config"}})).To(Succeed())

	adc := &addonv1beta1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-config", Name: "edge"},
		Spec: addonv1beta1.AddOnDeploymentConfigSpec{
			CustomizedVariables: []addonv1beta1.CustomizedVariable{
				{Name: "localClaims", Value: "true"}, {Name: "localClaimNamespaces", Value: "claims"},
				{Name: "bmcNamespaces", Value: "hosts, edge"}, {Name: "bmcWorkers", Value: "8"},
				{Name: "orphanGrace", Value: "10m"}, {Name: "claimWatch", Value: "label"}},
			NodePlacement: &addonv1beta1.NodePlacement{NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
				Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}},
			ResourceRequirements: []addonv1beta1.ContainerResourceRequirements{
				{ContainerID: "*:*:*", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}},
				{ContainerID: "deployments:hostfleet-agent:agent", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}},
			},
			ProxyConfig: addonv1beta1.ProxyConfig{HTTPSProxy: "http://proxy.example:3128", NoProxy: "10.0.0.0/8"},
			Registries:  []addonv1beta1.ImageMirror{{Source: "registry.example/hostfleet-agent", Mirror: "mirror.example/hf/hostfleet-agent"}},
		}}
	g.Expect(hub.Create(ctx, adc)).To(Succeed())

	a, err := addon.New(nil, addons, addon.Options{Image: "registry.example/hostfleet-agent:v1", HubName: "lab-hub", PlacedClaims: true})
	g.Expect(err).NotTo(HaveOccurred())
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	// What OCM's addon-manager writes once it has resolved the config
	// (the planes run no OCM component; e2e-local runs the real one).
	configured := func(name string) *addonv1beta1.ManagedClusterAddOn {
		return &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: hostfleetv1alpha1.AddonName},
			Status: addonv1beta1.ManagedClusterAddOnStatus{ConfigReferences: []addonv1beta1.ConfigReference{{
				ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
				DesiredConfig: &addonv1beta1.ConfigSpecHash{ConfigReferent: addonv1beta1.ConfigReferent{Namespace: "fleet-config", Name: name},
					SpecHash: "resolved"}}}}}
	}
	render := func(mca *addonv1beta1.ManagedClusterAddOn) (map[string]runtime.Object, error) {
		objs, err := a.Manifests(ctx, cluster, mca)
		out := map[string]runtime.Object{}
		for _, o := range objs {
			m, err := meta.Accessor(o)
			g.Expect(err).NotTo(HaveOccurred())
			out[o.GetObjectKind().GroupVersionKind().Kind+"/"+m.GetNamespace()+"/"+m.GetName()] = o
		}
		return out, err
	}

	t.Log("no config: the hub's flags alone")
	objs, err := render(&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: hostfleetv1alpha1.AddonName}})
	g.Expect(err).NotTo(HaveOccurred())
	d := objs["Deployment/hostfleet-agent/hostfleet-agent"].(*appsv1.Deployment)
	g.Expect(d.Spec.Template.Spec.NodeSelector).To(BeEmpty())
	g.Expect(d.Spec.Template.Spec.Containers[0].Resources).To(Equal(*addon.DefaultResources()))
	g.Expect(hardening.Check(&d.Spec.Template.Spec)).To(BeEmpty(), "the agent runs hardened")
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/hostfleet-agent:v1"))
	g.Expect(d.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: hostfleetv1alpha1.EnvClaimWatch, Value: "placed"}))

	t.Log("the config reaches the Deployment")
	objs, err = render(configured("edge"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveKey("Deployment/hostfleet-agent/hostfleet-agent"))
	d = objs["Deployment/hostfleet-agent/hostfleet-agent"].(*appsv1.Deployment)
	pod := d.Spec.Template.Spec
	g.Expect(pod.NodeSelector).To(Equal(adc.Spec.NodePlacement.NodeSelector))
	g.Expect(pod.Tolerations).To(Equal(adc.Spec.NodePlacement.Tolerations))
	c := pod.Containers[0]
	g.Expect(c.Resources).To(Equal(corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")}}),
		"the last matching entry wins over the defaults it names; the others (the CPU limit) stay")
	g.Expect(hardening.Check(&pod)).To(BeEmpty(), "the configured agent runs hardened")
	g.Expect(c.Image).To(Equal("mirror.example/hf/hostfleet-agent:v1"))
	g.Expect(c.Env).To(ContainElements(corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://proxy.example:3128"}, corev1.EnvVar{Name: "NO_PROXY", Value: "10.0.0.0/8"}))
	g.Expect(c.Args).To(ContainElements("--bmc-workers=8", "--orphan-grace=10m", "--local-claims=true", "--local-claim-namespaces=claims",
		"--bmh-driver=annotated", "--bmc-namespaces=hosts,edge"))
	g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: hostfleetv1alpha1.EnvClaimWatch, Value: "placed"}))
	g.Expect(c.Args).To(ContainElement("--claim-watch=label"), "the config's choice, a flag, overrides the hub's default")

	t.Log("the variables that change what the agent does change its rights with it")
	cr := objs["ClusterRole//"+hostfleetv1alpha1.AgentManagedRole].(*rbacv1.ClusterRole)
	g.Expect(cr.Rules).To(Equal(permissions.AgentManagedClusterDefault(permissions.Features{LocalClaims: true, BMCDriver: true})))
	for _, ns := range []string{"hosts", "edge"} {
		g.Expect(objs).To(HaveKey("Role/"+ns+"/"+hostfleetv1alpha1.AgentBMCRole), "BMC credentials are read in %s only", ns)
	}
	g.Expect(objs).To(HaveKey("Role/claims/"+hostfleetv1alpha1.AgentLocalClaimsRole), "local claims' secrets are read where it serves them, only")
	g.Expect(objs).To(HaveKey("RoleBinding/claims/" + hostfleetv1alpha1.AgentLocalClaimsRole))

	t.Log("agentInstallNamespace moves the agent")
	g.Expect(hub.Create(ctx, &addonv1beta1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-config", Name: "moved"},
		Spec: addonv1beta1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "metal-agents"}})).To(Succeed())
	objs, err = render(configured("moved"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveKey("Deployment/metal-agents/hostfleet-agent"))

	t.Log("a config the agent cannot honour is refused, all of what is wrong said at once")
	g.Expect(hub.Create(ctx, &addonv1beta1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-config", Name: "bad"},
		Spec: addonv1beta1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1beta1.CustomizedVariable{
			{Name: "bmcWorker", Value: "8"}, {Name: "concurrency", Value: "0"}, {Name: "bmhDriver", Value: "all"},
			{Name: "localClaimNamespaces", Value: "claims"}}}})).To(Succeed())
	_, err = render(configured("bad"))
	g.Expect(err).To(MatchError(And(
		ContainSubstring("AddOnDeploymentConfig fleet-config/bad for cluster c1"),
		ContainSubstring(`customized variable "bmcWorker" is not one the agent reads (bmcNamespaces, bmcPoll, bmcPowerWait, bmcSoftPowerOffTimeout, bmcTimeout, bmcWorkers,`),
		ContainSubstring(`concurrency="0": must be a whole number of at least 1`),
		ContainSubstring("bmhDriver=all needs bmcNamespaces"),
		ContainSubstring("localClaimNamespaces needs localClaims=true"))))

	t.Log("a config that is gone is reported, not ignored")
	_, err = render(configured("missing"))
	g.Expect(err).To(MatchError(ContainSubstring("AddOnDeploymentConfig of c1/hostfleet-agent")))
}

// TestRegisterKeepsAdministratorFields: the hub applies only its own fields
// of the ClusterManagementAddOn, so what an administrator sets there (an
// install strategy, default configs) survives every hub restart.
func TestRegisterKeepsAdministratorFields(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	addons, err := addonclient.NewForConfig(f.Plane("hub").Config)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(addon.Register(ctx, addons)).To(Succeed())
	cma := &addonv1beta1.ClusterManagementAddOn{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: hostfleetv1alpha1.AddonName}, cma)).To(Succeed())
	g.Expect(cma.Spec.InstallStrategy.Type).To(Equal(addonv1beta1.AddonInstallStrategyManual), "the CRD's default")
	g.Expect(cma.Spec.AddOnMeta.DisplayName).To(Equal("Hostfleet agent"))

	t.Log("an administrator installs the agent on a placement's clusters, with a default config")
	cma.Spec.InstallStrategy = addonv1beta1.InstallStrategy{Type: addonv1beta1.AddonInstallStrategyPlacements,
		Placements: []addonv1beta1.PlacementStrategy{{PlacementRef: addonv1beta1.PlacementRef{Namespace: "default", Name: "infra"}}}}
	cma.Spec.DefaultConfigs = []addonv1beta1.AddOnConfig{{
		ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
		ConfigReferent:      addonv1beta1.ConfigReferent{Namespace: "open-cluster-management-hub", Name: "hostfleet-agent"}}}
	cma.Spec.AddOnMeta.Description = "edited"
	g.Expect(hub.Update(ctx, cma)).To(Succeed())

	t.Log("the hub restarts")
	g.Expect(addon.Register(ctx, addons)).To(Succeed())
	after := &addonv1beta1.ClusterManagementAddOn{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: hostfleetv1alpha1.AddonName}, after)).To(Succeed())
	g.Expect(after.Spec.InstallStrategy).To(Equal(cma.Spec.InstallStrategy))
	g.Expect(after.Spec.DefaultConfigs).To(Equal(cma.Spec.DefaultConfigs))
	g.Expect(after.Spec.AddOnMeta).To(Equal(addon.ClusterManagementAddOn().Spec.AddOnMeta), "the hub's own fields are the hub's")
}
