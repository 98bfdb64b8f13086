package addon_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"maps"
	"slices"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/hardening"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/addon"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
)

func TestMain(m *testing.M) { planes.Main(m) }

// manifests are a ManifestWork's manifests by "Kind/namespace/name".
func manifests(g Gomega, w *workv1.ManifestWork) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, m := range w.Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		g.Expect(json.Unmarshal(m.Raw, &u.Object)).To(Succeed())
		out[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u
	}
	return out
}

func deployment(g Gomega, u *unstructured.Unstructured) *appsv1.Deployment {
	g.Expect(u).NotTo(BeNil(), "the work has the agent's Deployment")
	d := &appsv1.Deployment{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d)).To(Succeed())
	return d
}

func rules(g Gomega, u *unstructured.Unstructured) []rbacv1.PolicyRule {
	g.Expect(u).NotTo(BeNil())
	r := &rbacv1.ClusterRole{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r)).To(Succeed())
	return r.Rules
}

// csr is a certificate request for the add-on, made on the hub as a
// cluster's registration agent would.
func csr(g Gomega, name, cluster, commonName string, orgs ...string) (*certificatesv1.CertificateSigningRequest, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: commonName, Organization: orgs}}, key)
	g.Expect(err).NotTo(HaveOccurred())
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			clusterv1.ClusterNameLabelKey: cluster, addonv1beta1.AddonLabelKey: hostfleetv1alpha1.AddonName}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, key
}

func approved(c *certificatesv1.CertificateSigningRequest) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func TestAddonManager(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	f.StartControllerManagerForTest(t, "hub") // garbage collection of what the add-on owns
	hubPlane := f.Plane("hub")
	hub := hubPlane.Client
	opts := addon.Options{Image: "registry.example/hostfleet-agent:v1", HubName: "lab-hub"}
	f.HubForTest(t, "hub", func(mgr ctrl.Manager) error {
		return mgr.Add(&addon.Manager{Config: hubPlane.Config, Options: opts})
	})

	t.Log("the hub registers the add-on")
	cma := &addonv1beta1.ClusterManagementAddOn{}
	g.Eventually(func() error { return hub.Get(ctx, client.ObjectKey{Name: hostfleetv1alpha1.AddonName}, cma) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(cma.Spec.InstallStrategy.Type).To(Equal(addonv1beta1.AddonInstallStrategyManual))

	// OCM's addon-manager makes each ManagedClusterAddOn owned by the
	// ClusterManagementAddOn; the planes run no OCM component, so the test does.
	owner := []metav1.OwnerReference{{APIVersion: addonv1beta1.GroupVersion.String(), Kind: "ClusterManagementAddOn", Name: cma.Name, UID: cma.UID}}
	set := map[string]string{clusterv1beta2.ClusterSetLabel: "lab"}
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: set}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c2", Labels: set}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "hosting"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c2"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosting"}},
		// clusteradm addon enable --names hostfleet-agent --clusters c1
		&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: hostfleetv1alpha1.AddonName, OwnerReferences: owner}},
		// ... and c2, its agent on the hosting cluster
		&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c2", Name: hostfleetv1alpha1.AddonName, OwnerReferences: owner,
			Annotations: map[string]string{addonv1beta1.HostingClusterNameAnnotationKey: "hosting"}}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}

	t.Log("Default mode: one ManifestWork in the cluster's namespace with the whole agent")
	work := &workv1.ManifestWork{}
	g.Eventually(func() error {
		return hub.Get(ctx, client.ObjectKey{Namespace: "c1", Name: "addon-hostfleet-agent-deploy-0"}, work)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	m := manifests(g, work)
	g.Expect(m).To(HaveKey("Namespace//hostfleet-agent"))
	g.Expect(work.Spec.DeleteOption).To(BeNil(), "the agent's own namespace goes with the add-on")
	g.Expect(m).To(HaveKey("ServiceAccount/hostfleet-agent/hostfleet-agent"))
	g.Expect(rules(g, m["ClusterRole//hostfleet-agent"])).To(Equal(permissions.AgentManagedClusterDefault(permissions.Features{})),
		"the agent's rights are the ones it gives itself in Hosted mode, and asking this cluster's API server who may read its metrics")
	g.Expect(m).To(HaveKey("ClusterRoleBinding//hostfleet-agent"))
	g.Expect(rules(g, m["Role/hostfleet-agent/hostfleet-agent"])).To(Equal(permissions.AgentOwnNamespace()))
	g.Expect(m).To(HaveKey("RoleBinding/hostfleet-agent/hostfleet-agent"))
	work1 := m["ClusterRole//hostfleet:work-agent"]
	g.Expect(work1).NotTo(BeNil())
	g.Expect(work1.GetLabels()).To(HaveKeyWithValue("open-cluster-management.io/aggregate-to-work", "true"))
	g.Expect(rules(g, work1)).To(ContainElement(HaveField("Resources", ContainElement("hostclaims"))))
	d := deployment(g, m["Deployment/hostfleet-agent/hostfleet-agent"])
	c := d.Spec.Template.Spec.Containers[0]
	g.Expect(c.Image).To(Equal(opts.Image))
	g.Expect(c.Args).To(ContainElements("--hub-kubeconfig=/var/run/hub/kubeconfig", "--cluster-name=c1",
		"--hub-name=lab-hub", "--agent-namespace=hostfleet-agent", "--lease-owner=hostfleet-agent", "--bmh-driver=none"),
		"no BMC namespaces given: the driver is off, and the agent reads no Secret on the cluster")
	g.Expect(c.Args).NotTo(ContainElement(HavePrefix("--bootstrap-managed-kubeconfig")))
	g.Expect(d.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", "hostfleet-agent-hub-kubeconfig")))

	t.Log("Hosted mode: the agent goes to the hosting cluster, beside the klusterlet's external kubeconfig")
	g.Eventually(func() error {
		return hub.Get(ctx, client.ObjectKey{Namespace: "hosting", Name: "addon-hostfleet-agent-deploy-hosting-c2-0"}, work)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	m = manifests(g, work)
	g.Expect(slices.Sorted(maps.Keys(m))).To(ConsistOf("ServiceAccount/klusterlet-c2/hostfleet-agent", "Deployment/klusterlet-c2/hostfleet-agent",
		"Role/klusterlet-c2/hostfleet-agent-lease", "RoleBinding/klusterlet-c2/hostfleet-agent-lease", "ClusterRoleBinding//hostfleet-agent-metrics:klusterlet-c2"),
		"only the pod, its ServiceAccount and that ServiceAccount's rights to its health Lease and to check its metrics' callers are on the hosting cluster")
	g.Expect(m["ClusterRoleBinding//hostfleet-agent-metrics:klusterlet-c2"].Object).To(HaveKeyWithValue("roleRef", HaveKeyWithValue("name", "system:auth-delegator")))
	for _, r := range rules(g, m["Role/klusterlet-c2/hostfleet-agent-lease"]) {
		g.Expect(r.Resources).To(Or(Equal([]string{"leases"}), Equal([]string{"serviceaccounts"})),
			"the pod's only rights on the hosting cluster: its Lease, and naming its ServiceAccount the Lease's owner")
	}
	d = deployment(g, m["Deployment/klusterlet-c2/hostfleet-agent"])
	c = d.Spec.Template.Spec.Containers[0]
	g.Expect(c.Args).To(ContainElements("--cluster-name=c2", "--agent-namespace=hostfleet-agent",
		"--bootstrap-managed-kubeconfig=/var/run/managed/kubeconfig", "--token-dir=/var/run/token"))
	g.Expect(d.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", addon.ExternalManagedKubeconfig)))
	g.Expect(hardening.Check(&d.Spec.Template.Spec)).To(BeEmpty(), "the Hosted agent runs hardened")
	g.Eventually(func() error {
		return hub.Get(ctx, client.ObjectKey{Namespace: "c2", Name: "addon-hostfleet-agent-deploy-0"}, work)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	m = manifests(g, work)
	g.Expect(slices.Sorted(maps.Keys(m))).To(ConsistOf("Namespace//hostfleet-agent", "ClusterRole//hostfleet:work-agent"),
		"the managed cluster gets the agent's namespace and the work agent's rights; the agent makes its own identity")

	t.Log("health comes from the agent's Lease")
	mca := &addonv1beta1.ManagedClusterAddOn{}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "c1", Name: hostfleetv1alpha1.AddonName}, mca)).To(Succeed())
		g.Expect(mca.Status.HealthCheck.Mode).To(Equal(addonv1beta1.HealthCheckModeLease))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("CSR driver: the registration asks for the add-on identity, which is bound in the cluster's namespace, nowhere cluster-wide")
	user := agent.DefaultUser("c1", hostfleetv1alpha1.AddonName, hostfleetv1alpha1.AddonName)
	groups := agent.DefaultGroups("c1", hostfleetv1alpha1.AddonName)
	rb := &rbacv1.RoleBinding{}
	agentBinding := func(g Gomega, cluster string) *rbacv1.RoleBinding {
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: hostfleetv1alpha1.AgentClusterRole}, rb)).To(Succeed())
		return rb
	}
	g.Eventually(func(g Gomega) {
		g.Expect(agentBinding(g, "c1").Subjects).To(ConsistOf(
			rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user},
			rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: groups[0]}),
			"the cluster's own user and group; never %s, which every cluster's agent holds", groups[1])
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(rb.OwnerReferences).To(ContainElement(HaveField("Kind", "ManagedClusterAddOn")), "disabling the add-on removes the grant")
	crbs := &rbacv1.ClusterRoleBindingList{}
	g.Expect(hub.List(ctx, crbs)).To(Succeed())
	for _, crb := range crbs.Items {
		g.Expect(crb.Subjects).NotTo(ContainElement(HaveField("Name", Or(Equal(user), Equal(groups[0])))),
			"no ClusterRoleBinding names the agent: %s", crb.Name)
	}

	t.Log("CSRs are approved only for the add-on identity, requested by the cluster's own agent")
	regCfg, err := f.AddUser("hub", "system:open-cluster-management:c1:registration", "system:open-cluster-management:c1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hub.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "c1-registration"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:open-cluster-management:c1"}}})).To(Succeed())
	reg, err := client.New(regCfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	forgedCSR, _ := csr(g, "addon-c1-hostfleet-agent-forged", "c1", "system:admin", groups...)
	g.Expect(hub.Create(ctx, forgedCSR)).To(Succeed(), "made by an administrator, not the cluster")
	goodCSR, goodKey := csr(g, "addon-c1-hostfleet-agent-good", "c1", user, groups...)
	g.Eventually(func() error { return reg.Create(ctx, goodCSR.DeepCopy()) }).WithTimeout(10 * time.Second).Should(Succeed())
	good := &certificatesv1.CertificateSigningRequest{}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "addon-c1-hostfleet-agent-good"}, good)).To(Succeed())
		g.Expect(approved(good)).To(BeTrue())
		g.Expect(good.Status.Certificate).NotTo(BeEmpty(), "signed by kube-controller-manager")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	t.Log("the signed certificate is the agent's hub identity, with the rights bound to it")
	keyDER, err := x509.MarshalECPrivateKey(goodKey)
	g.Expect(err).NotTo(HaveOccurred())
	agentCfg := rest.AnonymousClientConfig(hubPlane.Config)
	agentCfg.CertData = good.Status.Certificate
	agentCfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	asAgent, err := client.New(agentCfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(asAgent.List(ctx, &metal3api.HostClaimList{}, client.InNamespace("c1"), client.MatchingLabels{hostfleetv1alpha1.LabelCluster: "c1"})).To(Succeed())
	g.Expect(asAgent.List(ctx, &metal3api.HostClaimList{}, client.MatchingLabels{hostfleetv1alpha1.LabelCluster: "c1"})).To(Satisfy(apierrors.IsForbidden),
		"never claims cluster-wide: only in the namespaces of the tenants its cluster serves")
	g.Expect(asAgent.Create(ctx, &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"},
		Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "c1"}}, client.DryRunAll)).To(Succeed())
	g.Expect(asAgent.List(ctx, &corev1.SecretList{}, client.InNamespace("c1"))).To(Satisfy(apierrors.IsForbidden))
	g.Expect(asAgent.List(ctx, &corev1.NamespaceList{})).To(Satisfy(apierrors.IsForbidden),
		"no Namespace: the ClusterTenancy carries the labels of its tenants' namespaces")
	hubLease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: hostfleetv1alpha1.AddonName}}
	g.Expect(asAgent.Create(ctx, hubLease)).To(Succeed(), "the agent creates its health Lease on the hub")
	g.Expect(asAgent.Update(ctx, hubLease)).To(Succeed(), "and renews it")
	g.Expect(asAgent.Update(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "c2", Name: hostfleetv1alpha1.AddonName}})).
		To(Satisfy(apierrors.IsForbidden), "never another cluster's")
	g.Expect(rb.Subjects).NotTo(ContainElement(HaveField("Name", groups[1])), "no agent may write another cluster's inventory or Lease")
	forged := &certificatesv1.CertificateSigningRequest{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "addon-c1-hostfleet-agent-forged"}, forged)).To(Succeed())
	g.Expect(approved(forged)).To(BeFalse(), "a CSR for another user is left for a person to judge")

	t.Log("a cluster's registration agent asking for a certificate that carries another cluster's agent group is never signed")
	stolenCSR, _ := csr(g, "addon-c1-hostfleet-agent-stolen", "c1", user, append(groups, hostfleetv1alpha1.AgentHubGroup("c2"))...)
	g.Expect(reg.Create(ctx, stolenCSR)).To(Succeed())
	otherCSR, _ := csr(g, "addon-c1-hostfleet-agent-other", "c1", hostfleetv1alpha1.AgentHubUser("c2"), agent.DefaultGroups("c2", hostfleetv1alpha1.AddonName)...)
	g.Expect(reg.Create(ctx, otherCSR)).To(Succeed())
	sentinel, _ := csr(g, "addon-c1-hostfleet-agent-after", "c1", user, groups...)
	g.Expect(reg.Create(ctx, sentinel)).To(Succeed())
	g.Eventually(func(g Gomega) {
		// A good CSR made after the bad ones is signed: the approver has seen them all.
		after := &certificatesv1.CertificateSigningRequest{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "addon-c1-hostfleet-agent-after"}, after)).To(Succeed())
		g.Expect(after.Status.Certificate).NotTo(BeEmpty())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	for _, name := range []string{"addon-c1-hostfleet-agent-stolen", "addon-c1-hostfleet-agent-other"} {
		bad := &certificatesv1.CertificateSigningRequest{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: name}, bad)).To(Succeed())
		g.Expect(approved(bad)).To(BeFalse(), name)
		g.Expect(bad.Status.Certificate).To(BeEmpty(), name)
	}

	t.Log("token driver: a subject the registration names is refused unless it is the cluster's own ServiceAccount")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "c2", Name: hostfleetv1alpha1.AddonName}, mca)).To(Succeed())
		g.Expect(mca.Status.Registrations).To(HaveLen(1))
		mca.Status.Registrations[0].KubeClient.Driver = "token"
		mca.Status.Registrations[0].KubeClient.Subject = addonv1beta1.KubeClientSubject{BaseSubject: addonv1beta1.BaseSubject{Groups: []string{"system:serviceaccounts"}}}
		g.Expect(hub.Status().Update(ctx, mca)).To(Succeed())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "c2", Name: hostfleetv1alpha1.AddonName}, mca)).To(Succeed())
		applied := meta.FindStatusCondition(mca.Status.Conditions, addonv1beta1.ManagedClusterAddOnRegistrationApplied)
		g.Expect(applied).NotTo(BeNil())
		g.Expect(applied.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(applied.Message).To(ContainSubstring("the agent of cluster c2 may be only"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(agentBinding(g, "c2").Subjects).NotTo(ContainElement(HaveField("Name", "system:serviceaccounts")))

	t.Log("token driver: the klusterlet declares the cluster's ServiceAccount identity, which is bound instead")
	tokenUser := hostfleetv1alpha1.AgentTokenUser("c2")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "c2", Name: hostfleetv1alpha1.AddonName}, mca)).To(Succeed())
		g.Expect(mca.Status.Registrations).To(HaveLen(1))
		mca.Status.Registrations[0].KubeClient.Driver = "token"
		mca.Status.Registrations[0].KubeClient.Subject = addonv1beta1.KubeClientSubject{BaseSubject: addonv1beta1.BaseSubject{User: tokenUser}}
		g.Expect(hub.Status().Update(ctx, mca)).To(Succeed())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(agentBinding(g, "c2").Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tokenUser}}))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("a tenant on the set: the token identity serves its namespace, writes only its own inventory, and only its own claims")
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}})).To(Succeed())
	tokCfg, err := f.AddUser("hub", tokenUser)
	g.Expect(err).NotTo(HaveOccurred())
	tok, err := client.New(tokCfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(tok.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "missing"}, &corev1.Secret{})).To(Satisfy(apierrors.IsNotFound),
			"reading the tenant's secrets is allowed (the secret just does not exist)")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(hub.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "on-c1",
		Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "c1"}}})).To(Succeed())
	g.Eventually(func() error {
		return tok.List(ctx, &metal3api.HostClaimList{}, client.InNamespace("tenant-a"), client.MatchingLabels{hostfleetv1alpha1.LabelCluster: "c2"})
	}).WithTimeout(30*time.Second).Should(Succeed(), "in its tenant's namespace")
	g.Expect(tok.List(ctx, &hostfleetv1alpha1.TenantList{})).To(Satisfy(apierrors.IsForbidden),
		"no Tenant: each lists its admins and every cluster of its set")
	ct := &hostfleetv1alpha1.ClusterTenancy{}
	g.Eventually(func(g Gomega) {
		g.Expect(tok.Get(ctx, client.ObjectKey{Namespace: "c2", Name: hostfleetv1alpha1.TenancyName}, ct)).To(Succeed())
		g.Expect(ct.Spec.Tenants).To(ConsistOf(HaveField("Name", "a")), "its cluster's ClusterTenancy says what it serves")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(tok.Update(ctx, ct, client.DryRunAll)).To(Satisfy(apierrors.IsForbidden), "read only: the hub writes it")
	g.Expect(tok.Get(ctx, client.ObjectKey{Namespace: "c1", Name: hostfleetv1alpha1.TenancyName}, &hostfleetv1alpha1.ClusterTenancy{})).
		To(Satisfy(apierrors.IsForbidden), "never another cluster's")
	inv := func(ns string) *hostfleetv1alpha1.HostInventory {
		return &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns},
			Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: ns}}
	}
	g.Eventually(func() error { return tok.Create(ctx, inv("c2"), client.DryRunAll) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(tok.Create(ctx, inv("c1"))).To(Satisfy(apierrors.IsForbidden), "another cluster's inventory")
	// The admission policies take a few seconds to apply: probe with dry runs.
	onC1 := &metal3api.HostClaim{}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "on-c1"}, onC1)).To(Succeed())
		onC1.Status.PoweredOn = true
		err := tok.Status().Update(ctx, onC1, client.DryRunAll)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring("placed on c1")))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("disabling the add-on removes the agent's work and its grant in the cluster's namespace")
	g.Expect(hub.Delete(ctx, &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: hostfleetv1alpha1.AddonName}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "c1", Name: hostfleetv1alpha1.AddonName}, &addonv1beta1.ManagedClusterAddOn{})).To(Satisfy(apierrors.IsNotFound))
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "c1", Name: "addon-hostfleet-agent-deploy-0"}, &workv1.ManifestWork{})).To(Satisfy(apierrors.IsNotFound))
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "c1", Name: hostfleetv1alpha1.AgentClusterRole}, &rbacv1.RoleBinding{})).To(Satisfy(apierrors.IsNotFound))
	}).WithTimeout(60 * time.Second).Should(Succeed())
}
