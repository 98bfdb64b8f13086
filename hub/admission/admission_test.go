package admission_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/admission"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/tenant"
	"github.com/hostfleet/hostfleet/internal/setup"
)

func TestMain(m *testing.M) { planes.Main(m) }

// TestPolicies shows each admission rule refusing, on a real API server, as
// the user it is meant for.
func TestPolicies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	admin := f.Plane("hub").Client
	g.Expect(admission.Install(ctx, admin)).To(Succeed())
	g.Expect(admission.Install(ctx, admin)).To(Succeed(), "idempotent")

	f.ManagerForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&tenant.Reconciler{Client: mgr.GetClient(), Scheme: f.Scheme}).SetupWithManager(context.Background(), mgr, setup.Options{})
	})

	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "lab"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c2"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
			Admins: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}},
		// Agents' hub rights on inventories come from the add-on's permission
		// config; grant them here so that the policy is what refuses.
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "inventories"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"hostfleet.io"}, Resources: []string{"hostinventories", "hostinventories/status"}, Verbs: []string{"*"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "inventories"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "inventories"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:open-cluster-management:addon:hostfleet-agent"}}},
	} {
		g.Expect(admin.Create(ctx, o)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		ta := &hostfleetv1alpha1.Tenant{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ta.Status.Clusters).To(Equal([]string{"c1"}))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	user := func(name string, groups ...string) client.Client {
		cfg, err := f.AddUser("hub", name, groups...)
		g.Expect(err).NotTo(HaveOccurred())
		c, err := client.New(cfg, client.Options{Scheme: f.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		return c
	}
	alice := user("alice")
	agentOf := func(cluster string) client.Client {
		return user("system:open-cluster-management:cluster:"+cluster+":addon:hostfleet-agent:agent:hostfleet-agent",
			hostfleetv1alpha1.AgentHubGroup(cluster), "system:open-cluster-management:addon:hostfleet-agent")
	}
	c1 := agentOf("c1")
	claim := func(name string, mut func(*metal3api.HostClaim)) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
		if mut != nil {
			mut(c)
		}
		return c
	}
	refused := func(err error, msg string) {
		g.ExpectWithOffset(1, err).To(HaveOccurred(), "want refused: %s", msg)
		g.ExpectWithOffset(1, err.Error()).To(ContainSubstring(msg))
	}

	t.Log("tenants: a pin outside the set, a forged bound-host, secrets elsewhere, a bad reboot value")
	// Policies take a moment to apply: probe with dry runs, which are
	// admitted (or not) like real requests but store nothing.
	g.Eventually(func() error {
		return alice.Create(ctx, claim("pinned-out", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelCluster] = "c9" }), client.DryRunAll)
	}).WithTimeout(20 * time.Second).Should(MatchError(ContainSubstring(
		"cluster c9 is not in the cluster set of tenant a; pin one of its clusters, or leave hostfleet.io/cluster unset")))
	refused(alice.Create(ctx, claim("forged", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelBoundHost] = "h0" })),
		"hostfleet.io/bound-host is set by Hostfleet")
	refused(alice.Create(ctx, claim("forged-reservation", func(c *metal3api.HostClaim) {
		c.Annotations[hostfleetv1alpha1.AnnotationReservedHost] = "hosts/h0"
	})), "hostfleet.io/reserved-host is the host the agent binds the claim to")
	refused(alice.Create(ctx, claim("forged-host-uid", func(c *metal3api.HostClaim) {
		c.Annotations[hostfleetv1alpha1.AnnotationHostUID] = "0c6f2b1e-0000-4000-8000-000000000000"
	})), "hostfleet.io/host-uid is the UID of the host bound to the claim")
	refused(alice.Create(ctx, claim("forged-replacements", func(c *metal3api.HostClaim) {
		c.Annotations[hostfleetv1alpha1.AnnotationReplacements] = `{"count":0}`
	})), "hostfleet.io/replacements is the agent's record")
	refused(alice.Create(ctx, claim("healing-typo", func(c *metal3api.HostClaim) {
		c.Annotations[hostfleetv1alpha1.AnnotationHealing] = "replace"
	})), "hostfleet.io/healing is Notify or Replace")
	g.Expect(alice.Create(ctx, claim("healing", func(c *metal3api.HostClaim) {
		c.Annotations[hostfleetv1alpha1.AnnotationHealing] = "Replace, grace=10m,unfenced"
	}), client.DryRunAll)).To(Succeed())
	refused(alice.Create(ctx, claim("elsewhere", func(c *metal3api.HostClaim) {
		c.Spec.UserData = &corev1.SecretReference{Name: "x", Namespace: "tenant-b"}
	})), "secrets must be in the claim's namespace")
	refused(alice.Create(ctx, claim("huge-placement", func(c *metal3api.HostClaim) {
		c.Annotations[hostfleetv1alpha1.AnnotationPlacement] = strings.Repeat("p", 42*1024)
	})), "hostfleet.io/placement names an OCM Placement in the claim's namespace")
	refused(alice.Create(ctx, claim("bad-placement", func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationPlacement] = "Not A Name" })),
		"hostfleet.io/placement names an OCM Placement in the claim's namespace")
	refused(alice.Create(ctx, claim("reboot", func(c *metal3api.HostClaim) { c.Annotations["reboot.metal3.io/x"] = "now please" })),
		"reboot.metal3.io annotations take an empty value or a JSON object")
	t.Log("reboot annotations: exactly the JSON forms baremetal-operator reads, nothing that is not JSON")
	for i, tc := range []struct {
		value string
		admit bool
	}{
		{``, true},
		{`{}`, true},
		{` { } `, true},
		{`{"mode":"hard"}`, true},
		{`{"mode":"soft"}`, true},
		{`{"mode":""}`, true},
		{`{"force":true}`, true},
		{`{"force":false}`, true},
		{`{"mode":"hard","force":true}`, true},
		{`{"force":false, "mode":"soft"}`, true},
		{"{\n  \"mode\": \"hard\",\n  \"force\": true\n}", true},
		{`{"mode":"hard",}`, false},                   // trailing comma
		{`{"mode":"hard" "force":true}`, false},       // missing comma
		{`{"mode":"hard","mode":"soft"}`, false},      // duplicate key
		{`{"force":true,"force":false}`, false},       // duplicate key
		{`{"mode":"HARD"}`, false},                    // modes are lower case
		{`{"mode":"reset"}`, false},                   // not a mode
		{`{"force":"true"}`, false},                   // force is a boolean
		{`{"force":1}`, false},                        // force is a boolean
		{`{"mode":hard}`, false},                      // not JSON
		{`{'mode':'hard'}`, false},                    // not JSON
		{`{"other":1}`, false},                        // not a reboot argument
		{`{"mode":"hard","force":true,"x":1}`, false}, // not a reboot argument
		{`[]`, false},
		{`null`, false},
		{`"hard"`, false},
		{`hard`, false},
		{`{"mode":"hard"}}`, false},
		{`{{"mode":"hard"}`, false},
		{`now please`, false},
	} {
		c := claim(fmt.Sprintf("reboot-%d", i), func(c *metal3api.HostClaim) { c.Annotations["reboot.metal3.io/k"] = tc.value })
		err := alice.Create(ctx, c, client.DryRunAll)
		if !tc.admit {
			g.Expect(err).To(MatchError(ContainSubstring("reboot.metal3.io annotations take an empty value or a JSON object")), "%q must be refused", tc.value)
			continue
		}
		g.Expect(err).NotTo(HaveOccurred(), "%q must be admitted", tc.value)
		if tc.value != "" {
			// What is admitted, baremetal-operator reads (its webhook's own check).
			args := metal3api.RebootAnnotationArguments{}
			g.Expect(json.Unmarshal([]byte(tc.value), &args)).To(Succeed(), tc.value)
			g.Expect(args.Mode).To(BeElementOf(metal3api.RebootMode("hard"), metal3api.RebootMode("soft"), metal3api.RebootMode("")), tc.value)
		}
	}
	ok := claim("ok", func(c *metal3api.HostClaim) {
		c.Labels[hostfleetv1alpha1.LabelCluster] = "c1"
		c.Annotations["reboot.metal3.io"] = `{"mode":"hard","force":true}`
		c.Annotations["reboot.metal3.io/maint"] = ""
		c.Spec.UserData = &corev1.SecretReference{Name: "ud", Namespace: "tenant-a"}
	})
	g.Expect(alice.Create(ctx, ok)).To(Succeed(), "a claim within the rules")
	ok.Labels[hostfleetv1alpha1.LabelBoundHost] = "h9"
	refused(alice.Update(ctx, ok), "hostfleet.io/bound-host is set by Hostfleet")
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(ok), ok)).To(Succeed())
	ok.Annotations[hostfleetv1alpha1.AnnotationReservedHost] = "hosts/h9"
	refused(alice.Update(ctx, ok), "hostfleet.io/reserved-host is the host the agent binds the claim to")
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(ok), ok)).To(Succeed())
	ok.Annotations[hostfleetv1alpha1.AnnotationHostUID] = "0c6f2b1e-0000-4000-8000-000000000000"
	refused(alice.Update(ctx, ok), "hostfleet.io/host-uid is the UID of the host bound to the claim")
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(ok), ok)).To(Succeed())
	ok.Annotations[hostfleetv1alpha1.AnnotationPaused] = "metal3.io/capm3"
	g.Expect(alice.Update(ctx, ok)).To(Succeed(), "a tenant pauses its claim, as Cluster API does")
	delete(ok.Annotations, hostfleetv1alpha1.AnnotationPaused)
	g.Expect(alice.Update(ctx, ok)).To(Succeed(), "and unpauses it")

	t.Log("a placed claim keeps its cluster and kind, and its agent's finalizer, whatever its tenant does")
	edit := func(c client.Client, change func(*metal3api.HostClaim)) error {
		fresh := &metal3api.HostClaim{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(ok), fresh)).To(Succeed())
		change(fresh)
		return c.Update(ctx, fresh, client.DryRunAll)
	}
	refused(edit(alice, func(c *metal3api.HostClaim) { delete(c.Labels, hostfleetv1alpha1.LabelCluster) }),
		"the claim is placed on c1: only the hub moves a placed claim; to use another cluster, delete the claim and create it again")
	refused(edit(alice, func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelKind] = hostfleetv1alpha1.KindRemote }),
		"hostfleet.io/kind cannot change once a claim is placed")
	g.Expect(edit(alice, func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelKind] = hostfleetv1alpha1.KindBaremetal })).
		To(Succeed(), "spelling out the default kind changes nothing")
	withFinalizer := &metal3api.HostClaim{}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(ok), withFinalizer)).To(Succeed())
	withFinalizer.Finalizers = append(withFinalizer.Finalizers, hostfleetv1alpha1.AgentFinalizer, hostfleetv1alpha1.ForwarderFinalizer)
	g.Expect(admin.Update(ctx, withFinalizer)).To(Succeed(), "as the agent serving it (and the forwarder, were it remote) would")
	refused(edit(alice, func(c *metal3api.HostClaim) { c.Finalizers = nil }), "the hostfleet.io/agent finalizer is removed by the agent")
	refused(edit(alice, func(c *metal3api.HostClaim) { c.Finalizers = []string{hostfleetv1alpha1.AgentFinalizer} }),
		"the hostfleet.io/forwarder finalizer is removed by the hub once the claim's ManifestWork")

	t.Log("the hub itself, not a cluster administrator, may move a placed claim: the policies exempt the identity that installed them")
	hubUser := user("hostfleet-hub", "system:authenticated")
	g.Expect(admin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "hostfleet-hub"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "hostfleet-hub"}}})).To(Succeed())
	refused(edit(hubUser, func(c *metal3api.HostClaim) { delete(c.Labels, hostfleetv1alpha1.LabelCluster) }), "only the hub moves a placed claim")
	g.Expect(admission.Install(ctx, hubUser)).To(Succeed())
	g.Eventually(func() error {
		return edit(hubUser, func(c *metal3api.HostClaim) { delete(c.Labels, hostfleetv1alpha1.LabelCluster) })
	}).WithTimeout(20 * time.Second).Should(Succeed())
	refused(edit(alice, func(c *metal3api.HostClaim) { delete(c.Labels, hostfleetv1alpha1.LabelCluster) }), "only the hub moves a placed claim")

	t.Log("only the agents' exact ServiceAccounts are exempt: <cluster>/<cluster>-hostfleet-agent-agent, not a look-alike in another namespace")
	lookAlike := user("system:serviceaccount:c2:c1-hostfleet-agent-agent", "system:serviceaccounts", "system:serviceaccounts:c2")
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "look-alike"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hostfleetv1alpha1.TenantAdminClusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccount:c2:c1-hostfleet-agent-agent"}}})).To(Succeed())
	g.Eventually(func() error {
		return lookAlike.Create(ctx, claim("look-alike", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelBoundHost] = "h0" }), client.DryRunAll)
	}).WithTimeout(20 * time.Second).Should(MatchError(ContainSubstring("hostfleet.io/bound-host is set by Hostfleet")))

	t.Log("nor a ServiceAccount named like the token agent of a cluster named after its namespace, even listed among a tenant's admins")
	const namesake = "system:serviceaccount:tenant-a:tenant-a-hostfleet-agent-agent"
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "namesake"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hostfleetv1alpha1.TenantAdminClusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: namesake}}})).To(Succeed())
	namesakeAgent := user(namesake, "system:serviceaccounts", "system:serviceaccounts:tenant-a")
	g.Eventually(func() error {
		return namesakeAgent.Create(ctx, claim("namesake", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelBoundHost] = "h0" }), client.DryRunAll)
	}).WithTimeout(20 * time.Second).Should(MatchError(ContainSubstring("hostfleet.io/bound-host is set by Hostfleet")))
	refused(namesakeAgent.Create(ctx, claim("namesake", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelCluster] = "c9" }), client.DryRunAll),
		"cluster c9 is not in the cluster set of tenant a")
	refused(namesakeAgent.Create(ctx, claim("namesake", func(c *metal3api.HostClaim) {
		c.Spec.UserData = &corev1.SecretReference{Name: "ud", Namespace: "tenant-b"}
	}), client.DryRunAll), "secrets must be in the claim's namespace")
	refused(namesakeAgent.Create(ctx, claim("namesake", func(c *metal3api.HostClaim) { c.Annotations["reboot.metal3.io"] = "now" }), client.DryRunAll),
		"reboot.metal3.io annotations take")
	t.Log("while the token agent of a cluster of the tenant's set is exempt (positive control)")
	tokenAgent := user(hostfleetv1alpha1.AgentTokenUser("c1"), "system:serviceaccounts", "system:serviceaccounts:c1")
	onC1 := claim("on-c1", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelCluster] = "c1" })
	g.Expect(admin.Create(ctx, onC1)).To(Succeed())
	// recordsBinding: agent labels onC1 with its bound host (dry run).
	recordsBinding := func(agent client.Client) func() error {
		return func() error {
			fresh := &metal3api.HostClaim{}
			if err := agent.Get(ctx, client.ObjectKeyFromObject(onC1), fresh); err != nil {
				return err
			}
			fresh.Labels[hostfleetv1alpha1.LabelBoundHost] = "h0"
			return agent.Update(ctx, fresh, client.DryRunAll)
		}
	}
	g.Eventually(recordsBinding(tokenAgent)).WithTimeout(20*time.Second).Should(Succeed(), "the agent of c1 records its binding")

	t.Log("an agent's CSR group is exempt only for a cluster of the tenant's set")
	outsider := agentOf("c7")
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "outsider"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hostfleetv1alpha1.TenantAdminClusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: hostfleetv1alpha1.AgentHubGroup("c7")}}})).To(Succeed())
	g.Eventually(func() error {
		return outsider.Create(ctx, claim("outsider", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelBoundHost] = "h0" }), client.DryRunAll)
	}).WithTimeout(20 * time.Second).Should(MatchError(ContainSubstring("hostfleet.io/bound-host is set by Hostfleet")))
	g.Eventually(recordsBinding(c1)).WithTimeout(20*time.Second).Should(Succeed(), "the CSR agent of c1 records its binding")
	g.Eventually(func() error {
		fresh := &metal3api.HostClaim{}
		if err := c1.Get(ctx, client.ObjectKeyFromObject(onC1), fresh); err != nil {
			return err
		}
		fresh.SetAnnotations(map[string]string{hostfleetv1alpha1.AnnotationReplacements: `{"count":1}`})
		return c1.Update(ctx, fresh, client.DryRunAll)
	}).WithTimeout(20*time.Second).Should(Succeed(), "the agent of c1 records a replacement of its host")

	t.Log("a claim's secrets are named by object name only: no path, no upper case, at most 253 characters")
	for _, name := range []string{"../tenant-x/web-userdata", "UD", strings.Repeat("u", 254)} {
		refused(alice.Create(ctx, claim("bad-secret-name", func(c *metal3api.HostClaim) { c.Spec.MetaData = &corev1.SecretReference{Name: name} }), client.DryRunAll),
			"userData, networkData and metaData name a Secret of the claim's namespace")
	}
	g.Expect(alice.Create(ctx, claim("good-secret-name", func(c *metal3api.HostClaim) { c.Spec.MetaData = &corev1.SecretReference{Name: "web.meta-data"} }),
		client.DryRunAll)).To(Succeed())

	t.Log("tenants keep only Opaque secrets: no service-account tokens, no other typed secrets")
	g.Expect(alice.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "ud"},
		StringData: map[string]string{"userData": "#cloud-config"}})).To(Succeed(), "user data")
	for _, typ := range []corev1.SecretType{corev1.SecretTypeServiceAccountToken, corev1.SecretTypeTLS, corev1.SecretTypeDockerConfigJson, "example.com/custom"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "typed",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}}, Type: typ,
			Data: map[string][]byte{corev1.TLSCertKey: []byte("x"), corev1.TLSPrivateKeyKey: []byte("x"), corev1.DockerConfigJsonKey: []byte("{}")}}
		refused(alice.Create(ctx, s, client.DryRunAll), "must be of type Opaque")
	}

	t.Log("agents: only their cluster's claims, never moved; only their own inventory")
	g.Expect(c1.Get(ctx, client.ObjectKeyFromObject(ok), ok)).To(Succeed())
	ok.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h0"}
	g.Expect(c1.Status().Update(ctx, ok)).To(Succeed(), "its own cluster's claim")
	other := claim("on-c2", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelCluster] = "c2" })
	g.Expect(admin.Create(ctx, other)).To(Succeed(), "cluster administrators are not bound by the tenant rules")
	g.Eventually(func() error {
		if err := c1.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil {
			return err
		}
		other.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h1"}
		return c1.Status().Update(ctx, other)
	}).WithTimeout(20 * time.Second).Should(MatchError(ContainSubstring("an agent may only change claims placed on its own cluster; this claim is placed on c2 (")))
	g.Expect(c1.Get(ctx, client.ObjectKeyFromObject(ok), ok)).To(Succeed())
	ok.Labels[hostfleetv1alpha1.LabelCluster] = "c2"
	refused(c1.Update(ctx, ok), "an agent may not move a claim to another cluster")
	t.Log("agents write only the status fields they own: not the scheduler's, the forwarder's or the workload agent's conditions")
	forge := func(condition string) error {
		g.Expect(c1.Get(ctx, client.ObjectKeyFromObject(ok), ok)).To(Succeed())
		meta.SetStatusCondition(&ok.Status.Conditions, metav1.Condition{Type: condition, Status: metav1.ConditionTrue, Reason: "Forged"})
		return c1.Status().Update(ctx, ok)
	}
	for _, t := range []string{hostfleetv1alpha1.ConditionScheduled, hostfleetv1alpha1.ConditionForwarded} {
		refused(forge(t), "an agent may not change the Scheduled, Forwarded, NodeLabelsSynced or NodeReady condition of a claim placed on its cluster")
	}
	for _, t := range []string{hostfleetv1alpha1.ConditionNodeLabelsSynced, hostfleetv1alpha1.ConditionNodeReady} {
		refused(forge(t), "only the agents of the workload clusters of tenant a (ManagedClusters labelled hostfleet.io/tenant=a) may report NodeLabelsSynced and NodeReady on its claims; c1 is not one")
	}
	t.Log("the agent of a cluster that is also the tenant's workload cluster reports NodeLabelsSynced on the claims placed on it")
	mc := &clusterv1.ManagedCluster{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: "c1"}, mc)).To(Succeed())
	mc.Labels[hostfleetv1alpha1.LabelTenant] = "a"
	mc.Spec.HubAcceptsClient = true
	g.Expect(admin.Update(ctx, mc)).To(Succeed())
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionJoined, Status: metav1.ConditionTrue, Reason: "Joined"})
	g.Expect(admin.Status().Update(ctx, mc)).To(Succeed())
	g.Eventually(func() error { return forge(hostfleetv1alpha1.ConditionNodeLabelsSynced) }).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: "c1"}, mc)).To(Succeed())
	delete(mc.Labels, hostfleetv1alpha1.LabelTenant)
	g.Expect(admin.Update(ctx, mc)).To(Succeed())
	g.Expect(c1.Get(ctx, client.ObjectKeyFromObject(ok), ok)).To(Succeed())
	meta.SetStatusCondition(&ok.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionAssociated, Status: metav1.ConditionTrue, Reason: "BareMetalHostAssociated"})
	g.Expect(c1.Status().Update(ctx, ok)).To(Succeed(), "its own: Associated")

	own := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"}, Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "c1"}}
	g.Eventually(func() error { return c1.Create(ctx, own) }).WithTimeout(20 * time.Second).Should(Succeed())
	foreign := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c2", Name: "c2"}, Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "c2"}}
	refused(c1.Create(ctx, foreign), "an agent may only write the HostInventory and HostUsage of its own cluster (c1/c1)")

	t.Log("a Tenant with claims cannot be deleted")
	g.Eventually(func(g Gomega) {
		ta := &hostfleetv1alpha1.Tenant{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ta.Status.Claims).To(Equal(int32(3)))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Eventually(func() error {
		return admin.Delete(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	}).WithTimeout(20 * time.Second).Should(MatchError(ContainSubstring("tenant a still has 3 claims in tenant-a; delete them first")))
	ta := &hostfleetv1alpha1.Tenant{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
	g.Expect(ta.DeletionTimestamp).To(BeNil())

	t.Log("HardwareData copies are immutable, for everyone")
	hw := &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "ok", Labels: map[string]string{"hostfleet.io/claim-uid": "u"}},
		Spec: metal3api.HardwareDataSpec{HardwareDetails: &metal3api.HardwareDetails{RAMMebibytes: 1024}}}
	g.Expect(admin.Create(ctx, hw)).To(Succeed())
	g.Eventually(func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(hw), hw); err != nil {
			return err
		}
		hw.Spec.HardwareDetails.RAMMebibytes = 2048
		return admin.Update(ctx, hw, client.DryRunAll)
	}).WithTimeout(20 * time.Second).Should(MatchError(ContainSubstring("HardwareData copies are immutable")))
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(hw), hw)).To(Succeed())
	hw.Labels["other"] = "metadata-may-change"
	g.Expect(admin.Update(ctx, hw)).To(Succeed())
}

// TestTenantWithoutClaimsCanBeDeleted: the deletion rule does not stand in
// the way of an empty Tenant.
func TestTenantWithoutClaimsCanBeDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	admin := f.Plane("hub").Client
	g.Expect(admission.Install(ctx, admin)).To(Succeed())
	empty := &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "empty"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}}
	g.Expect(admin.Create(ctx, empty)).To(Succeed())
	g.Expect(admin.Delete(ctx, empty)).To(Succeed())
}
