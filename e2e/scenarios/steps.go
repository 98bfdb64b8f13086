package scenarios

import (
	"context"
	"os"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/programs/demo"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	operatorv1alpha1 "github.com/hostfleet/hostfleet/operator/api/v1alpha1"
)

// addonNamespace is where `clusteradm addon enable` installs add-ons unless
// told otherwise (--namespace).
const addonNamespace = "open-cluster-management-agent-addon"

// systemNamespaces are the cluster's own (a kind node's pods), not OCM's or
// Hostfleet's.
var systemNamespaces = map[string]bool{"kube-system": true, "local-path-storage": true}

// hostedAgentNamespace is where a Hosted agent keeps its identity and Lease on
// the managed cluster.
const hostedAgentNamespace = hostfleetv1alpha1.AgentNamespace

// Run runs the scenarios in order on one fleet: each builds on the one
// before, as a platform engineer's day would.
func Run(t *testing.T, env Env) {
	e := &fleet{Env: env, top: t}
	for _, s := range []struct {
		name string
		run  func(*fleet)
	}{
		{"Join", (*fleet).joinStep},
		{"AddonDefault", (*fleet).addonDefaultStep},
		{"Upgrade", (*fleet).upgradeStep},
		{"AddonConfig", (*fleet).addonConfigStep},
		{"IPMIFromImage", (*fleet).ipmiFromImageStep},
		{"RemoteClaim", (*fleet).remoteClaimStep},
		{"AddonHosted", (*fleet).addonHostedStep},
		{"WorkloadCluster", (*fleet).workloadClusterStep},
		{"Teardown", (*fleet).teardownStep},
		{"HubHosted", (*fleet).hubHostedStep},
	} {
		step(t, s.name, func(t *testing.T) {
			e.t = t
			s.run(e)
		})
	}
}

// joinStep joins infra-1 to a hub that `clusteradm init` made.
func (e *fleet) joinStep() {
	e.init()
	e.join("infra-1", "infra-1")
}

// addonDefaultStep installs the hub with the operator and a Default HostfleetHub, a tenant, and the agent on infra-1 through `clusteradm addon enable`: a claim Ready there, the agent's metrics answered.
func (e *fleet) addonDefaultStep() {
	ctx := context.Background()
	hub := e.Client("hub")
	g := NewWithT(e.t)
	// The hub, installed the way a person would: the last release's
	// operator from its deploy/operator (the next step upgrades it), then
	// a Default HostfleetHub. The operator renders the hub's Deployment
	// and a node runs it, with only the RBAC the operator
	// installed.
	rel := e.release()
	e.installOperatorFrom("hub", rel.Root, rel.Images["hostfleet-operator"])
	g.Expect(hub.Create(ctx, &operatorv1alpha1.HostfleetHub{ObjectMeta: metav1.ObjectMeta{Name: "hub"},
		Spec: operatorv1alpha1.HostfleetHubSpec{BindDeadline: &metav1.Duration{Duration: time.Minute}}})).To(Succeed())
	e.expectHubAvailable("hub", "hub")
	g.Expect(e.Running("hub", "hostfleet-system", "hostfleet-hub")).NotTo(BeEmpty(), "the hub runs as the operator's Deployment")
	e.StartBMO(e.t, "infra-1", "hosts") // hosts elsewhere are the agent's to drive
	for _, obj := range demo.InfraHosts(0) {
		g.Expect(e.Client("infra-1").Create(ctx, obj)).To(Succeed())
	}
	e.run("hub", "create", "clusterset", "lab")
	e.run("hub", "clusterset", "set", "lab", "--clusters", "infra-1")
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: hostfleetv1alpha1.TenantSpec{
		Namespaces: []string{"tenant-acme"}, ClusterSet: "lab", LabelSyncPrefixes: []string{"example.com"},
		Admins: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		cma := &addonv1beta1.ClusterManagementAddOn{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: hostfleetv1alpha1.AddonName}, cma)).To(Succeed())
	}).WithTimeout(time.Minute).Should(Succeed(), "the hub registers its add-on")

	e.run("hub", "addon", "enable", "--names", hostfleetv1alpha1.AddonName, "--clusters", "infra-1")

	// The work agent applied what the add-on manager rendered, and the pod
	// runner runs it on infra-1.
	e.expectAgent("infra-1", addonNamespace)
	e.expectAddonAvailable("infra-1")
	e.expectLeasesOwned("infra-1", addonNamespace, "hostfleet-agent", "hostfleet-agent-infra-1")
	e.expectAddonCSRIssued("infra-1")

	// A tenant's claim, pinned to infra-1, is bound there and Ready.
	e.expectClaimReady("web-1", "infra-1")
	e.agentMetrics("infra-1", addonNamespace)
}

// addonConfigStep configures every agent with an AddOnDeploymentConfig (the ClusterManagementAddOn's default) and shows it survive a hub restart.
func (e *fleet) addonConfigStep() {
	ctx := context.Background()
	hub := e.Client("hub")
	g := NewWithT(e.t)
	// An administrator dedicates nodes to infrastructure add-ons on the
	// clusters that run agents, and configures every agent the OCM way: an
	// AddOnDeploymentConfig as the ClusterManagementAddOn's default.
	for _, cluster := range []string{"infra-1", WorkloadCluster} {
		e.labelNodes(cluster, "node-role.kubernetes.io/infra", "")
	}
	adc := &addonv1beta1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: hostfleetv1alpha1.AddonName},
		Spec: addonv1beta1.AddOnDeploymentConfigSpec{
			NodePlacement: &addonv1beta1.NodePlacement{NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
				Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}},
			ResourceRequirements: []addonv1beta1.ContainerResourceRequirements{{ContainerID: "deployments:hostfleet-agent:agent",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}},
			CustomizedVariables: []addonv1beta1.CustomizedVariable{{Name: "bmcWorkers", Value: "3"}},
		}}
	g.Expect(hub.Create(ctx, adc)).To(Succeed())
	cma := &addonv1beta1.ClusterManagementAddOn{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: hostfleetv1alpha1.AddonName}, cma)).To(Succeed())
	cma.Spec.DefaultConfigs = []addonv1beta1.AddOnConfig{{
		ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
		ConfigReferent:      addonv1beta1.ConfigReferent{Namespace: "default", Name: hostfleetv1alpha1.AddonName}}}
	g.Expect(hub.Update(ctx, cma)).To(Succeed())

	configured := func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(e.Client("infra-1").Get(ctx, client.ObjectKey{Namespace: addonNamespace, Name: hostfleetv1alpha1.AddonName}, d)).To(Succeed())
		pod := d.Spec.Template.Spec
		g.Expect(pod.NodeSelector).To(Equal(adc.Spec.NodePlacement.NodeSelector))
		g.Expect(pod.Tolerations).To(Equal(adc.Spec.NodePlacement.Tolerations))
		g.Expect(pod.Containers[0].Resources.Requests.Memory().String()).To(Equal("64Mi"))
		g.Expect(pod.Containers[0].Args).To(ContainElement("--bmc-workers=3"))
	}
	start := time.Now()
	g.Eventually(configured).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(),
		"OCM's addon-manager resolves the config, the hub renders it, the work agent applies it")
	e.t.Logf("the config reached infra-1's agent in %s", time.Since(start).Round(100*time.Millisecond))
	e.expectAgent("infra-1", addonNamespace)
	e.expectAddonAvailable("infra-1")

	// The hub restarts (an upgrade: its HostfleetHub changes, the
	// operator rolls its Deployment); what the administrator set stays,
	// and what the hub owns is the hub's again.
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: hostfleetv1alpha1.AddonName}, cma)).To(Succeed())
	cma.Spec.AddOnMeta.Description = "edited by hand"
	g.Expect(hub.Update(ctx, cma)).To(Succeed())
	hh := &operatorv1alpha1.HostfleetHub{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "hub"}, hh)).To(Succeed())
	hh.Spec.BindDeadline = &metav1.Duration{Duration: 90 * time.Second}
	g.Expect(hub.Update(ctx, hh)).To(Succeed())
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "hostfleet-system", Name: "hostfleet-hub"}, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--bind-deadline=1m30s"))
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	e.expectHubAvailable("hub", "hub")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: hostfleetv1alpha1.AddonName}, cma)).To(Succeed())
		g.Expect(cma.Spec.AddOnMeta.Description).NotTo(Equal("edited by hand"), "the restarted hub applied its fields")
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Expect(cma.Spec.DefaultConfigs).To(HaveLen(1), "the administrator's default config survives the restart")
	g.Expect(cma.Spec.InstallStrategy.Type).To(Equal(addonv1beta1.AddonInstallStrategyManual))
	g.Consistently(configured).WithTimeout(10*time.Second).WithPolling(time.Second).Should(Succeed(), "and so does the agent's configuration")
}

// ipmiFromImageStep gives infra-1 a config of its own (a BMC namespace) and drives an IPMI host from the agent's image.
func (e *fleet) ipmiFromImageStep() {
	ctx := context.Background()
	hub := e.Client("hub")
	g := NewWithT(e.t)
	// infra-1 alone drives namespace ipmi: a config of its own,
	// over the ClusterManagementAddOn's default.
	adc := &addonv1beta1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "infra-1", Name: "hostfleet-agent-ipmi"},
		Spec: addonv1beta1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1beta1.CustomizedVariable{{Name: "bmcNamespaces", Value: "ipmi"}}}}
	g.Expect(hub.Create(ctx, adc)).To(Succeed())
	mca := &addonv1beta1.ManagedClusterAddOn{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: hostfleetv1alpha1.AddonName}, mca)).To(Succeed())
	mca.Spec.Configs = []addonv1beta1.AddOnConfig{{
		ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
		ConfigReferent:      addonv1beta1.ConfigReferent{Namespace: "infra-1", Name: adc.Name}}}
	g.Expect(hub.Update(ctx, mca)).To(Succeed())
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(e.Client("infra-1").Get(ctx, client.ObjectKey{Namespace: addonNamespace, Name: hostfleetv1alpha1.AddonName}, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--bmc-namespaces=ipmi", "--bmh-driver=annotated"))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "infra-1's own config reaches its agent")
	e.expectAgent("infra-1", addonNamespace)
	e.ipmiFromImage("infra-1")
}

// remoteClaimStep forwards a remote claim to infra-1.
func (e *fleet) remoteClaimStep() {
	e.remoteClaim("infra-1", "fwd-1")
}

// addonHostedStep joins infra-2 in Hosted mode on the hosting cluster and runs its agent there.
func (e *fleet) addonHostedStep() {
	ctx := context.Background()
	g := NewWithT(e.t)
	// The hosting cluster is itself a managed cluster (its work agent
	// applies the hosted agent); infra-2's klusterlet runs on it.
	e.join("hosting", "hosting")
	e.join("hosting", "infra-2", "--mode", "hosted", "--managed-cluster-kubeconfig", e.InClusterKubeconfig("infra-2"))
	klusterletNS := e.hostedKlusterlet("infra-2")
	e.t.Logf("infra-2's klusterlet runs on hosting in namespace %s", klusterletNS)

	e.StartBMO(e.t, "infra-2")
	for _, obj := range demo.InfraHosts(1) {
		g.Expect(e.Client("infra-2").Create(ctx, obj)).To(Succeed())
	}
	e.run("hub", "clusterset", "set", "lab", "--clusters", "infra-2")

	// The agent goes beside the klusterlet, whose namespace holds the
	// external managed kubeconfig it bootstraps from.
	e.run("hub", "addon", "enable", "--names", hostfleetv1alpha1.AddonName, "--clusters", "infra-2", "--namespace", klusterletNS,
		"--annotate", "addon.open-cluster-management.io/hosting-cluster-name=hosting")
	e.expectAgent("hosting", klusterletNS)
	e.expectAddonAvailable("infra-2")
	e.expectLeasesOwned("hosting", klusterletNS, "hostfleet-agent")
	e.expectClaimReady("db-1", "infra-2")
	e.agentMetrics("hosting", klusterletNS)

	// Nothing of the agent runs on infra-2: no Deployment, no Pod. There it
	// has only the ServiceAccount it minted its token for.
	infra2 := e.Client("infra-2")
	deploys := &appsv1.DeploymentList{}
	g.Expect(infra2.List(ctx, deploys)).To(Succeed())
	for _, d := range deploys.Items {
		g.Expect(d.Name).NotTo(ContainSubstring("hostfleet"), "the agent must not run on infra-2 (%s/%s)", d.Namespace, d.Name)
	}
	podList := &corev1.PodList{}
	g.Expect(infra2.List(ctx, podList)).To(Succeed())
	var pods []string
	for _, p := range podList.Items {
		if !systemNamespaces[p.Namespace] {
			pods = append(pods, p.Namespace+"/"+p.Name)
		}
	}
	g.Expect(pods).To(BeEmpty(), "Hosted mode: nothing runs on the managed cluster, the klusterlet included")
	g.Expect(infra2.Get(ctx, client.ObjectKey{Namespace: hostedAgentNamespace, Name: hostfleetv1alpha1.AddonName}, &corev1.ServiceAccount{})).To(Succeed(),
		"the agent's own least-privilege identity on infra-2")
}

// workloadClusterStep makes the hosting cluster tenant acme's workload cluster: db-1's labels reach its Node.
func (e *fleet) workloadClusterStep() {
	e.workloadCluster(WorkloadCluster, "infra-2", "db-1")
}

// teardownStep disables the add-on, unjoins infra-1 and uninstalls the hub: nothing of Hostfleet's is left.
func (e *fleet) teardownStep() {
	ctx := context.Background()
	hub := e.Client("hub")
	g := NewWithT(e.t)
	// The tenant gives the hosts back first: the agents release them.
	for _, name := range []string{"web-1", "db-1", "fwd-1"} {
		g.Expect(hub.Delete(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: name}})).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		claims := &metal3api.HostClaimList{}
		g.Expect(hub.List(ctx, claims, client.InNamespace("tenant-acme"))).To(Succeed())
		g.Expect(claims.Items).To(BeEmpty())
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

	e.run("hub", "addon", "disable", "--names", hostfleetv1alpha1.AddonName, "--clusters", "infra-1,infra-2,hosting")
	for _, plane := range []string{"infra-1", "infra-2", "hosting"} {
		e.expectNoAgent(plane)
	}
	g.Expect(e.Client("infra-1").Get(ctx, client.ObjectKey{Name: addonNamespace}, &corev1.Namespace{})).To(Succeed(),
		"the namespace the add-on shared with other add-ons stays")
	g.Eventually(func(g Gomega) {
		for _, cluster := range []string{"infra-1", "infra-2"} {
			g.Expect(hostfleetObjects(ctx, g, hub, cluster)).To(BeEmpty(), "the add-on's grants in %s on the hub", cluster)
		}
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

	// The cluster leaves: unjoin on its side, ManagedCluster deleted on
	// the hub. Nothing of Hostfleet is left for it on the hub.
	e.run("infra-1", "unjoin", "--cluster-name", "infra-1")
	g.Expect(hub.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		crbs := &rbacv1.ClusterRoleBindingList{}
		g.Expect(hub.List(ctx, crbs)).To(Succeed())
		for _, crb := range crbs.Items {
			g.Expect(crb.Name).NotTo(Equal("hostfleet:agent:infra-1"))
		}
		g.Expect(hostfleetObjects(ctx, g, hub, "infra-1")).To(BeEmpty())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	e.expectNoAgent("infra-1")
	g.Eventually(func() []string {
		return e.Running("infra-1", "open-cluster-management-agent", "klusterlet-registration-agent")
	}).
		WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeEmpty(), "the klusterlet is gone too (its pods stop on the kubelet's time)")

	// The hub goes: the operator removes the tenant (the hub, still
	// running, finalizes it), then the hub and Hostfleet's CRDs.
	e.uninstallHub("hub", "hub", "hostfleet-system")
	g.Eventually(func() error {
		return hub.Get(ctx, client.ObjectKey{Name: "hostfleet-system"}, &corev1.Namespace{})
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Satisfy(apierrors.IsNotFound), "the hub's namespace is gone")
}

// hubHostedStep runs the hub on the hosting cluster from a Hosted HostfleetHub; infra-2's agent comes from an install strategy.
func (e *fleet) hubHostedStep() {
	ctx := context.Background()
	hub := e.Client("hub")
	g := NewWithT(e.t)
	// The hub's controllers on the hosting cluster: the operator there,
	// the hub's administrator kubeconfig in external-hub-kubeconfig, a
	// Hosted HostfleetHub. infra-2 (Hosted klusterlet on hosting) is still
	// joined.
	// The operator from the last release's Helm chart (upgraded below
	// with this tree's).
	hosting := e.Client("hosting")
	rel := e.release()
	e.helmOperator("hosting", rel.Root, rel.Images["hostfleet-operator"])
	admin, err := os.ReadFile(e.InClusterKubeconfig("hub"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hosting.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lab-hub"}})).To(Succeed())
	g.Expect(hosting.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-hub", Name: operatorv1alpha1.ExternalHubKubeconfig},
		Data: map[string][]byte{"kubeconfig": admin}})).To(Succeed())
	g.Eventually(func() error {
		return hosting.Create(ctx, &operatorv1alpha1.HostfleetHub{ObjectMeta: metav1.ObjectMeta{Name: "lab-hub"},
			Spec: operatorv1alpha1.HostfleetHubSpec{DeployOption: operatorv1alpha1.DeployOption{Mode: operatorv1alpha1.ModeHosted},
				BindDeadline: &metav1.Duration{Duration: time.Minute}}})
	}).WithTimeout(30 * time.Second).Should(Succeed())
	e.expectHubAvailable("hosting", "lab-hub")
	g.Expect(e.Running("hosting", "lab-hub", "hostfleet-hub")).NotTo(BeEmpty(), "the hub runs on the hosting cluster")
	deploys := &appsv1.DeploymentList{}
	g.Expect(hub.List(ctx, deploys, client.InNamespace("hostfleet-system"))).To(Succeed())
	g.Expect(deploys.Items).To(BeEmpty(), "nothing of the hub runs on the hub cluster")

	// The same fleet flow through the Hosted hub: a tenant, the agent
	// enabled for infra-2, a claim Ready.
	g.Eventually(func() error {
		return hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: hostfleetv1alpha1.TenantSpec{
			Namespaces: []string{"tenant-acme"}, ClusterSet: "lab", LabelSyncPrefixes: []string{"example.com"}}})
	}).WithTimeout(30 * time.Second).Should(Succeed())
	// This time the agent's config comes from an install strategy: a
	// Placement over the set and its AddOnDeploymentConfig.
	klusterletNS := e.hostedKlusterlet("infra-2")
	e.installByStrategy("lab", "infra-2", "hosting", klusterletNS)
	e.expectAgent("hosting", klusterletNS)
	e.expectAddonAvailable("infra-2")
	e.expectClaimReady("db-2", "infra-2")
	// `helm upgrade` to this tree's chart: the operator rolls the hub and
	// its agent to this tree's images; db-2 stays Ready on its host.
	before := map[string]served{"db-2": e.servedNow(g, "db-2", "infra-2")}
	e.helmOperator("hosting", Root(), e.Image("hostfleet-operator"))
	e.expectDeployment("hosting", "lab-hub", "hostfleet-hub", e.Image("hostfleet-hub"))
	e.expectDeployment("hosting", klusterletNS, hostfleetv1alpha1.AddonName, e.Image("hostfleet-agent"))
	e.expectAddonAvailable("infra-2")
	e.expectServedAsBefore(before, "infra-2")
	e.expectInvariants("infra-2")
	// The add-on was Hosted from the start: nothing of the agent was ever
	// applied to infra-2.
	infra2Deploys := &appsv1.DeploymentList{}
	g.Expect(e.Client("infra-2").List(ctx, infra2Deploys, client.MatchingLabels{"app.kubernetes.io/name": hostfleetv1alpha1.AddonName})).To(Succeed())
	g.Expect(infra2Deploys.Items).To(BeEmpty(), e.hostedSwitchReport("infra-2"))

	// Uninstall: the claim first, then the HostfleetHub; the operator
	// takes the agent away through the hub, then the hub.
	g.Expect(hub.Delete(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "db-2"}})).To(Succeed())
	g.Eventually(func() error {
		return hub.Get(ctx, client.ObjectKey{Namespace: "tenant-acme", Name: "db-2"}, &metal3api.HostClaim{})
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Satisfy(apierrors.IsNotFound))
	e.uninstallHub("hosting", "lab-hub", "lab-hub")
	g.Eventually(func(g Gomega) {
		g.Expect(e.Running("hosting", klusterletNS, hostfleetv1alpha1.AddonName)).To(BeEmpty(), "the agent is gone with the hub")
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "infra-2", Name: hostfleetv1alpha1.AddonName}, &addonv1beta1.ManagedClusterAddOn{})).
			To(Satisfy(apierrors.IsNotFound))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}

// ipmiFromImage: the agent, running from its image (no ipmitool in it),
// registers an ipmi:// host on ipmi_sim, powers it on, reboots it and
// powers it off.
func (e *fleet) ipmiFromImage(plane string) {
	bmc := e.BMC()
	e.t.Helper()
	g := NewWithT(e.t)
	ctx := context.Background()
	c := e.Client(plane)
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ipmi"}})).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ipmi", Name: "bmc"},
		StringData: map[string]string{"username": BMCUsername, "password": BMCPassword}})).To(Succeed())
	h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "ipmi", Name: "ipmi-0",
		Annotations: map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}},
		Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "ipmi://" + bmc.Address(), CredentialsName: "bmc"}}}
	g.Expect(c.Create(ctx, h)).To(Succeed())
	get := func(g Gomega) *metal3api.BareMetalHost {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
		return h
	}
	update := func(edit func(*metal3api.BareMetalHost)) {
		g.Eventually(func(g Gomega) {
			edit(get(g))
			g.Expect(c.Update(ctx, h)).To(Succeed())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	start := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(get(g).Status.Provisioning.State).To(Equal(metal3api.StateAvailable), "%s: %s", h.Status.ErrorType, h.Status.ErrorMessage)
		g.Expect(h.Status.GoodCredentials.Reference).NotTo(BeNil())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "registered over IPMI")
	e.t.Logf("ipmi-0 registered over IPMI by the agent's image (%s)", time.Since(start).Round(100*time.Millisecond))

	update(func(h *metal3api.BareMetalHost) { h.Spec.Online = true })
	g.Eventually(func(g Gomega) {
		g.Expect(get(g).Status.PoweredOn).To(BeTrue())
		g.Expect(bmc.Power()).To(BeTrue())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "powered on")

	// A reboot as metal3 asks for one: soft (a soft shutdown, then power
	// on once the BMC reports the host off), then hard (one power cycle,
	// which ipmi_sim carries out as off then on): each command once.
	for _, r := range []struct {
		value string
		want  []string
	}{{"", []string{"shutdown 1", "power 1"}}, {`{"mode":"hard"}`, []string{"power 0", "power 1"}}} {
		before := len(bmc.Log())
		update(func(h *metal3api.BareMetalHost) {
			metav1.SetMetaDataAnnotation(&h.ObjectMeta, metal3api.RebootAnnotationPrefix, r.value)
		})
		g.Eventually(func(g Gomega) {
			g.Expect(bmc.Log()[before:]).To(Equal(r.want))
			g.Expect(get(g).Annotations).NotTo(HaveKey(metal3api.RebootAnnotationPrefix), "the reboot is carried out")
			g.Expect(meta.IsStatusConditionTrue(h.Status.Conditions, hostfleetv1alpha1.ConditionPowerChanging)).To(BeFalse(), "and done")
			g.Expect(h.Status.PoweredOn).To(BeTrue())
			g.Expect(bmc.Power()).To(BeTrue())
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "rebooted (%v)", r.want)
	}

	update(func(h *metal3api.BareMetalHost) { h.Spec.Online = false })
	g.Eventually(func(g Gomega) {
		g.Expect(get(g).Status.PoweredOn).To(BeFalse())
		g.Expect(bmc.Power()).To(BeFalse())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "powered off")
	g.Expect(c.Delete(ctx, h)).To(Succeed())
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(h), h) }).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound))
}

// remoteClaim: infra-1's agent also serves local claims (its own config
// gains localClaims), the site admits the tenant's forwarded claims (a
// HostDeployPolicy on the namespace label the forwarder sets), and a remote
// claim on the hub is forwarded through the cluster's klusterlet work agent,
// bound there by the agent, provisioned by baremetal-operator and Ready on
// the hub, with its host's HardwareData copied to the hub.
func (e *fleet) remoteClaim(cluster, name string) {
	e.t.Helper()
	g := NewWithT(e.t)
	ctx := context.Background()
	hub, managed := e.Client("hub"), e.Client(cluster)
	g.Eventually(func(g Gomega) {
		adc := &addonv1beta1.AddOnDeploymentConfig{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "hostfleet-agent-ipmi"}, adc)).To(Succeed())
		adc.Spec.CustomizedVariables = append(adc.Spec.CustomizedVariables, addonv1beta1.CustomizedVariable{Name: "localClaims", Value: "true"})
		g.Expect(hub.Update(ctx, adc)).To(Succeed())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(managed.Get(ctx, client.ObjectKey{Namespace: addonNamespace, Name: hostfleetv1alpha1.AddonName}, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--local-claims=true"))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "the config reaches the agent")
	e.expectAgent(cluster, addonNamespace)
	g.Expect(managed.Create(ctx, &metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "forwarded-acme"},
		Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{
			HasLabels: []metal3api.NameValuePair{{Name: hostfleetv1alpha1.LabelTenant, Value: "acme"}}}}})).To(Succeed())

	start := time.Now()
	// Its user data reaches the host through a copy beside the target claim,
	// which the agent reads with the Role the hub forwards with it: its only
	// right to a Secret there.
	g.Expect(hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: name + "-userdata"},
		StringData: map[string]string{"userData": "#cloud-config\nforwarded: true\n"}})).To(Succeed())
	claim := &metal3api.HostClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: name, Labels: map[string]string{
			hostfleetv1alpha1.LabelKind: hostfleetv1alpha1.KindRemote, hostfleetv1alpha1.LabelCluster: cluster}},
		Spec: metal3api.HostClaimSpec{
			UserData:     &corev1.SecretReference{Name: name + "-userdata"},
			PoweredOn:    true,
			Image:        &metal3api.Image{URL: "http://images.example.com/os.qcow2", Checksum: "http://images.example.com/os.qcow2.sha256sum"},
			HostSelector: metal3api.HostSelector{MatchLabels: map[string]string{"example.com/size": "large"}},
		},
	}
	g.Expect(hub.Create(ctx, claim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(claim.Status.Conditions, hostfleetv1alpha1.ConditionReady)).To(BeTrue(), "%v", claim.Status.Conditions)
		g.Expect(meta.FindStatusCondition(claim.Status.Conditions, hostfleetv1alpha1.ConditionForwarded)).To(
			HaveField("Reason", hostfleetv1alpha1.ReasonTargetBound))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	e.t.Logf("remote claim %s is Ready on the hub through %s's work agent (%s)", name, cluster, time.Since(start).Round(100*time.Millisecond))

	target := &metal3api.HostClaim{}
	g.Expect(managed.Get(ctx, client.ObjectKey{Namespace: "hf-tenant-acme", Name: name}, target)).To(Succeed())
	g.Expect(target.Labels).NotTo(HaveKey(hostfleetv1alpha1.LabelKind), "a plain metal3 claim on the cluster")
	h := &metal3api.BareMetalHost{}
	g.Expect(managed.Get(ctx, client.ObjectKey{Namespace: claim.Status.BareMetalHost.Namespace, Name: claim.Status.BareMetalHost.Name}, h)).To(Succeed())
	g.Expect(h.Spec.ConsumerRef).To(Equal(&corev1.ObjectReference{APIVersion: "hostfleet.io/v1alpha1", Kind: "HostClaim", Namespace: "hf-tenant-acme", Name: name}),
		"the agent's consumerRef, which no other HostClaim controller takes for its own")
	g.Expect(h.Labels).To(HaveKeyWithValue("example.com/size", "large"))
	g.Expect(h.Spec.UserData).NotTo(BeNil(), "the agent read the forwarded copy and wrote its own next to the host")
	ud := &corev1.Secret{}
	g.Expect(managed.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: h.Spec.UserData.Name}, ud)).To(Succeed())
	g.Expect(string(ud.Data["userData"])).To(ContainSubstring("forwarded: true"))
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.Status.HardwareData).NotTo(BeNil())
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "tenant-acme", Name: name}, &metal3api.HardwareData{})).To(Succeed())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the host's HardwareData reaches the hub")
}
