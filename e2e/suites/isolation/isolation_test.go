package isolation_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/addon"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestMain(m *testing.M) { planes.Main(m) }

// A request one identity must not be able to make, and what the refusal says:
// "rbac" for the API server's authorizer, else a fragment of the admission
// policy's message.
type refusal struct {
	who, what string
	do        func(context.Context) error
	says      string
}

// user is a client of the hub plane as name in groups.
func user(g Gomega, f *planes.Fleet, name string, groups ...string) client.Client {
	cfg, err := f.AddUser("hub", name, groups...)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: f.Scheme})
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}

func TestIsolation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// Fresh planes, not the package's shared ones: the API server's
	// admission caches policies and their parameters (the Tenants), and a
	// Tenant of the same name left by another test could still be what a
	// policy reads here.
	f := planes.ForTestWith(t, planes.Options{Dir: t.TempDir()}, "hub")
	hub := f.Plane("hub").Client
	f.HubForTest(t, "hub")

	t.Log("a hub with two tenants: a on set lab (c1, c2), b on set edge (c3)")
	set := func(s string) map[string]string { return map[string]string{clusterv1beta2.ClusterSetLabel: s} }
	admin := func(n string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: n}}
	}
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "edge"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: set("lab")}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c2", Labels: set("lab")}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c3", Labels: set("edge")}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c2"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c3"}},
		// Tenant a's admins include a ServiceAccount named like the token
		// agent of a cluster named after its namespace.
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
			MaxLeaseDuration: &metav1.Duration{Duration: 720 * time.Hour}, Erase: hostfleetv1alpha1.EraseMetadata,
			Admins: append(admin("alice"), rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "tenant-a", Name: "tenant-a-hostfleet-agent-agent"})}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "edge", Admins: admin("bob")}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		for _, name := range []string{"a", "b"} {
			tn := &hostfleetv1alpha1.Tenant{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Name: name}, tn)).To(Succeed())
			g.Expect(tn.Status.Conditions).To(ContainElement(HaveField("Reason", hostfleetv1alpha1.ReasonRegistered)))
		}
	}).WithTimeout(60 * time.Second).Should(Succeed())

	t.Log("each cluster's agent registers with the CSR driver; the hub binds what the permission callback accepts")
	kube, err := kubernetes.NewForConfig(f.Plane("hub").Config)
	g.Expect(err).NotTo(HaveOccurred())
	bind := func(cluster string, subject addonv1beta1.BaseSubject) error {
		mc := &clusterv1.ManagedCluster{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: cluster}, mc)).To(Succeed())
		mca := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: hostfleetv1alpha1.AddonName}}
		if err := hub.Create(ctx, mca); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		mca.Status.Registrations = []addonv1beta1.RegistrationConfig{{Type: addonv1beta1.KubeClient,
			KubeClient: &addonv1beta1.KubeClientConfig{Subject: addonv1beta1.KubeClientSubject{BaseSubject: subject}}}}
		return addon.Permissions(kube)(ctx, mc, mca)
	}
	csrIdentity := func(c string) addonv1beta1.BaseSubject {
		return addonv1beta1.BaseSubject{User: hostfleetv1alpha1.AgentHubUser(c), Groups: []string{hostfleetv1alpha1.AgentHubGroup(c), hostfleetv1alpha1.AgentSharedGroup}}
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		g.Expect(bind(c, csrIdentity(c))).To(Succeed())
	}
	g.Expect(bind("c2", addonv1beta1.BaseSubject{Groups: []string{"system:serviceaccounts"}})).To(MatchError(ContainSubstring("may be only")),
		"a registration naming every ServiceAccount is refused")
	g.Expect(bind("c2", addonv1beta1.BaseSubject{User: "mallory"})).To(MatchError(ContainSubstring("may be only")), "and a plain user")
	g.Expect(bind("c2", csrIdentity("c2"))).To(Succeed())

	as := func(name string, groups ...string) client.Client { return user(g, f, name, groups...) }
	agent := func(c string) client.Client {
		return as(hostfleetv1alpha1.AgentHubUser(c), hostfleetv1alpha1.AgentHubGroup(c), hostfleetv1alpha1.AgentSharedGroup, "system:authenticated")
	}
	alice, bob := as("alice", "system:authenticated"), as("bob", "system:authenticated")
	c1, c3 := agent("c1"), agent("c3")
	workload := as("system:serviceaccount:tenant-a:default", "system:serviceaccounts", "system:serviceaccounts:tenant-a", "system:authenticated")
	registration := as("system:open-cluster-management:c1:reg", "system:open-cluster-management:c1", "system:open-cluster-management:managed-clusters", "system:authenticated")
	lookAlike := as("system:serviceaccount:tenant-a:c1-hostfleet-agent-agent", "system:serviceaccounts", "system:serviceaccounts:tenant-a", "system:authenticated")
	namesake := as("system:serviceaccount:tenant-a:tenant-a-hostfleet-agent-agent", "system:serviceaccounts", "system:serviceaccounts:tenant-a", "system:authenticated")
	tokenAgentC1 := as(hostfleetv1alpha1.AgentTokenUser("c1"), "system:serviceaccounts", "system:serviceaccounts:c1", "system:authenticated")
	mallory := as("mallory", "system:authenticated")

	t.Log("positive controls: the legitimate path works, so the refusals below are not vacuous")
	claimOn := func(ns, name, cluster string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
		if cluster != "" {
			c.Labels[hostfleetv1alpha1.LabelCluster] = cluster
		}
		return c
	}
	secret := func(ns, name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: map[string]string{"userData": "#cloud-config"}}
	}
	g.Eventually(func() error { return alice.Create(ctx, secret("tenant-a", "ud")) }).WithTimeout(30 * time.Second).Should(Succeed())
	onC1, onC2 := claimOn("tenant-a", "on-c1", "c1"), claimOn("tenant-a", "on-c2", "c2")
	g.Expect(alice.Create(ctx, onC1)).To(Succeed())
	g.Expect(alice.Create(ctx, onC2)).To(Succeed())
	g.Eventually(func() error { return bob.Create(ctx, secret("tenant-b", "ud")) }).WithTimeout(30 * time.Second).Should(Succeed())
	onC3 := claimOn("tenant-b", "on-c3", "c3")
	g.Expect(bob.Create(ctx, onC3)).To(Succeed())
	g.Eventually(func() error {
		return c1.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "ud"}, &corev1.Secret{})
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(c3.Get(ctx, client.ObjectKey{Namespace: "tenant-b", Name: "ud"}, &corev1.Secret{})).To(Succeed())
	g.Expect(c1.Get(ctx, client.ObjectKeyFromObject(onC1), onC1)).To(Succeed())
	onC1.Status.PoweredOn = true
	g.Expect(c1.Status().Update(ctx, onC1)).To(Succeed(), "an agent writes the status of its own cluster's claim")
	g.Expect(c1.Create(ctx, &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"},
		Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "c1"}})).To(Succeed())
	g.Expect(c1.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: hostfleetv1alpha1.AddonName}})).To(Succeed())
	g.Expect(c3.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "c3", Name: hostfleetv1alpha1.AddonName}})).To(Succeed())
	g.Expect(alice.Get(ctx, client.ObjectKeyFromObject(onC2), &metal3api.HostClaim{})).To(Succeed())
	g.Eventually(func() error {
		return c1.Get(ctx, client.ObjectKey{Namespace: "c1", Name: hostfleetv1alpha1.TenancyName}, &hostfleetv1alpha1.ClusterTenancy{})
	}).WithTimeout(30*time.Second).Should(Succeed(), "an agent reads its cluster's ClusterTenancy")
	hwCopy := func(claim *metal3api.HostClaim, cluster string) *metal3api.HardwareData {
		return &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: claim.Name,
			Labels: map[string]string{hostfleetv1alpha1.LabelClaimUID: string(claim.UID), hostfleetv1alpha1.LabelCluster: cluster}},
			Spec: metal3api.HardwareDataSpec{HardwareDetails: &metal3api.HardwareDetails{RAMMebibytes: 1024}}}
	}
	g.Eventually(func() error { return c1.Create(ctx, hwCopy(onC1, "c1")) }).WithTimeout(30*time.Second).Should(Succeed(),
		"an agent makes its own cluster's HardwareData copies")
	c2 := agent("c2")
	g.Eventually(func() error {
		fresh := &metal3api.HostClaim{}
		if err := tokenAgentC1.Get(ctx, client.ObjectKeyFromObject(onC1), fresh); err != nil {
			return err
		}
		fresh.Labels[hostfleetv1alpha1.LabelBoundHost] = "h0"
		return tokenAgentC1.Update(ctx, fresh, client.DryRunAll)
	}).WithTimeout(30*time.Second).Should(Succeed(), "c1's token agent, which the hub bound for tenant a, records a binding: exempt from the tenant rules")
	g.Expect(hub.Patch(ctx, onC1, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"reboot.metal3.io":""}}}`)))).To(Succeed())
	g.Expect(c1.Get(ctx, client.ObjectKeyFromObject(onC1), onC1)).To(Succeed())
	binding := onC1.DeepCopy()
	binding.Annotations[hostfleetv1alpha1.AnnotationReservedHost] = "hosts/h0"
	binding.Annotations[hostfleetv1alpha1.AnnotationHostUID] = "0c6f2b1e-0000-4000-8000-000000000000"
	delete(binding.Annotations, "reboot.metal3.io")
	binding.Labels[hostfleetv1alpha1.LabelBoundHost] = "h0"
	binding.Labels["example.com/rack"] = "r1"
	binding.Finalizers = append(binding.Finalizers, hostfleetv1alpha1.AgentFinalizer)
	g.Expect(c1.Update(ctx, binding, client.DryRunAll)).To(Succeed(),
		"agent c1 writes its binding on its own cluster's claim: reservation, host UID, bound-host, a synced label, its finalizer, a reboot request carried out")
	g.Eventually(func() error { return namesake.Create(ctx, claimOn("tenant-a", "namesake", ""), client.DryRunAll) }).
		WithTimeout(30*time.Second).Should(Succeed(), "the namesake ServiceAccount is one of tenant a's admins")

	t.Log("positive controls, leases: alice leases a claim for two days and extends it within tenant a's 720h cap")
	in := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	leased := claimOn("tenant-a", "leased", "")
	leased.Annotations[hostfleetv1alpha1.AnnotationLeaseUntil] = in(48 * time.Hour)
	g.Expect(alice.Create(ctx, leased)).To(Succeed())
	extended := leased.DeepCopy()
	extended.Annotations[hostfleetv1alpha1.AnnotationLeaseUntil] = in(96 * time.Hour)
	g.Expect(alice.Update(ctx, extended, client.DryRunAll)).To(Succeed())
	t.Log("positive controls, service: alice asks more erase than tenant a's Metadata, tolerates a taint and approves a maintenance")
	asking := claimOn("tenant-a", "asking", "")
	asking.Annotations[hostfleetv1alpha1.AnnotationErase] = string(hostfleetv1alpha1.EraseFull)
	asking.Annotations[hostfleetv1alpha1.AnnotationTolerations] = "gpu, example.com/reserved"
	asking.Annotations[hostfleetv1alpha1.AnnotationMaintenanceApproved] = "true"
	g.Expect(alice.Create(ctx, asking, client.DryRunAll)).To(Succeed())

	get := func(c client.Client, ns, name string, obj client.Object) func(context.Context) error {
		return func(ctx context.Context) error { return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj) }
	}
	list := func(c client.Client, ns string, l client.ObjectList) func(context.Context) error {
		return func(ctx context.Context) error { return c.List(ctx, l, client.InNamespace(ns)) }
	}
	create := func(c client.Client, obj client.Object) func(context.Context) error {
		return func(ctx context.Context) error { return c.Create(ctx, obj, client.DryRunAll) }
	}
	mutate := func(c client.Client, obj client.Object, status bool, change func()) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			change()
			if status {
				return c.Status().Update(ctx, obj, client.DryRunAll)
			}
			return c.Update(ctx, obj, client.DryRunAll)
		}
	}
	del := func(c client.Client, obj client.Object) func(context.Context) error {
		return func(ctx context.Context) error { return c.Delete(ctx, obj, client.DryRunAll) }
	}
	with := func(c *metal3api.HostClaim, f func(*metal3api.HostClaim)) *metal3api.HostClaim { f(c); return c }
	typed := func(ns string, typ corev1.SecretType) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "typed", Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
			Type: typ, Data: map[string][]byte{corev1.TLSCertKey: []byte("x"), corev1.TLSPrivateKeyKey: []byte("x"), corev1.DockerConfigJsonKey: []byte("{}")}}
	}
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeAPIServerClientSignerName, Request: []byte("x"),
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}
	moved := claimOn("tenant-a", "on-c1", "")
	unplaced, repinned, rekinded := claimOn("tenant-a", "on-c1", ""), claimOn("tenant-a", "on-c1", ""), claimOn("tenant-a", "on-c1", "")
	const rbac = "rbac"
	lease := func(k, v string) *metal3api.HostClaim {
		return with(claimOn("tenant-a", "x", ""), func(c *metal3api.HostClaim) { c.Annotations[k] = v })
	}
	relet := func(name string, change func(ann map[string]string)) func(context.Context) error {
		c := claimOn("tenant-a", name, "")
		return mutate(alice, c, false, func() { change(c.Annotations) })
	}
	leasedByAgent, warnedByAgent := claimOn("tenant-a", "on-c1", ""), claimOn("tenant-a", "on-c1", "")
	// byAgent is agent c1 changing its own cluster's claim on-c1.
	byAgent := func(change func(*metal3api.HostClaim)) func(context.Context) error {
		c := claimOn("tenant-a", "on-c1", "")
		return mutate(c1, c, false, func() {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			change(c)
		})
	}
	approvedByAgent := claimOn("tenant-a", "on-c1", "")
	rack := metav1.LabelSelector{MatchLabels: map[string]string{"rack": "r1"}}
	hostMaintenance := func(sel metav1.LabelSelector, policy hostfleetv1alpha1.MaintenancePolicy, in time.Duration) *hostfleetv1alpha1.HostMaintenance {
		return &hostfleetv1alpha1.HostMaintenance{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "m"}, Spec: hostfleetv1alpha1.HostMaintenanceSpec{
			HostSelector: sel, Policy: policy, Deadline: metav1.NewTime(time.Now().Add(in)), Reason: "firmware"}}
	}

	refusals := []refusal{
		// Leases and host classes: only the hub ends, shortens or excludes.
		{"alice", "give an end that does not parse", create(alice, lease(hostfleetv1alpha1.AnnotationLeaseUntil, "tomorrow")), "an RFC 3339 time"},
		{"alice", "give an end in the past", create(alice, lease(hostfleetv1alpha1.AnnotationLeaseUntil, in(-time.Hour))), "is not in the future"},
		{"alice", "lease beyond the cap", create(alice, lease(hostfleetv1alpha1.AnnotationLeaseUntil, in(800*time.Hour))), "beyond the maxLeaseDuration of tenant a (720h0m0s"},
		{"alice", "lease for longer than the cap", create(alice, lease(hostfleetv1alpha1.AnnotationLeaseFor, "721h")), "longer than the maxLeaseDuration of tenant a"},
		{"alice", "lease for a length that does not parse", create(alice, lease(hostfleetv1alpha1.AnnotationLeaseFor, "a week")), "a positive Go duration"},
		{"alice", "give an end and a length", create(alice, with(lease(hostfleetv1alpha1.AnnotationLeaseFor, "2h"), func(c *metal3api.HostClaim) {
			c.Annotations[hostfleetv1alpha1.AnnotationLeaseUntil] = in(time.Hour)
		})), "not both"},
		{"alice", "mark her claim released", create(alice, lease(hostfleetv1alpha1.AnnotationReleasedBy, hostfleetv1alpha1.ReleasedByLease)), "only the hub sets it"},
		{"alice", "exclude host classes herself", create(alice, lease(hostfleetv1alpha1.AnnotationExcludedHosts, "[]")), "only the hub sets it"},
		{"alice", "pin her claim as though the scheduler placed it (past its host classes)", create(alice, with(claimOn("tenant-a", "x", "c1"), func(c *metal3api.HostClaim) {
			c.Annotations[hostfleetv1alpha1.AnnotationPlacedBy] = hostfleetv1alpha1.PlacedByScheduler
		})), "hostfleet.io/placed-by marks a placement the hub's scheduler made; only the hub sets it"},
		{"alice", "shorten her lease", relet("leased", func(a map[string]string) { a[hostfleetv1alpha1.AnnotationLeaseUntil] = in(time.Hour) }), "extended, never shortened"},
		{"alice", "remove her lease under a cap", relet("leased", func(a map[string]string) { delete(a, hostfleetv1alpha1.AnnotationLeaseUntil) }), "cannot be removed"},
		{"alice", "extend her lease past the cap", relet("leased", func(a map[string]string) { a[hostfleetv1alpha1.AnnotationLeaseUntil] = in(800 * time.Hour) }), "may end at"},
		{"alice", "give a running claim a length", relet("leased", func(a map[string]string) { a[hostfleetv1alpha1.AnnotationLeaseFor] = "2h" }), "read when the claim is created"},
		{"agent c1", "lease a claim of its cluster", mutate(c1, leasedByAgent, false, func() {
			leasedByAgent.Annotations = map[string]string{hostfleetv1alpha1.AnnotationLeaseUntil: in(time.Hour)}
		}), "it may not change hostfleet.io/lease-until: only the hub and the tenant decide them"},
		{"agent c1", "say a claim's lease ends", mutate(c1, warnedByAgent, true, func() {
			warnedByAgent.Status.Conditions = append(warnedByAgent.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionLeaseExpiring,
				Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonLeaseEnding, LastTransitionTime: metav1.Now()})
		}), "the hub's lease and maintenance controllers own them"},
		// Maintenance: the hub administrator opens and ends it; a tenant only approves.
		{"the hub administrator", "open a maintenance with a deadline in the past", create(hub, hostMaintenance(rack, hostfleetv1alpha1.MaintenanceEnforced, -time.Minute)),
			"is not in the future"},
		{"alice", "approve a maintenance with anything but true", create(alice, lease(hostfleetv1alpha1.AnnotationMaintenanceApproved, "yes")), "a tenant's only say in a maintenance"},
		{"alice", "lift a maintenance from her claim", create(alice, lease(hostfleetv1alpha1.AnnotationMaintenance, "none")), "a maintenance is ended by the hub administrator"},
		{"alice", "ask for an erase that is no mode", create(alice, lease(hostfleetv1alpha1.AnnotationErase, "wipe")), "None, Metadata or Full"},
		{"alice", "weaken tenant a's erase", create(alice, lease(hostfleetv1alpha1.AnnotationErase, "None")), "erases its hosts at release (Metadata at least): hostfleet.io/erase None would weaken that"},
		{"alice", "open a maintenance", create(alice, hostMaintenance(rack, hostfleetv1alpha1.MaintenanceEnforced, time.Hour)), rbac},
		{"agent c1", "approve a maintenance for a tenant", mutate(c1, approvedByAgent, false, func() {
			approvedByAgent.Annotations = map[string]string{hostfleetv1alpha1.AnnotationMaintenanceApproved: "true"}
		}), "it may not change hostfleet.io/maintenance-approved: only the hub and the tenant decide them"},
		{"agent c1", "open a maintenance on its cluster", create(c1, hostMaintenance(rack, hostfleetv1alpha1.MaintenanceEnforced, time.Hour)), rbac},
		{"agent c1", "read c2's maintenances", list(c1, "c2", &hostfleetv1alpha1.HostMaintenanceList{}), rbac},
		// A tenant admin, against the other tenant and outside its rights.
		{"alice", "read tenant b's claim", get(alice, "tenant-b", "on-c3", &metal3api.HostClaim{}), rbac},
		{"alice", "list tenant b's claims", list(alice, "tenant-b", &metal3api.HostClaimList{}), rbac},
		{"alice", "create a claim in tenant b", create(alice, claimOn("tenant-b", "x", "")), rbac},
		{"alice", "read tenant b's secret", get(alice, "tenant-b", "ud", &corev1.Secret{}), rbac},
		{"alice", "list tenant b's secrets", list(alice, "tenant-b", &corev1.SecretList{}), rbac},
		{"alice", "create a secret in tenant b", create(alice, secret("tenant-b", "x")), rbac},
		{"alice", "list secrets cluster-wide", list(alice, "", &corev1.SecretList{}), rbac},
		{"alice", "list claims cluster-wide", list(alice, "", &metal3api.HostClaimList{}), rbac},
		{"alice", "write her claim's status", mutate(alice, claimOn("tenant-a", "on-c1", ""), true, func() {}), rbac},
		{"alice", "forge bound-host", create(alice, with(claimOn("tenant-a", "x", ""), func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelBoundHost] = "h0" })), "hostfleet.io/bound-host is set by Hostfleet"},
		{"alice", "pin outside her set", create(alice, claimOn("tenant-a", "x", "c3")), "cluster c3 is not in the cluster set of tenant a"},
		{"alice", "reference another namespace's secret", create(alice, with(claimOn("tenant-a", "x", ""), func(c *metal3api.HostClaim) {
			c.Spec.UserData = &corev1.SecretReference{Name: "ud", Namespace: "tenant-b"}
		})), "secrets must be in the claim's namespace"},
		{"alice", "send a reboot value that is not JSON", create(alice, with(claimOn("tenant-a", "x", ""), func(c *metal3api.HostClaim) { c.Annotations["reboot.metal3.io"] = `{"mode":"hard",}` })), "reboot.metal3.io annotations take"},
		{"alice", "tolerate a taint that is no key", create(alice, with(claimOn("tenant-a", "x", ""), func(c *metal3api.HostClaim) {
			c.Annotations[hostfleetv1alpha1.AnnotationTolerations] = "gpu, any host"
		})), "hostfleet.io/tolerations is a comma-separated list"},
		{"alice", "send a 42 KB placement", create(alice, with(claimOn("tenant-a", "x", ""), func(c *metal3api.HostClaim) {
			c.Annotations[hostfleetv1alpha1.AnnotationPlacement] = strings.Repeat("p", 42*1024)
		})), "hostfleet.io/placement names an OCM Placement"},
		{"alice", "take her placed claim off its cluster", mutate(alice, unplaced, false, func() { delete(unplaced.Labels, hostfleetv1alpha1.LabelCluster) }),
			"only the hub moves a placed claim"},
		{"alice", "re-pin her placed claim", mutate(alice, repinned, false, func() { repinned.Labels[hostfleetv1alpha1.LabelCluster] = "c2" }),
			"only the hub moves a placed claim"},
		{"alice", "turn her placed claim remote", mutate(alice, rekinded, false, func() { rekinded.Labels[hostfleetv1alpha1.LabelKind] = hostfleetv1alpha1.KindRemote }),
			"hostfleet.io/kind cannot change once a claim is placed"},
		{"alice", "mint a service-account token", create(alice, typed("tenant-a", corev1.SecretTypeServiceAccountToken)), "must be of type Opaque"},
		{"alice", "plant a TLS secret", create(alice, typed("tenant-a", corev1.SecretTypeTLS)), "must be of type Opaque"},
		{"alice", "plant a registry credential", create(alice, typed("tenant-a", corev1.SecretTypeDockerConfigJson)), "must be of type Opaque"},
		{"alice", "create a ConfigMap", create(alice, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "x"}}), rbac},
		{"alice", "create a ServiceAccount", create(alice, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "x"}}), rbac},
		{"alice", "grant herself a role", create(alice, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "x"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}, Subjects: admin("alice")}), rbac},
		{"alice", "delete her namespace", del(alice, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}), rbac},
		{"alice", "edit her Tenant", mutate(alice, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, false, func() {}), rbac},
		{"alice", "read tenant b", get(alice, "", "b", &hostfleetv1alpha1.Tenant{}), rbac},
		{"alice", "create a HardwareData copy", create(alice, &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "on-c1"}}), rbac},
		{"alice", "write a HostInventory", create(alice, &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"}}), rbac},
		{"alice", "write a usage record", create(alice, &hostfleetv1alpha1.HostUsage{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"},
			Spec: hostfleetv1alpha1.HostUsageSpec{ClusterName: "c1"}}), rbac},
		{"alice", "read the usage records", list(alice, "c1", &hostfleetv1alpha1.HostUsageList{}), rbac},
		{"alice", "bind another cluster set", create(alice, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "edge"},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "edge"}}), rbac},
		{"alice", "read a cluster's namespace", list(alice, "c1", &corev1.SecretList{}), rbac},
		{"bob", "read tenant a's claim", get(bob, "tenant-a", "on-c1", &metal3api.HostClaim{}), rbac},
		{"bob", "read tenant a's secret", get(bob, "tenant-a", "ud", &corev1.Secret{}), rbac},
		{"bob", "delete tenant a's claim", del(bob, claimOn("tenant-a", "on-c1", "")), rbac},
		{"bob", "shorten tenant a's lease", mutate(bob, claimOn("tenant-a", "leased", ""), false, func() {}), rbac},
		{"bob", "pin to a cluster of tenant a's set", create(bob, claimOn("tenant-b", "x", "c1")), "cluster c1 is not in the cluster set of tenant b"},
		{"alice", "name a secret by a path", create(alice, with(claimOn("tenant-a", "x", ""), func(c *metal3api.HostClaim) {
			c.Labels[hostfleetv1alpha1.LabelKind] = hostfleetv1alpha1.KindRemote
			c.Spec.UserData = &corev1.SecretReference{Name: "../tenant-x/web-userdata"}
		})), "name a Secret of the claim's namespace"},
		// A tenant admin named like the token agent of a cluster named after its namespace is a tenant admin, nothing more.
		{"tenant a's admin ServiceAccount tenant-a-hostfleet-agent-agent", "forge bound-host", create(namesake, with(claimOn("tenant-a", "x", ""), func(c *metal3api.HostClaim) {
			c.Labels[hostfleetv1alpha1.LabelBoundHost] = "h0"
		})), "hostfleet.io/bound-host is set by Hostfleet"},
		{"tenant a's admin ServiceAccount tenant-a-hostfleet-agent-agent", "pin outside its set", create(namesake, claimOn("tenant-a", "x", "c3")), "cluster c3 is not in the cluster set of tenant a"},
		{"tenant a's admin ServiceAccount tenant-a-hostfleet-agent-agent", "reference tenant b's secret", create(namesake, with(claimOn("tenant-a", "x", ""), func(c *metal3api.HostClaim) {
			c.Spec.UserData = &corev1.SecretReference{Name: "ud", Namespace: "tenant-b"}
		})), "secrets must be in the claim's namespace"},
		{"tenant a's admin ServiceAccount tenant-a-hostfleet-agent-agent", "send a free-text reboot value", create(namesake, with(claimOn("tenant-a", "x", ""), func(c *metal3api.HostClaim) {
			c.Annotations["reboot.metal3.io"] = "now please"
		})), "reboot.metal3.io annotations take"},
		// A tenant's workload: a ServiceAccount in the tenant's namespace holds no tenant right.
		{"tenant a's workload", "read its tenant's claims", list(workload, "tenant-a", &metal3api.HostClaimList{}), rbac},
		{"tenant a's workload", "read its tenant's secrets", get(workload, "tenant-a", "ud", &corev1.Secret{}), rbac},
		{"tenant a's workload", "create a claim", create(workload, claimOn("tenant-a", "x", "")), rbac},
		{"tenant a's workload", "read HardwareData", list(workload, "tenant-a", &metal3api.HardwareDataList{}), rbac},
		{"a look-alike agent ServiceAccount in a tenant namespace", "read tenant a's secrets", get(lookAlike, "tenant-a", "ud", &corev1.Secret{}), rbac},
		{"a look-alike agent ServiceAccount in a tenant namespace", "write a claim's status", mutate(lookAlike, claimOn("tenant-a", "on-c1", ""), true, func() {}), rbac},
		// A cluster's add-on agent.
		{"agent c1", "read tenant b's secret (c1 is not in set edge)", get(c1, "tenant-b", "ud", &corev1.Secret{}), rbac},
		{"agent c1", "write a claim of tenant b", mutate(c1, claimOn("tenant-b", "on-c3", ""), true, func() {}), rbac},
		{"agent c1", "write the status of a claim placed on c2", mutate(c1, claimOn("tenant-a", "on-c2", ""), true, func() {}), "an agent may only change claims placed on its own cluster"},
		{"agent c1", "move its claim to c2", mutate(c1, moved, false, func() { moved.Labels[hostfleetv1alpha1.LabelCluster] = "c2" }), "an agent may not move a claim"},
		// What an agent writes on its own cluster's claim: its binding, nothing a tenant or the hub decides.
		{"agent c1", "tolerate a taint for its claim", byAgent(func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationTolerations] = "gpu" }),
			"it may not change hostfleet.io/tolerations"},
		{"agent c1", "write a tolerations value that is no list of keys", byAgent(func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationTolerations] = "any host!" }),
			"it may not change hostfleet.io/tolerations"},
		{"agent c1", "lift a maintenance on its claim", byAgent(func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationMaintenance] = "none" }),
			"it may not change hostfleet.io/maintenance"},
		{"agent c1", "ask its claim's host to reboot", byAgent(func(c *metal3api.HostClaim) { c.Annotations["reboot.metal3.io/agent"] = `{"mode":"hard"}` }),
			"it may not change reboot.metal3.io/agent"},
		{"agent c1", "send a reboot value the tenant could not", byAgent(func(c *metal3api.HostClaim) { c.Annotations["reboot.metal3.io"] = "now please" }),
			"it may not change reboot.metal3.io"},
		{"agent c1", "weaken its claim's erase", byAgent(func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationErase] = "None" }),
			"it may not change hostfleet.io/erase"},
		{"agent c1", "place its claim as the scheduler would", byAgent(func(c *metal3api.HostClaim) {
			c.Annotations[hostfleetv1alpha1.AnnotationPlacedBy] = hostfleetv1alpha1.PlacedByScheduler
		}), "it may not change hostfleet.io/placed-by"},
		{"agent c1", "set its claim's lease", byAgent(func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationLeaseFor] = "1h" }),
			"it may not change hostfleet.io/lease-for"},
		{"agent c1", "point its claim at another Placement", byAgent(func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationPlacement] = "elsewhere" }),
			"it may not change hostfleet.io/placement"},
		{"agent c1", "reserve a host by a path", byAgent(func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationReservedHost] = "../h0" }),
			"hostfleet.io/reserved-host names the host the claim is bound to"},
		{"agent c1", "re-kind its claim", byAgent(func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelKind] = hostfleetv1alpha1.KindRemote }),
			"it may not change hostfleet.io/kind"},
		{"agent c1", "name a bound host that is no name", byAgent(func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelBoundHost] = "Host_0" }),
			"hostfleet.io/bound-host names the bound host"},
		{"agent c1", "remove the forwarder's finalizer", byAgent(func(c *metal3api.HostClaim) { c.Finalizers = []string{"example.com/keep"} }),
			"an agent adds and removes its own finalizer"},
		{"agent c1", "write c2's HostInventory", create(c1, &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c2", Name: "c2"},
			Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "c2"}}), rbac},
		{"agent c1", "read c2's HostInventory", get(c1, "c2", "c2", &hostfleetv1alpha1.HostInventory{}), rbac},
		{"agent c1", "renew c3's health Lease", mutate(c1, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "c3", Name: hostfleetv1alpha1.AddonName}}, false, func() {}), rbac},
		{"agent c1", "write an inventory for c2 in its own namespace", create(c1, &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c2"},
			Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "c2"}}), "an agent may only write the HostInventory and HostUsage of its own cluster"},
		{"agent c1", "write a usage record for c2 in its own namespace", create(c1, &hostfleetv1alpha1.HostUsage{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c2"},
			Spec: hostfleetv1alpha1.HostUsageSpec{ClusterName: "c2"}}), "an agent may only write the HostInventory and HostUsage of its own cluster"},
		{"agent c1", "list tenant a's secrets", list(c1, "tenant-a", &corev1.SecretList{}), rbac},
		{"agent c1", "create a secret in tenant a", create(c1, secret("tenant-a", "x")), rbac},
		{"agent c1", "delete a claim", del(c1, claimOn("tenant-a", "on-c1", "")), rbac},
		{"agent c1", "create a claim", create(c1, claimOn("tenant-a", "x", "c1")), rbac},
		{"agent c1", "read secrets in its cluster's namespace", list(c1, "c1", &corev1.SecretList{}), rbac},
		{"agent c1", "create a CSR", create(c1, csr.DeepCopy()), rbac},
		{"agent c1", "grant itself cluster-admin", create(c1, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "x"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: admin("alice")}), rbac},
		{"agent c1", "edit a Tenant", mutate(c1, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, false, func() {}), rbac},
		{"agent c1", "read a Tenant (its admins, every cluster of its set)", get(c1, "", "a", &hostfleetv1alpha1.Tenant{}), rbac},
		{"agent c1", "read c2's ClusterTenancy", get(c1, "c2", hostfleetv1alpha1.TenancyName, &hostfleetv1alpha1.ClusterTenancy{}), rbac},
		{"agent c1", "rewrite its own ClusterTenancy", mutate(c1, &hostfleetv1alpha1.ClusterTenancy{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: hostfleetv1alpha1.TenancyName}}, false, func() {}), rbac},
		{"agent c1", "edit a ManagedCluster", mutate(c1, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, false, func() {}), rbac},
		{"agent c1", "list claims cluster-wide", list(c1, "", &metal3api.HostClaimList{}), rbac},
		{"agent c1", "read tenant b's claim", get(c1, "tenant-b", "on-c3", &metal3api.HostClaim{}), rbac},
		{"agent c1", "list tenant b's claims", list(c1, "tenant-b", &metal3api.HostClaimList{}), rbac},
		{"agent c2", "delete the HardwareData copy c1's agent made", del(c2, hwCopy(onC1, "c1")), "an agent may only write the HardwareData copies of its own cluster"},
		{"agent c2", "forge a copy in c1's name", create(c2, hwCopy(claimOn("tenant-a", "x", ""), "c1")), "an agent may only write the HardwareData copies of its own cluster"},
		{"agent c2", "make an unlabelled copy", create(c2, hwCopy(claimOn("tenant-a", "x", ""), "")), "this one is not labelled"},
		{"agent c2", "edit c1's copy", mutate(c2, hwCopy(onC1, "c1"), false, func() {}), rbac},
		{"agent c3", "read tenant a's claim", get(c3, "tenant-a", "on-c1", &metal3api.HostClaim{}), rbac},
		{"agent c3", "list tenant a's claims", list(c3, "tenant-a", &metal3api.HostClaimList{}), rbac},
		{"agent c3", "read tenant a's secret", get(c3, "tenant-a", "ud", &corev1.Secret{}), rbac},
		{"agent c3", "write tenant a's claim status", mutate(c3, claimOn("tenant-a", "on-c1", ""), true, func() {}), rbac},
		// A cluster's registration agent holds no agent right.
		{"c1's registration agent", "read tenant a's secret", get(registration, "tenant-a", "ud", &corev1.Secret{}), rbac},
		{"c1's registration agent", "list claims", list(registration, "", &metal3api.HostClaimList{}), rbac},
		{"c1's registration agent", "write a claim's status", mutate(registration, claimOn("tenant-a", "on-c1", ""), true, func() {}), rbac},
		{"c1's registration agent", "write its cluster's inventory", create(registration, &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"},
			Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "c1"}}), rbac},
		// An unbound user.
		{"mallory", "read a claim", get(mallory, "tenant-a", "on-c1", &metal3api.HostClaim{}), rbac},
		{"mallory", "list claims", list(mallory, "", &metal3api.HostClaimList{}), rbac},
		{"mallory", "read a secret", get(mallory, "tenant-a", "ud", &corev1.Secret{}), rbac},
		{"mallory", "list tenants", list(mallory, "", &hostfleetv1alpha1.TenantList{}), rbac},
		{"mallory", "register a tenant", create(mallory, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}}), rbac},
		{"mallory", "create a claim", create(mallory, claimOn("tenant-a", "x", "")), rbac},
		{"mallory", "read HardwareData", list(mallory, "tenant-a", &metal3api.HardwareDataList{}), rbac},
		{"mallory", "read inventories", list(mallory, "c1", &hostfleetv1alpha1.HostInventoryList{}), rbac},
	}
	g.Expect(len(refusals)).To(BeNumerically(">=", 60))
	for _, r := range refusals {
		err := r.do(ctx)
		g.Expect(err).To(HaveOccurred(), "%s must not %s", r.who, r.what)
		if r.says == rbac {
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: %s: want Forbidden, got %v", r.who, r.what, err)
			// Refused by the authorizer, not by a policy: the identity holds no such right at all.
			g.Expect(err.Error()).NotTo(ContainSubstring("ValidatingAdmissionPolicy"), "%s: %s", r.who, r.what)
			continue
		}
		// A policy refuses with its own reason: Forbidden, or Invalid for malformed input.
		g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%s: %s: got %v", r.who, r.what, err)
		g.Expect(err.Error()).To(ContainSubstring("ValidatingAdmissionPolicy"), "%s: %s", r.who, r.what)
		g.Expect(err.Error()).To(ContainSubstring(r.says), "%s: %s", r.who, r.what)
	}
	t.Log("a maintenance names hosts and a known policy: its CRD refuses the rest, the hub administrator included")
	for _, q := range []struct {
		m    *hostfleetv1alpha1.HostMaintenance
		says string
	}{
		{hostMaintenance(metav1.LabelSelector{}, hostfleetv1alpha1.MaintenanceEnforced, time.Hour), "hostSelector names no host"},
		{hostMaintenance(rack, "WhenConvenient", time.Hour), `supported values: "OwnerApproval", "Enforced"`},
	} {
		err := hub.Create(ctx, q.m, client.DryRunAll)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring(q.says))
	}
	t.Log("label sync cannot steer Nodes: a Tenant syncing node-role, node-restriction or node.kubernetes.io labels is refused, whoever registers it")
	for i, p := range []string{"node-role.kubernetes.io", "node-restriction.kubernetes.io", "node.kubernetes.io", "x.node-role.kubernetes.io"} {
		err := hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("steer-%d", i)},
			Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab", LabelSyncPrefixes: []string{p}}}, client.DryRunAll)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", p, err)
		g.Expect(err.Error()).To(ContainSubstring("steer Nodes"), p)
	}
	t.Log("a host class selects on labels the hub sees (the tenant's label sync prefixes), with a selector that compiles")
	for _, q := range []struct {
		sel  hostfleetv1alpha1.ClassSelector
		says string
	}{
		{hostfleetv1alpha1.ClassSelector{MatchLabels: map[string]string{"vendor.io/gpu": "yes"}}, "only label keys under the tenant's labelSyncPrefixes"},
		{hostfleetv1alpha1.ClassSelector{MatchExpressions: []hostfleetv1alpha1.ClassRequirement{{Key: "example.com/gpu", Operator: metav1.LabelSelectorOpIn}}}, "In and NotIn take values"},
		{hostfleetv1alpha1.ClassSelector{}, "selects something"},
	} {
		err := hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "classy"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
			LabelSyncPrefixes: []string{"example.com"}, Quotas: []hostfleetv1alpha1.ClassQuota{{Name: "gpu", MaxClaims: 2, HostSelector: q.sel}}}}, client.DryRunAll)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", q.says, err)
		g.Expect(err.Error()).To(ContainSubstring(q.says))
	}
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "classy"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
		LabelSyncPrefixes: []string{"example.com"}, Quotas: []hostfleetv1alpha1.ClassQuota{{Name: "gpu", MaxClaims: 2,
			HostSelector: hostfleetv1alpha1.ClassSelector{MatchLabels: map[string]string{"example.com/gpu": "yes"}}}}}}, client.DryRunAll)).To(Succeed(), "and a good one is taken")
	t.Logf("%d requests refused with the expected reason, beside the positive controls above", len(refusals)+7)
}
