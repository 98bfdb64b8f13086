package nodelabels_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/agents"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/addon"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestMain(m *testing.M) { planes.Main(m) }

const (
	tenantNS = "tenant-a"
	hostsNS  = "hosts"
	rack     = "rack.example.com/rack"
	zone     = "zone.example.com/zone"
)

// scene is a hub, an infrastructure cluster (infra-1, baremetal-operator in
// test mode) and tenant a's workload cluster (wl), each its own API server;
// both agents run in this process, the workload one as its own hub
// identity, so that the hub's RBAC and admission policies are what it meets.
type scene struct {
	f                  *planes.Fleet
	hub, infra, wl     client.Client
	agentCfg           *rest.Config // wl's agent on the hub
	agentOfInfra       *rest.Config // infra-1's agent on the hub
	registrationOfWL   *rest.Config // wl's OCM registration agent on the hub
	hosts              []string
	claims             []*metal3api.HostClaim
	interval           time.Duration
	startWorkloadAgent func()
}

func (s *scene) as(g Gomega, user string, groups ...string) *rest.Config {
	cfg, err := s.f.AddUser("hub", user, append(groups, "system:authenticated")...)
	g.Expect(err).NotTo(HaveOccurred())
	return cfg
}

func newScene(t *testing.T, g *WithT) *scene {
	ctx := context.Background()
	s := &scene{f: planes.ForTest(t, "hub", "infra-1", "wl"), interval: 2 * time.Second}
	s.hub, s.infra, s.wl = s.f.Plane("hub").Client, s.f.Plane("infra-1").Client, s.f.Plane("wl").Client
	s.f.HubForTest(t, "hub")
	s.f.StartBMOForTest(t, "infra-1")

	t.Log("tenant a on cluster set lab (infra-1), syncing rack.example.com and zone.example.com; wl is its workload cluster")
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "infra-1", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "lab"}}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "wl", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wl"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
			LabelSyncPrefixes: []string{"rack.example.com", "zone.example.com"}}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "other",
			LabelSyncPrefixes: []string{"rack.example.com"}}},
	} {
		g.Expect(s.hub.Create(ctx, o)).To(Succeed())
	}
	g.Expect(planes.AcceptCluster(ctx, s.hub, "wl")).To(Succeed(), "only an accepted cluster is a workload cluster")
	g.Eventually(func(g Gomega) {
		tn := &hostfleetv1alpha1.Tenant{}
		g.Expect(s.hub.Get(ctx, client.ObjectKey{Name: "a"}, tn)).To(Succeed())
		g.Expect(tn.Status.WorkloadClusters).To(Equal([]string{"wl"}))
		g.Expect(tn.Status.Clusters).To(Equal([]string{"infra-1"}))
		ct := &hostfleetv1alpha1.ClusterTenancy{}
		g.Expect(s.hub.Get(ctx, client.ObjectKey{Namespace: "wl", Name: hostfleetv1alpha1.TenancyName}, ct)).To(Succeed())
		g.Expect(ct.Spec.WorkloadTenants).To(ConsistOf(HaveField("Name", "a")), "the hub tells wl's agent whose workload cluster it is")
		rb := &metav1.PartialObjectMetadata{}
		rb.SetGroupVersionKind(rbacGVK)
		g.Expect(s.hub.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: hostfleetv1alpha1.AgentWorkloadRole}, rb)).To(Succeed())
	}).WithTimeout(60 * time.Second).Should(Succeed())

	t.Log("wl's and infra-1's agents registered (CSR driver); the hub bound their identities")
	kube, err := kubernetes.NewForConfig(s.f.Plane("hub").Config)
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range []string{"wl", "infra-1"} {
		mc := &clusterv1.ManagedCluster{}
		g.Expect(s.hub.Get(ctx, client.ObjectKey{Name: c}, mc)).To(Succeed())
		mca := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: c, Name: hostfleetv1alpha1.AddonName}}
		g.Expect(s.hub.Create(ctx, mca)).To(Succeed())
		mca.Status.Registrations = []addonv1beta1.RegistrationConfig{{Type: addonv1beta1.KubeClient,
			KubeClient: &addonv1beta1.KubeClientConfig{Subject: addonv1beta1.KubeClientSubject{BaseSubject: addonv1beta1.BaseSubject{
				User: hostfleetv1alpha1.AgentHubUser(c), Groups: []string{hostfleetv1alpha1.AgentHubGroup(c), hostfleetv1alpha1.AgentSharedGroup}}}}}}
		g.Expect(addon.Permissions(kube)(ctx, mc, mca)).To(Succeed())
	}
	agent := func(c string) *rest.Config {
		return s.as(g, hostfleetv1alpha1.AgentHubUser(c), hostfleetv1alpha1.AgentHubGroup(c), hostfleetv1alpha1.AgentSharedGroup)
	}
	s.agentCfg, s.agentOfInfra = agent("wl"), agent("infra-1")
	s.registrationOfWL = s.as(g, "system:open-cluster-management:wl:agent1", "system:open-cluster-management:wl", "system:open-cluster-management:managed-clusters")

	t.Log("three hosts on infra-1, labelled under the tenant's prefixes and outside them")
	mustCreate(g, s.infra,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostsNS}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: "bmc"}, StringData: map[string]string{"username": "u", "password": "p"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: "tenants"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^tenant-"}}})
	for i := range 3 {
		name := fmt.Sprintf("h%d", i)
		s.hosts = append(s.hosts, name)
		mustCreate(g, s.infra, &metal3api.BareMetalHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: name, Labels: map[string]string{
				"host": name, rack: fmt.Sprintf("r%d", i), zone: "z0", "other.example.com/x": "1"}},
			Spec: metal3api.BareMetalHostSpec{Online: true,
				BMC:            metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", 6230+i), CredentialsName: "bmc"},
				BootMACAddress: fmt.Sprintf("00:11:22:33:44:%02x", i)},
		})
	}
	for _, h := range s.hosts {
		g.Eventually(func(g Gomega) {
			bmh := &metal3api.BareMetalHost{}
			g.Expect(s.infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: h}, bmh)).To(Succeed())
			g.Expect(bmh.Status.Provisioning.State).To(Equal(metal3api.StateAvailable))
		}).WithTimeout(90 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	}
	startAgent(t, g, s.f.Plane("hub").Config, s.f.Plane("infra-1").Config, "infra-1", nil)
	s.startWorkloadAgent = func() {
		served, err := app.ServedNamespaces(ctx, mustClient(g, s.agentCfg), "wl", hostfleetv1alpha1.RoleWorkload)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(served).To(Equal([]string{tenantNS, "wl"}), "the workload agent watches its tenant's namespaces only")
		startAgent(t, g, s.agentCfg, s.f.Plane("wl").Config, "wl", func(o *app.Options) {
			o.Role, o.LabelSyncInterval, o.ServedNamespaces = hostfleetv1alpha1.RoleWorkload, s.interval, served
		})
	}
	return s
}

var rbacGVK = rbacv1.SchemeGroupVersion.WithKind("RoleBinding")

// grantClusterUpdate gives a cluster's registration agent what OCM gives
// it on the hub: update its own ManagedCluster.
func grantClusterUpdate(g Gomega, hub client.Client, cluster, group string) {
	name := "open-cluster-management:managedcluster:" + cluster
	mustCreate(g, hub,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{clusterv1.GroupName},
			Resources: []string{"managedclusters"}, ResourceNames: []string{cluster}, Verbs: []string{"get", "list", "update", "watch"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}}})
}

func mustCreate(g Gomega, c client.Client, objs ...client.Object) {
	for _, o := range objs {
		g.ExpectWithOffset(1, c.Create(context.Background(), o)).To(Succeed(), "create %T %s", o, o.GetName())
	}
}

func mustClient(g Gomega, cfg *rest.Config) client.Client {
	c, err := client.New(cfg, client.Options{Scheme: planes.Scheme()})
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}

// startAgent runs an agent in this process until the test ends.
func startAgent(t *testing.T, _ *WithT, hubCfg, managedCfg *rest.Config, cluster string, opt func(*app.Options)) {
	if opt == nil {
		opt = func(*app.Options) {}
	}
	agents.ForTest(t, hubCfg, managedCfg, cluster, opt)
}

func synced(g Gomega, hub client.Client, name string) *metav1.Condition {
	c := &metal3api.HostClaim{}
	g.Expect(hub.Get(context.Background(), client.ObjectKey{Namespace: tenantNS, Name: name}, c)).To(Succeed())
	cond := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionNodeLabelsSynced)
	g.Expect(cond).NotTo(BeNil(), "claim %s has %s", name, hostfleetv1alpha1.ConditionNodeLabelsSynced)
	return cond
}

func nodeLabels(g Gomega, wl client.Client, name string) map[string]string {
	n := &corev1.Node{}
	g.Expect(wl.Get(context.Background(), client.ObjectKey{Name: name}, n)).To(Succeed())
	return n.Labels
}

func setHostLabel(g Gomega, infra client.Client, host, key, value string) {
	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(context.Background(), client.ObjectKey{Namespace: hostsNS, Name: host}, h)).To(Succeed())
	orig := h.DeepCopy()
	if value == "" {
		delete(h.Labels, key)
	} else {
		h.Labels[key] = value
	}
	g.Expect(infra.Patch(context.Background(), h, client.MergeFrom(orig))).To(Succeed())
}

func setNodeLabel(g Gomega, wl client.Client, node, key, value string) {
	var v any = value
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
	g.Expect(err).NotTo(HaveOccurred())
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	g.Expect(wl.Patch(context.Background(), n, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl-label"))).To(Succeed())
}

// TestLabelsReachTheNode: prefixed host labels reach the Node running on
// each claimed host — found by annotation, providerID and HardwareData —
// as they are added, changed and removed on the host; Node edits are
// undone at the next resync, foreign labels are never touched, a late Node
// is labelled on arrival, ambiguity is reported, a prefix removed stops
// syncing; and the workload agent cannot read another tenant's claims or
// write more than NodeLabelsSynced.
func TestLabelsReachTheNode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g)
	hub, infra, wl := s.hub, s.infra, s.wl

	t.Log("nodes n0 (named by claim c0's annotation) and n1 (providerID naming c1, registered with the labels-pending gate); c2's Node comes later")
	mustCreate(g, wl,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0", Labels: map[string]string{"kubernetes.io/hostname": "n0", "team": "web"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{hostfleetv1alpha1.LabelLabelsPending: "true"}},
			Spec: corev1.NodeSpec{ProviderID: "metal3://" + tenantNS + "/c1/m3m-1"}})
	for i, h := range s.hosts {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: fmt.Sprintf("c%d", i),
			Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, Annotations: planes.PlacedBy()},
			Spec: metal3api.HostClaimSpec{HostSelector: metal3api.HostSelector{MatchLabels: map[string]string{"host": h}}}}
		if i == 0 {
			c.Annotations[hostfleetv1alpha1.AnnotationNode] = "n0"
		}
		mustCreate(g, hub, c)
		s.claims = append(s.claims, c)
	}
	s.startWorkloadAgent()

	g.Eventually(func(g Gomega) {
		g.Expect(synced(g, hub, "c0")).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Message", ContainSubstring("annotation"))))
		g.Expect(synced(g, hub, "c1")).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Message", ContainSubstring("providerID"))))
		g.Expect(nodeLabels(g, wl, "n0")).To(Equal(map[string]string{"kubernetes.io/hostname": "n0", "team": "web", rack: "r0", zone: "z0"}))
		g.Expect(nodeLabels(g, wl, "n1")).To(Equal(map[string]string{rack: "r1", zone: "z0"}), "the labels-pending gate is gone with the labels there")
	}).WithTimeout(60 * time.Second).Should(Succeed())

	t.Log("each claim's Node's readiness is on the claim: n0 Ready, then not (its kubelet stopped reporting)")
	setReady := func(status corev1.ConditionStatus, reason string) {
		n := &corev1.Node{}
		g.Expect(wl.Get(ctx, client.ObjectKey{Name: "n0"}, n)).To(Succeed())
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: reason}}
		g.Expect(wl.Status().Update(ctx, n)).To(Succeed())
	}
	nodeReady := func(g Gomega, name string) *metav1.Condition {
		c := &metal3api.HostClaim{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: name}, c)).To(Succeed())
		return meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionNodeReady)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(nodeReady(g, "c1")).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", hostfleetv1alpha1.ReasonNodeNotReady),
			HaveField("Message", "Node n1 on cluster wl is not Ready (Ready Unknown, NoReadyCondition)")), "no Ready condition yet")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	setReady(corev1.ConditionTrue, "KubeletReady")
	g.Eventually(func(g Gomega) {
		g.Expect(nodeReady(g, "c0")).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Message", "Node n0 on cluster wl is Ready")))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	setReady(corev1.ConditionUnknown, "NodeStatusUnknown")
	g.Eventually(func(g Gomega) {
		g.Expect(nodeReady(g, "c0")).To(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", "Node n0 on cluster wl is not Ready (Ready Unknown, NodeStatusUnknown)")))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(planes.Events(ctx, hub, s.claims[0])).To(ContainElement(HavePrefix("Warning/NodeNotReady: Node n0")))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	t.Log("c2's Node is not there: reported, with what was looked for")
	g.Eventually(func(g Gomega) {
		cond := synced(g, hub, "c2")
		g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonNodeNotFound))
		g.Expect(cond.Message).To(And(ContainSubstring("192.168.100.1"), ContainSubstring("metal3://"+tenantNS+"/c2"), ContainSubstring(hostfleetv1alpha1.AnnotationNode)))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("kubelet registers c2's Node (an address of c2's HardwareData copy; dual-stack: two InternalIP addresses): labelled within seconds")
	registered := time.Now()
	mustCreate(g, wl, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"kubernetes.io/hostname": "n2"}}})
	n2 := &corev1.Node{}
	g.Expect(wl.Get(ctx, client.ObjectKey{Name: "n2"}, n2)).To(Succeed())
	n2.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.100.1"}, {Type: corev1.NodeInternalIP, Address: "fd00::1"},
		{Type: corev1.NodeHostName, Address: "n2"}}
	g.Expect(wl.Status().Update(ctx, n2)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(nodeLabels(g, wl, "n2")).To(HaveKeyWithValue(rack, "r2"))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("late Node labelled %s after it registered", time.Since(registered).Round(10*time.Millisecond))
	g.Eventually(func(g Gomega) {
		g.Expect(synced(g, hub, "c2")).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Message", ContainSubstring("HardwareData"))))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	t.Log("on the host: rack changed, zone removed, a new row label added")
	setHostLabel(g, infra, "h0", rack, "r0-b")
	setHostLabel(g, infra, "h0", zone, "")
	setHostLabel(g, infra, "h0", "rack.example.com/row", "7")
	g.Eventually(func(g Gomega) {
		g.Expect(nodeLabels(g, wl, "n0")).To(Equal(map[string]string{"kubernetes.io/hostname": "n0", "team": "web", rack: "r0-b", "rack.example.com/row": "7"}))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("on the Node, by hand: the rack edited, the row deleted, a prefixed label added, a foreign one changed: restored at the next resync, the foreign one kept")
	setNodeLabel(g, wl, "n0", rack, "hacked")
	setNodeLabel(g, wl, "n0", "rack.example.com/row", "")
	setNodeLabel(g, wl, "n0", "rack.example.com/fake", "x")
	setNodeLabel(g, wl, "n0", "team", "db")
	g.Eventually(func(g Gomega) {
		g.Expect(nodeLabels(g, wl, "n0")).To(Equal(map[string]string{"kubernetes.io/hostname": "n0", "team": "db", rack: "r0-b", "rack.example.com/row": "7"}))
	}).WithTimeout(3 * s.interval).WithPolling(200 * time.Millisecond).Should(Succeed())

	t.Log("a second Node with c2's address: ambiguous, reported, nothing guessed")
	mustCreate(g, wl, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}})
	n3 := &corev1.Node{}
	g.Expect(wl.Get(ctx, client.ObjectKey{Name: "n3"}, n3)).To(Succeed())
	n3.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.100.1"}}
	g.Expect(wl.Status().Update(ctx, n3)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cond := synced(g, hub, "c2")
		g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonNodeAmbiguous))
		g.Expect(cond.Message).To(And(ContainSubstring("n2"), ContainSubstring("n3")))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(nodeLabels(g, wl, "n3")).NotTo(HaveKey(rack), "never guessed")
	g.Expect(wl.Delete(ctx, n3)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(synced(g, hub, "c2").Reason).To(Equal(hostfleetv1alpha1.ReasonLabelsSynced))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("zone.example.com removed from the Tenant: its labels stay as they are, on the claim and the Node, and stop syncing")
	setHostLabel(g, infra, "h1", zone, "z1")
	g.Eventually(func(g Gomega) {
		g.Expect(nodeLabels(g, wl, "n1")).To(HaveKeyWithValue(zone, "z1"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	tn := &hostfleetv1alpha1.Tenant{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, tn)).To(Succeed())
	orig := tn.DeepCopy()
	tn.Spec.LabelSyncPrefixes = []string{"rack.example.com"}
	g.Expect(hub.Patch(ctx, tn, client.MergeFrom(orig))).To(Succeed())
	// The agents learn it from their clusters' ClusterTenancy: the host
	// changes once infra-1's and wl's say so.
	g.Eventually(func(g Gomega) {
		for _, cluster := range []string{"infra-1", "wl"} {
			ct := &hostfleetv1alpha1.ClusterTenancy{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: hostfleetv1alpha1.TenancyName}, ct)).To(Succeed())
			for _, served := range append(ct.Spec.Tenants, ct.Spec.WorkloadTenants...) {
				g.Expect(served.LabelSyncPrefixes).To(Equal([]string{"rack.example.com"}), cluster)
			}
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
	setHostLabel(g, infra, "h1", zone, "z9")
	setHostLabel(g, infra, "h1", rack, "r1-b")
	g.Eventually(func(g Gomega) {
		g.Expect(nodeLabels(g, wl, "n1")).To(HaveKeyWithValue(rack, "r1-b"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	setNodeLabel(g, wl, "n1", zone, "mine")
	g.Consistently(func(g Gomega) {
		g.Expect(nodeLabels(g, wl, "n1")).To(HaveKeyWithValue(zone, "mine"), "a label under a removed prefix is left alone")
		c1 := &metal3api.HostClaim{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "c1"}, c1)).To(Succeed())
		g.Expect(c1.Labels).To(HaveKeyWithValue(zone, "z1"), "and on the claim, the host's change not followed")
	}).WithTimeout(2 * s.interval).Should(Succeed())

	t.Log("the workload agent's hub identity: its tenant's claims only, and only NodeLabelsSynced")
	mustCreate(g, hub, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "secret-plans"}})
	agent := mustClient(g, s.agentCfg)
	var list metal3api.HostClaimList
	g.Expect(agent.List(ctx, &list, client.InNamespace(tenantNS))).To(Succeed(), "positive control")
	g.Expect(list.Items).To(HaveLen(3))
	forbidden := func(err error) { g.ExpectWithOffset(1, apierrors.IsForbidden(err)).To(BeTrue(), "forbidden: %v", err) }
	forbidden(agent.List(ctx, &list, client.InNamespace("tenant-b")))
	forbidden(agent.Get(ctx, client.ObjectKey{Namespace: "tenant-b", Name: "secret-plans"}, &metal3api.HostClaim{}))
	forbidden(agent.List(ctx, &metal3api.HardwareDataList{}, client.InNamespace("tenant-b")))
	forbidden(agent.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "anything"}, &corev1.Secret{}))
	c0 := &metal3api.HostClaim{}
	g.Expect(agent.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "c0"}, c0)).To(Succeed())
	forged := c0.DeepCopy()
	meta.SetStatusCondition(&forged.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Forged", Message: "x"})
	err := agent.Status().Patch(ctx, forged, client.MergeFrom(c0))
	forbidden(err)
	g.Expect(err.Error()).To(ContainSubstring("only the NodeLabelsSynced and NodeReady conditions"))
	forged = c0.DeepCopy()
	forged.Labels[hostfleetv1alpha1.LabelCluster] = "wl"
	forbidden(agent.Patch(ctx, forged, client.MergeFrom(c0)))
	mine := c0.DeepCopy()
	meta.SetStatusCondition(&mine.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionNodeLabelsSynced, Status: metav1.ConditionFalse, Reason: "Probe", Message: "positive control"})
	g.Expect(agent.Status().Patch(ctx, mine, client.MergeFrom(c0))).To(Succeed(), "NodeLabelsSynced is its to write")

	t.Log("a claim without a host has no NodeLabelsSynced: a stale one is removed")
	waiting := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "waiting", Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"},
		Annotations: planes.PlacedBy()},
		Spec: metal3api.HostClaimSpec{HostSelector: metal3api.HostSelector{MatchLabels: map[string]string{"host": "none"}}}}
	mustCreate(g, hub, waiting)
	stale := waiting.DeepCopy()
	meta.SetStatusCondition(&stale.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionNodeLabelsSynced, Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonLabelsSynced, Message: "stale"})
	g.Expect(hub.Status().Patch(ctx, stale, client.MergeFrom(waiting))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(waiting), waiting)).To(Succeed())
		g.Expect(meta.FindStatusCondition(waiting.Status.Conditions, hostfleetv1alpha1.ConditionNodeLabelsSynced)).To(BeNil())
	}).WithTimeout(3 * s.interval).Should(Succeed())

	t.Log("infra-1's agent may not write NodeLabelsSynced on a claim placed elsewhere; wl's registration agent may not make wl another tenant's")
	elsewhere := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "elsewhere", Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-2"}}}
	mustCreate(g, hub, elsewhere)
	infraAgent := mustClient(g, s.agentOfInfra)
	g.Expect(infraAgent.Get(ctx, client.ObjectKeyFromObject(elsewhere), elsewhere)).To(Succeed())
	spoof := elsewhere.DeepCopy()
	meta.SetStatusCondition(&spoof.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionNodeLabelsSynced, Status: metav1.ConditionTrue, Reason: "Spoofed", Message: "x"})
	err = infraAgent.Status().Patch(ctx, spoof, client.MergeFrom(elsewhere))
	forbidden(err)
	g.Expect(err.Error()).To(ContainSubstring("workload clusters of tenant a"))
	mc := &clusterv1.ManagedCluster{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "wl"}, mc)).To(Succeed())
	reg := mustClient(g, s.registrationOfWL)
	grantClusterUpdate(g, hub, "wl", "system:open-cluster-management:wl")
	moved := mc.DeepCopy()
	moved.Labels[hostfleetv1alpha1.LabelTenant] = "b"
	g.Eventually(func() error { return reg.Update(ctx, moved) }).WithTimeout(10*time.Second).Should(
		MatchError(ContainSubstring("ask a hub administrator to label the cluster")), "RBAC lets it update its ManagedCluster; admission refuses the label")
	moved = mc.DeepCopy()
	moved.Labels["example.com/site"] = "x"
	g.Expect(reg.Update(ctx, moved)).To(Succeed(), "positive control: other labels are its to set")
}
