package controller_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/hardening"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
	"github.com/hostfleet/hostfleet/manifests"
	operatorv1alpha1 "github.com/hostfleet/hostfleet/operator/api/v1alpha1"
	"github.com/hostfleet/hostfleet/operator/controller"
)

func TestMain(m *testing.M) { planes.Main(m) }

var release = controller.Release{Version: "v0.1.0", HubImage: "registry.example/hostfleet-hub:v0.1.0", AgentImage: "registry.example/hostfleet-agent:v0.1.0"}

// TestDefaultMode: the operator, with only the RBAC of its bundle
// (deploy/operator), installs the hub a HostfleetHub describes on its own
// cluster; the hub runs with only what was installed; an upgrade reaches the Deployment,
// the mode cannot change, and uninstall waits for claims then leaves
// nothing of Hostfleet's.
func TestDefaultMode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// OCM's CRDs come from `clusteradm init`; Hostfleet's from the operator.
	f := planes.ForTestWith(t, planes.Options{CRDSets: []string{manifests.OCM, manifests.Operator}}, "hub")
	f.StartControllerManagerForTest(t, "hub") // namespaces and garbage collection
	hub := f.Plane("hub").Client
	asOperator := bundleIdentity(t, f, "hub")
	stop := operator(t, f, asOperator, release, time.Hour)

	g.Expect(hub.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.RetiredAgentHubRole}})).To(Succeed(), "an earlier release's: uninstall removes it")
	g.Expect(hub.Create(ctx, &operatorv1alpha1.HostfleetHub{ObjectMeta: metav1.ObjectMeta{Name: "hub"}})).To(Succeed())

	t.Log("install: CRDs, RBAC, Deployment; Applied, not yet Available")
	g.Eventually(func(g Gomega) {
		h := getHub(g, hub, "hub")
		g.Expect(h.Spec.DeployOption.Mode).To(Equal(operatorv1alpha1.ModeDefault), "the default mode")
		g.Expect(condition(h, operatorv1alpha1.ConditionApplied).Status).To(Equal(metav1.ConditionTrue), "%+v", h.Status.Conditions)
		g.Expect(condition(h, operatorv1alpha1.ConditionAvailable).Reason).To(Equal(operatorv1alpha1.ReasonDeploymentNotReady))
		g.Expect(condition(h, operatorv1alpha1.ConditionAvailable).Message).To(ContainSubstring("0 of 1 replicas available"))
		g.Expect(condition(h, operatorv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(h.Status).To(And(HaveField("Version", "v0.1.0"), HaveField("HubImage", release.HubImage), HaveField("Namespace", "hostfleet-system"),
			HaveField("ObservedGeneration", h.Generation)))
	}).WithTimeout(time.Minute).Should(Succeed())
	for _, name := range []string{"tenants.hostfleet.io", "hostinventories.hostfleet.io", "clustertenancies.hostfleet.io", "hostclaims.metal3.io", "hardwaredata.metal3.io"} {
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed(), name)
	}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "baremetalhosts.metal3.io"}, &apiextensionsv1.CustomResourceDefinition{})).
		To(Satisfy(apierrors.IsNotFound), "only the metal3 CRDs the hub uses")
	role := &rbacv1.ClusterRole{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: controller.HubRole}, role)).To(Succeed())
	g.Expect(role.Rules).To(Equal(permissions.Hub()), "exactly the hub's rights")
	for _, granted := range permissions.GrantedClusterRoles() {
		role := &rbacv1.ClusterRole{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: granted.Name}, role)).To(Succeed(), "the ClusterRoles the hub binds for tenants and agents")
		g.Expect(role.Rules).To(Equal(granted.Rules), granted.Name)
	}
	d := &appsv1.Deployment{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "hostfleet-system", Name: controller.HubName}, d)).To(Succeed())
	c := d.Spec.Template.Spec.Containers[0]
	g.Expect(c.Image).To(Equal(release.HubImage))
	g.Expect(c.Args).To(ContainElements("--agent-image="+release.AgentImage, "--leader-election-namespace=hostfleet-system"))
	g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal(controller.HubName))
	g.Expect(hardening.Check(&d.Spec.Template.Spec)).To(BeEmpty(), "the hub runs hardened")
	g.Expect(c.Args).To(ContainElements("--webhook-bind-address=:9443", "--webhook-service=hostfleet-system/hostfleet-hub-webhook"))
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "hostfleet-system", Name: "hostfleet-hub-webhook"}, &corev1.Service{})).To(Succeed())
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "hostfleet-system", Name: hostfleetv1alpha1.HubWebhookSecret}, &corev1.Secret{})).
		To(Succeed(), "the webhook's Secret, empty: the hub fills it and may not create one")

	t.Log("the admission policies are in force before the hub runs, exempting the hub's user where it acts for everyone")
	vap := &admissionv1.ValidatingAdmissionPolicy{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: hostfleetv1alpha1.ClaimsPolicy}, vap)).To(Succeed())
	data, err := json.Marshal(vap.Spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring("system:serviceaccount:hostfleet-system:hostfleet-hub"))
	g.Expect(string(data)).NotTo(ContainSubstring(manifests.HubUserPlaceholder))

	t.Log("agents have a priority level of their own on the hub API server, the hub's controllers workload-high")
	expectFlowSchemas(g, hub)

	t.Log("the hub's ServiceAccount may bind what it grants, not hold it: no Secret edit anywhere (kubectl auth can-i --list)")
	hubCfg := serviceAccountConfig(g, hub, f.Plane("hub").Config)
	asHub, err := client.New(hubCfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	rules := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "tenant-a"}}
	g.Expect(asHub.Create(ctx, rules)).To(Succeed())
	var secretVerbs, named []string
	for _, r := range rules.Status.ResourceRules {
		switch {
		case slices.Equal(r.ResourceNames, []string{hostfleetv1alpha1.HubWebhookSecret}):
			named = append(named, r.Verbs...)
		case slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*"):
			secretVerbs = append(secretVerbs, r.Verbs...)
		}
	}
	g.Expect(secretVerbs).To(ConsistOf("get", "list", "watch"), "read only (the forwarder copies a remote claim's secrets): %+v", rules.Status.ResourceRules)
	g.Expect(named).To(ConsistOf("update"), "and fill its webhook's Secret, by name")
	g.Expect(rules.Status.ResourceRules).To(ContainElement(And(HaveField("Verbs", []string{"bind"}),
		HaveField("ResourceNames", ConsistOf(permissions.GrantedClusterRoleNames())))))

	t.Log("the hub runs with only the ServiceAccount the operator made: it registers its add-on and a tenant")
	runHub(t, hubCfg)
	g.Expect(hub.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}})).To(Succeed())
	g.Eventually(func() error {
		return hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}})
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		ta := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(ta.Status.Conditions, hostfleetv1alpha1.ConditionReady)).To(BeTrue(), "%+v", ta.Status.Conditions)
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: hostfleetv1alpha1.AddonName}, &addonv1beta1.ClusterManagementAddOn{})).To(Succeed())
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: hostfleetv1alpha1.HubWebhook}, &admissionv1.ValidatingWebhookConfiguration{})).To(Succeed(), "its webhook registered")
	}).WithTimeout(time.Minute).Should(Succeed())

	t.Log("the Deployment's pods are ready (the planes run no kubelet: its status says so): Available")
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	g.Expect(hub.Status().Update(ctx, d)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(getHub(g, hub, "hub"), operatorv1alpha1.ConditionAvailable)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	t.Log("the status names the replica that leads: the hub running here (its identity starts with the host name)")
	host, err := os.Hostname()
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		h := getHub(g, hub, "hub")
		g.Expect(h.Status.Leader).To(Equal(host))
		g.Expect(condition(h, operatorv1alpha1.ConditionAvailable).Message).To(HaveSuffix("; " + host + " leads"))
	}).WithTimeout(45 * time.Second).Should(Succeed())

	t.Log("the mode cannot change")
	h := getHub(g, hub, "hub")
	h.Spec.DeployOption.Mode = operatorv1alpha1.ModeHosted
	g.Expect(hub.Update(ctx, h)).To(MatchError(ContainSubstring("deployOption.mode cannot change")))

	t.Log("upgrade: a new operator release and a new hub image reach the Deployment in place")
	stop()
	next := controller.Release{Version: "v0.2.0", HubImage: "registry.example/hostfleet-hub:v0.2.0", AgentImage: "registry.example/hostfleet-agent:v0.2.0"}
	operator(t, f, asOperator, next, time.Hour)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(next.HubImage))
		g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--agent-image=" + next.AgentImage))
		g.Expect(d.Labels).To(HaveKeyWithValue("app.kubernetes.io/version", "v0.2.0"))
		g.Expect(getHub(g, hub, "hub").Status.Version).To(Equal("v0.2.0"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	h = getHub(g, hub, "hub")
	h.Spec.Image = "mirror.example/hostfleet-hub:v0.2.0-patched"
	h.Spec.Replicas = ptr.To[int32](2)
	g.Expect(hub.Update(ctx, h)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("mirror.example/hostfleet-hub:v0.2.0-patched"))
		g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
		g.Expect(condition(getHub(g, hub, "hub"), operatorv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionFalse),
			"the new replicas are not ready yet")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("a second HostfleetHub on the same cluster is refused")
	g.Expect(hub.Create(ctx, &operatorv1alpha1.HostfleetHub{ObjectMeta: metav1.ObjectMeta{Name: "again"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		deg := condition(getHub(g, hub, "again"), operatorv1alpha1.ConditionDegraded)
		g.Expect(deg.Reason).To(Equal(operatorv1alpha1.ReasonSecondHub))
		g.Expect(deg.Message).To(ContainSubstring("HostfleetHub hub already installs the hub on this cluster"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(hub.Delete(ctx, &operatorv1alpha1.HostfleetHub{ObjectMeta: metav1.ObjectMeta{Name: "again"}})).To(Succeed())

	t.Log("uninstall is refused while claims exist")
	claim := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web"}}
	g.Eventually(func() error { return hub.Create(ctx, claim) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(hub.Delete(ctx, &operatorv1alpha1.HostfleetHub{ObjectMeta: metav1.ObjectMeta{Name: "hub"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		deg := condition(getHub(g, hub, "hub"), operatorv1alpha1.ConditionDegraded)
		g.Expect(deg.Reason).To(Equal(operatorv1alpha1.ReasonClaimsExist))
		g.Expect(deg.Message).To(ContainSubstring("1 HostClaims remain on the hub (tenant-a/web): delete them"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed(), "the hub still runs")

	t.Log("the claim goes: the hub, still running, finalizes the tenant; then nothing of Hostfleet is left")
	g.Expect(hub.Delete(ctx, claim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "hub"}, &operatorv1alpha1.HostfleetHub{})).To(Satisfy(apierrors.IsNotFound))
	}).WithTimeout(2 * time.Minute).Should(Succeed())
	g.Eventually(func(g Gomega) {
		for _, name := range []string{"tenants.hostfleet.io", "hostinventories.hostfleet.io", "clustertenancies.hostfleet.io"} {
			g.Expect(hub.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})).To(Satisfy(apierrors.IsNotFound), name)
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
	for _, obj := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: controller.HubRole}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.RetiredAgentHubRole}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: controller.HubRole}},
		&addonv1beta1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.AddonName}},
		&admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.HubWebhook}},
	} {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Satisfy(apierrors.IsNotFound), "%T %s", obj, obj.GetName())
	}
	g.Eventually(func(g Gomega) {
		err := hub.Get(ctx, client.ObjectKey{Name: "hostfleet-system"}, &corev1.Namespace{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the hub's namespace is gone: %v", err)
	}).WithTimeout(time.Minute).Should(Succeed())
	expectNoFlowSchemas(g, hub)
	policies := &admissionv1.ValidatingAdmissionPolicyList{}
	g.Expect(hub.List(ctx, policies)).To(Succeed())
	g.Expect(policies.Items).To(BeEmpty(), "no admission policy of the hub's is left")
	bindings := &admissionv1.ValidatingAdmissionPolicyBindingList{}
	g.Expect(hub.List(ctx, bindings)).To(Succeed())
	g.Expect(bindings.Items).To(BeEmpty())
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "hostclaims.metal3.io"}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed(),
		"metal3's CRDs stay: a baremetal-operator on this cluster may use them")
}

// TestHostedMode: the hub's controllers run on the hosting cluster, reaching
// the hub with a token of their own ServiceAccount there, never the
// administrator's kubeconfig, which only the operator reads.
func TestHostedMode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTestWith(t, planes.Options{CRDSets: []string{manifests.OCM, manifests.Operator}}, "hub", "hosting")
	hub, hosting := f.Plane("hub").Client, f.Plane("hosting").Client
	operator(t, f, bundleIdentity(t, f, "hosting"), release, 10*time.Minute)

	g.Expect(hosting.Create(ctx, &operatorv1alpha1.HostfleetHub{ObjectMeta: metav1.ObjectMeta{Name: "lab-hub"},
		Spec: operatorv1alpha1.HostfleetHubSpec{DeployOption: operatorv1alpha1.DeployOption{Mode: operatorv1alpha1.ModeHosted}}})).To(Succeed())

	t.Log("no external-hub-kubeconfig: Degraded, saying what to make")
	g.Eventually(func(g Gomega) {
		deg := condition(getHub(g, hosting, "lab-hub"), operatorv1alpha1.ConditionDegraded)
		g.Expect(deg.Reason).To(Equal(operatorv1alpha1.ReasonExternalKubeconfig))
		g.Expect(deg.Message).To(ContainSubstring("the Hosted mode needs Secret lab-hub/external-hub-kubeconfig with a \"kubeconfig\" key"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("a kubeconfig that does not parse, then one whose hub does not answer")
	g.Expect(hosting.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lab-hub"}})).To(Succeed())
	ext := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-hub", Name: operatorv1alpha1.ExternalHubKubeconfig},
		Data: map[string][]byte{"kubeconfig": []byte("not: [a kubeconfig")}}
	g.Expect(hosting.Create(ctx, ext)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(condition(getHub(g, hosting, "lab-hub"), operatorv1alpha1.ConditionDegraded).Message).To(ContainSubstring("the kubeconfig is not usable"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	admin, err := os.ReadFile(f.Plane("hub").Kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	wrong, err := clientcmd.Load(admin)
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range wrong.Clusters {
		c.Server = "https://127.0.0.1:1"
	}
	wrongData, err := clientcmd.Write(*wrong)
	g.Expect(err).NotTo(HaveOccurred())
	ext.Data["kubeconfig"] = wrongData
	g.Expect(hosting.Update(ctx, ext)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(condition(getHub(g, hosting, "lab-hub"), operatorv1alpha1.ConditionDegraded).Message).To(ContainSubstring("the hub does not answer through the kubeconfig"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("the hub's administrator kubeconfig: the hub gets CRDs and RBAC, the hosting cluster the controllers")
	ext.Data["kubeconfig"] = admin
	g.Expect(hosting.Update(ctx, ext)).To(Succeed())
	g.Eventually(func(g Gomega) {
		h := getHub(g, hosting, "lab-hub")
		g.Expect(condition(h, operatorv1alpha1.ConditionApplied).Status).To(Equal(metav1.ConditionTrue), "%+v", h.Status.Conditions)
		g.Expect(condition(h, operatorv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(h.Status.Namespace).To(Equal("lab-hub"))
	}).WithTimeout(time.Minute).Should(Succeed())
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "tenants.hostfleet.io"}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: controller.DefaultNamespace, Name: controller.HubName}, &corev1.ServiceAccount{})).To(Succeed())
	g.Expect(hub.List(ctx, &appsv1.DeploymentList{})).To(Succeed())
	deploys := &appsv1.DeploymentList{}
	g.Expect(hub.List(ctx, deploys)).To(Succeed())
	g.Expect(deploys.Items).To(BeEmpty(), "nothing of the hub runs on the hub cluster")
	d := &appsv1.Deployment{}
	g.Expect(hosting.Get(ctx, client.ObjectKey{Namespace: "lab-hub", Name: controller.HubName}, d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--kubeconfig=/var/run/hub/kubeconfig", "--leader-election-namespace=hostfleet-system"),
		"the Lease is on the hub, where the hub's ServiceAccount may keep it")
	g.Expect(d.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", controller.HubKubeconfigSecret)))
	g.Expect(d.Spec.Template.Spec.Volumes).NotTo(ContainElement(HaveField("Secret.SecretName", operatorv1alpha1.ExternalHubKubeconfig)),
		"the administrator's kubeconfig is the operator's only")
	g.Expect(hardening.Check(&d.Spec.Template.Spec)).To(BeEmpty(), "the Hosted hub runs hardened")

	t.Log("the controllers' kubeconfig is their own ServiceAccount's token on the hub")
	s := &corev1.Secret{}
	g.Expect(hosting.Get(ctx, client.ObjectKey{Namespace: "lab-hub", Name: controller.HubKubeconfigSecret}, s)).To(Succeed())
	kc, err := clientcmd.Load(s.Data["kubeconfig"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kc.AuthInfos).To(HaveEach(HaveField("TokenFile", controller.TokenPath)))
	// The Secret mounted as the pod would have it.
	mount := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(mount, "token"), s.Data["token"], 0o600)).To(Succeed())
	for _, a := range kc.AuthInfos {
		a.TokenFile = filepath.Join(mount, "token")
	}
	tokenCfg, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
	g.Expect(err).NotTo(HaveOccurred())
	asHub, err := client.New(tokenCfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	self := &authenticationv1.SelfSubjectReview{}
	g.Expect(asHub.Create(ctx, self)).To(Succeed())
	g.Expect(self.Status.UserInfo.Username).To(Equal("system:serviceaccount:hostfleet-system:hostfleet-hub"))
	g.Expect(asHub.List(ctx, &corev1.PodList{})).To(Satisfy(apierrors.IsForbidden), "least privilege, not admin")
	issued, err := time.Parse(time.RFC3339, s.Annotations[controller.AnnotationTokenIssued])
	g.Expect(err).NotTo(HaveOccurred())
	expires, err := time.Parse(time.RFC3339, s.Annotations[controller.AnnotationTokenExpires])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(expires.Sub(issued)).To(BeNumerically("~", 10*time.Minute, 5*time.Second))

	t.Log("the token is renewed before it expires (here: its issue time moved back past 80% of its life)")
	old := string(s.Data["token"])
	s.Annotations[controller.AnnotationTokenIssued] = issued.Add(-9 * time.Minute).Format(time.RFC3339)
	s.Annotations[controller.AnnotationTokenExpires] = expires.Add(-9 * time.Minute).Format(time.RFC3339)
	g.Expect(hosting.Update(ctx, s)).To(Succeed())
	h := getHub(g, hosting, "lab-hub")
	h.Spec.Replicas = ptr.To[int32](2) // a change, so the operator looks again now
	g.Expect(hosting.Update(ctx, h)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hosting.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
		g.Expect(string(s.Data["token"])).NotTo(Equal(old))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("uninstall: the hub cluster and the hosting namespace are left without the hub")
	g.Expect(hosting.Delete(ctx, h)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hosting.Get(ctx, client.ObjectKey{Name: "lab-hub"}, &operatorv1alpha1.HostfleetHub{})).To(Satisfy(apierrors.IsNotFound))
	}).WithTimeout(time.Minute).Should(Succeed())
	g.Expect(hosting.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Satisfy(apierrors.IsNotFound))
	g.Expect(hosting.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Satisfy(apierrors.IsNotFound))
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: controller.HubRole}, &rbacv1.ClusterRole{})).To(Satisfy(apierrors.IsNotFound))
	g.Eventually(func() error {
		return hub.Get(ctx, client.ObjectKey{Name: "tenants.hostfleet.io"}, &apiextensionsv1.CustomResourceDefinition{})
	}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsNotFound), "a CRD goes once the API server has removed its objects")
}
