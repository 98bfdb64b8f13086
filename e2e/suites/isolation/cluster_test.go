package isolation_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestWhoMakesAWorkloadCluster: hostfleet.io/tenant on a ManagedCluster
// makes it a tenant's workload cluster, whose agent reads the tenant's
// claims. No cluster identity can set it — the bootstrap identities that
// `clusteradm init` really makes (read from clusteradm's own manifests), a
// registration agent — while a hub administrator can; a labelled cluster
// the hub has not accepted grants nothing; several workload clusters are
// reported on the Tenant.
func TestWhoMakesAWorkloadCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// Fresh planes, not the package's shared ones: the API server's
	// admission caches policies and their parameters (the Tenants), and a
	// Tenant of the same name left by another test could still be what a
	// policy reads here.
	f := planes.ForTestWith(t, planes.Options{Dir: t.TempDir()}, "hub")
	hub := f.Plane("hub").Client
	f.HubForTest(t, "hub")
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "lab"}}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management"}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}

	t.Log("clusteradm init's bootstrap identities and their rights, as clusteradm renders them at the pinned version")
	data, err := planes.ClusteradmBootstrap()
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := planes.Decode(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(4), "the ServiceAccount, the ClusterRole, and its bindings to the ServiceAccount and to bootstrap tokens")
	for _, o := range objs {
		g.Expect(hub.Create(ctx, o)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
	}
	bootToken, err := f.Plane("hub").Token(ctx, "open-cluster-management", "agent-registration-bootstrap")
	g.Expect(err).NotTo(HaveOccurred())
	bootCfg := f.Plane("hub").TokenConfig(bootToken)
	bootstrapSA, err := client.New(bootCfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	as := func(name string, groups ...string) client.Client { return user(g, f, name, groups...) }
	bootstrapToken := as("system:bootstrap:abcdef", "system:bootstrappers", "system:bootstrappers:managedcluster", "system:authenticated")
	cluster := func(name, tenant string, accepted bool) *clusterv1.ManagedCluster {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: accepted}}
		if tenant != "" {
			mc.Labels[hostfleetv1alpha1.LabelTenant] = tenant
		}
		return mc
	}
	refusedByRule := func(err error, what string) {
		g.ExpectWithOffset(1, err).To(HaveOccurred(), what)
		g.ExpectWithOffset(1, apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", what, err)
		g.ExpectWithOffset(1, err.Error()).To(ContainSubstring("ValidatingAdmissionPolicy 'hostfleet-cluster-tenant'"), what)
		g.ExpectWithOffset(1, err.Error()).To(ContainSubstring("takes the right to update the Tenant"), what)
	}
	// The hub installs its policies as it starts, and the API server takes
	// a moment to enforce a new one: wait until it does.
	g.Eventually(func() error { return bootstrapSA.Create(ctx, cluster("probe", "a", false), client.DryRunAll) }).
		WithTimeout(30*time.Second).Should(HaveOccurred(), "the cluster-tenant policy in force")
	for who, c := range map[string]client.Client{"the agent-registration-bootstrap ServiceAccount": bootstrapSA, "a bootstrap token": bootstrapToken} {
		g.Eventually(func() error { return c.Create(ctx, cluster("newcomer", "", false), client.DryRunAll) }).
			WithTimeout(10*time.Second).Should(Succeed(), "positive control: %s may create a ManagedCluster, as joining needs", who)
		refusedByRule(c.Create(ctx, cluster("rogue", "a", false), client.DryRunAll), who+" labels its new cluster tenant a's")
		refusedByRule(c.Create(ctx, cluster("rogue", "a", true), client.DryRunAll), who+" labels an accepted cluster tenant a's")
	}

	t.Log("a cluster's registration agent may label its ManagedCluster, but not with a tenant")
	g.Expect(hub.Create(ctx, cluster("newcomer", "", true))).To(Succeed())
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "newcomer"}})).To(Succeed())
	g.Expect(planes.AcceptCluster(ctx, hub, "newcomer")).To(Succeed())
	g.Expect(hub.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "registration-newcomer"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclusters"}, ResourceNames: []string{"newcomer"}, Verbs: []string{"get", "update"}}}})).To(Succeed())
	g.Expect(hub.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "registration-newcomer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "registration-newcomer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: hostfleetv1alpha1.RegistrationGroup("newcomer")}}})).To(Succeed())
	registration := as("system:open-cluster-management:newcomer:agent", hostfleetv1alpha1.RegistrationGroup("newcomer"),
		"system:open-cluster-management:managed-clusters", "system:authenticated")
	relabel := func(c client.Client, name string, labels map[string]string) error {
		mc := &clusterv1.ManagedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return err
		}
		if mc.Labels == nil {
			mc.Labels = map[string]string{}
		}
		for k, v := range labels {
			if v == "" {
				delete(mc.Labels, k)
				continue
			}
			mc.Labels[k] = v
		}
		return c.Update(ctx, mc)
	}
	g.Eventually(func() error { return relabel(registration, "newcomer", map[string]string{"example.com/site": "x"}) }).
		WithTimeout(10*time.Second).Should(Succeed(), "positive control: its own labels")
	refusedByRule(relabel(registration, "newcomer", map[string]string{hostfleetv1alpha1.LabelTenant: "a"}), "its registration agent makes it tenant a's")

	t.Log("a hub administrator decides, with the right to update the Tenant, and only that Tenant")
	g.Expect(hub.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fleet-ops"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclusters"}, Verbs: []string{"get", "list", "create", "update"}},
		{APIGroups: []string{hostfleetv1alpha1.GroupVersion.Group}, Resources: []string{"tenants"}, ResourceNames: []string{"a"}, Verbs: []string{"get", "update"}}}})).To(Succeed())
	g.Expect(hub.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleet-ops"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fleet-ops"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ops"}}})).To(Succeed())
	ops := as("ops", "system:authenticated")
	g.Eventually(func() error { return relabel(ops, "newcomer", map[string]string{hostfleetv1alpha1.LabelTenant: "a"}) }).
		WithTimeout(10*time.Second).Should(Succeed(), "an operator who may update Tenant a makes newcomer a's workload cluster")
	refusedByRule(relabel(ops, "newcomer", map[string]string{hostfleetv1alpha1.LabelTenant: "b"}), "moving it to tenant b, which ops may not update")
	refusedByRule(relabel(ops, "c1", map[string]string{hostfleetv1alpha1.LabelTenant: "b"}), "making c1 tenant b's")

	workload := func(g Gomega, tenant string) (*hostfleetv1alpha1.Tenant, *metav1.Condition) {
		tn := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: tenant}, tn)).To(Succeed())
		return tn, meta.FindStatusCondition(tn.Status.Conditions, hostfleetv1alpha1.ConditionWorkloadClusters)
	}
	bound := func(g Gomega) []rbacv1.Subject {
		rb := &rbacv1.RoleBinding{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: hostfleetv1alpha1.AgentWorkloadRole}, rb)).To(Succeed())
		return rb.Subjects
	}
	g.Eventually(func(g Gomega) {
		tn, cond := workload(g, "a")
		g.Expect(tn.Status.WorkloadClusters).To(Equal([]string{"newcomer"}))
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonOneWorkloadCluster))
		g.Expect(bound(g)).To(ContainElement(HaveField("Name", hostfleetv1alpha1.AgentHubGroup("newcomer"))))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("a labelled cluster the hub has not accepted is no workload cluster: no binding, no role, reported on the Tenant")
	g.Expect(hub.Create(ctx, cluster("unaccepted", "a", false))).To(Succeed(), "as an administrator may pre-label a cluster")
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "unaccepted"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		tn, cond := workload(g, "a")
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonWorkloadClusterNotAccepted))
		g.Expect(cond.Message).To(ContainSubstring("unaccepted labelled hostfleet.io/tenant but not accepted by the hub"))
		g.Expect(tn.Status.WorkloadClusters).To(Equal([]string{"newcomer"}), "newcomer stays the only workload cluster")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(bound(g)).NotTo(ContainElement(HaveField("Name", hostfleetv1alpha1.AgentHubGroup("unaccepted"))))
	g.Expect(bound(g)).NotTo(ContainElement(HaveField("Name", hostfleetv1alpha1.AgentTokenUser("unaccepted"))))
	tenancyOf := func(g Gomega, c string) *hostfleetv1alpha1.ClusterTenancy {
		ct := &hostfleetv1alpha1.ClusterTenancy{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: c, Name: hostfleetv1alpha1.TenancyName}, ct)).To(Succeed())
		return ct
	}
	g.Eventually(func(g Gomega) {
		g.Expect(tenancyOf(g, "unaccepted").Spec.WorkloadTenants).To(BeEmpty())
		g.Expect(tenancyOf(g, "newcomer").Spec.WorkloadTenants).To(ConsistOf(HaveField("OnlyWorkloadCluster", true)),
			"an unaccepted cluster changes no other cluster's role")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("accepted, it is a second workload cluster: the Tenant says claims that name none sync nowhere")
	g.Expect(planes.AcceptCluster(ctx, hub, "unaccepted")).To(Succeed())
	g.Eventually(func(g Gomega) {
		tn, cond := workload(g, "a")
		g.Expect(tn.Status.WorkloadClusters).To(Equal([]string{"newcomer", "unaccepted"}))
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonSeveralWorkloadClusters))
		g.Expect(cond.Message).To(ContainSubstring("annotate each claim with the cluster its Node runs in"))
		g.Expect(bound(g)).To(ContainElement(HaveField("Name", hostfleetv1alpha1.AgentHubGroup("unaccepted"))))
		events, err := planes.Events(ctx, hub, tn)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(events).To(ContainElement(ContainSubstring(hostfleetv1alpha1.ReasonSeveralWorkloadClusters)))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
