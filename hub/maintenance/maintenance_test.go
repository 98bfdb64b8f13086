package maintenance_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/agents"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/maintenance"
	"github.com/hostfleet/hostfleet/internal/setup"
)

func TestMain(m *testing.M) { planes.Main(m) }

const (
	cluster  = "infra-1"
	tenantNS = "tenant-a"
	hostsNS  = "hosts"
)

// rack is the label the tests' hosts carry their rack in: under the
// tenant's label sync prefix, so that the hub sees it on the claims.
const rack = "example.com/rack"

// TestMaintenance: an Enforced maintenance of rack r1 releases the two
// claims on its hosts at its deadline, while an OwnerApproval one of rack
// r2 keeps its claim past the deadline until the tenant approves; the free
// r1 host is out of the pool (not offered in the inventory, not bound to a
// claim asking for r1) until the maintenance is complete, and the status
// lists every host as it goes.
func TestMaintenance(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub", cluster)
	hub, infra := f.Plane("hub").Client, f.Plane(cluster).Client
	f.ManagerForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&maintenance.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, setup.Options{})
	})
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab", LabelSyncPrefixes: []string{"example.com"}}},
		planes.Tenancy(cluster, hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{tenantNS}, LabelSyncPrefixes: []string{"example.com"}}),
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostsNS}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: "tenants"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^tenant-"}}},
	} {
		g.Expect(infra.Create(ctx, o)).To(Succeed())
	}
	for i, r := range []string{"r1", "r1", "r1", "r2"} {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: fmt.Sprintf("h%d", i), Labels: map[string]string{rack: r}},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", 6230+i), CredentialsName: "bmc"}}}
		g.Expect(infra.Create(ctx, h)).To(Succeed())
		g.Expect(planes.MarkAvailable(ctx, infra, h)).To(Succeed())
	}
	agents.ForTest(t, f.Plane("hub").Config, f.Plane(cluster).Config, cluster, func(o *app.Options) { o.InventoryInterval = time.Second })

	claim := func(name, r string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name, Labels: map[string]string{hostfleetv1alpha1.LabelCluster: cluster},
			Annotations: planes.PlacedBy()},
			Spec: metal3api.HostClaimSpec{HostSelector: metal3api.HostSelector{MatchLabels: map[string]string{rack: r}}}}
		g.Expect(hub.Create(ctx, c)).To(Succeed())
		return c
	}
	bound := func(g Gomega, c *metal3api.HostClaim) string {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.BareMetalHost).NotTo(BeNil(), "%s is bound", c.Name)
		return c.Status.BareMetalHost.Name
	}
	e1, e2, o1 := claim("e1", "r1"), claim("e2", "r1"), claim("o1", "r2")
	var freeR1 string
	g.Eventually(func(g Gomega) {
		taken := map[string]bool{bound(g, e1): true, bound(g, e2): true}
		g.Expect(bound(g, o1)).To(Equal("h3"))
		for _, h := range []string{"h0", "h1", "h2"} {
			if !taken[h] {
				freeR1 = h
			}
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())

	deadline := time.Now().Add(15 * time.Second).Truncate(time.Second)
	maint := func(name, r string, policy hostfleetv1alpha1.MaintenancePolicy) *hostfleetv1alpha1.HostMaintenance {
		m := &hostfleetv1alpha1.HostMaintenance{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
			Spec: hostfleetv1alpha1.HostMaintenanceSpec{HostSelector: metav1.LabelSelector{MatchLabels: map[string]string{rack: r}},
				Policy: policy, Deadline: metav1.NewTime(deadline), Reason: "firmware " + r}}
		g.Expect(hub.Create(ctx, m)).To(Succeed())
		return m
	}
	enforced, asked := maint("firmware-r1", "r1", hostfleetv1alpha1.MaintenanceEnforced), maint("firmware-r2", "r2", hostfleetv1alpha1.MaintenanceOwnerApproval)
	requested := func(g Gomega, c *metal3api.HostClaim) *metav1.Condition {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		cond := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionMaintenanceRequested)
		g.Expect(cond).NotTo(BeNil(), "%s is asked", c.Name)
		return cond
	}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(enforced), enforced)).To(Succeed())
		g.Expect(enforced.Status.Hosts).To(ConsistOf(
			hostfleetv1alpha1.MaintainedHost{Host: hostsNS + "/" + e1.Status.BareMetalHost.Name, State: hostfleetv1alpha1.MaintenanceWaiting, Claim: tenantNS + "/e1"},
			hostfleetv1alpha1.MaintainedHost{Host: hostsNS + "/" + e2.Status.BareMetalHost.Name, State: hostfleetv1alpha1.MaintenanceWaiting, Claim: tenantNS + "/e2"},
			hostfleetv1alpha1.MaintainedHost{Host: hostsNS + "/" + freeR1, State: hostfleetv1alpha1.MaintenanceInMaintenance}))
		g.Expect(enforced.Status.Waiting).To(BeNumerically("==", 2))
		for _, c := range []*metal3api.HostClaim{e1, e2} {
			cond := requested(g, c)
			g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonMaintenanceEnforced))
			g.Expect(cond.Message).To(ContainSubstring("wanted for maintenance firmware-r1 (firmware r1): the hub releases the claim (deletes it) at " + deadline.UTC().Format(time.RFC3339)))
		}
		cond := requested(g, o1)
		g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonMaintenanceOwnerApproval))
		g.Expect(cond.Message).To(ContainSubstring("annotate the claim hostfleet.io/maintenance-approved=true"))
		inv := &hostfleetv1alpha1.HostInventory{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: cluster}, inv)).To(Succeed())
		g.Expect(inv.Status.Available).To(BeNumerically("==", 0), "the free r1 host is not offered")
		var events eventsv1.EventList
		g.Expect(hub.List(ctx, &events, client.InNamespace(tenantNS))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(HaveField("Regarding.Name", "o1"), HaveField("Reason", hostfleetv1alpha1.ConditionMaintenanceRequested))))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(time.Now()).To(BeTemporally("<", deadline), "asked before the deadline")

	t.Log("a claim for r1 is not bound to the free host under maintenance")
	late := claim("late", "r1")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(late), late)).To(Succeed())
		a := meta.FindStatusCondition(late.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
		g.Expect(a).NotTo(BeNil())
		g.Expect(a.Reason).To(Equal(hostfleetv1alpha1.ReasonNoHostAvailable))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("at the deadline the Enforced maintenance's claims are released; the OwnerApproval one waits")
	g.Eventually(func(g Gomega) {
		for _, c := range []*metal3api.HostClaim{e1, e2} {
			g.Expect(apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(c), &metal3api.HostClaim{}))).To(BeTrue(), "%s is gone", c.Name)
		}
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(enforced), enforced)).To(Succeed())
		g.Expect(enforced.Status.InMaintenance).To(BeNumerically("==", 3))
		g.Expect(enforced.Status.Waiting).To(BeNumerically("==", 0))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(time.Now()).To(BeTemporally(">=", deadline), "not before the deadline")
	g.Expect(late.Status.BareMetalHost).To(BeNil())
	var events eventsv1.EventList
	g.Expect(hub.List(ctx, &events, client.InNamespace(tenantNS))).To(Succeed())
	g.Expect(events.Items).To(ContainElement(And(HaveField("Regarding.Name", "e1"), HaveField("Reason", hostfleetv1alpha1.ReasonMaintenanceReleased))))
	g.Expect(requested(g, o1).Reason).To(Equal(hostfleetv1alpha1.ReasonMaintenanceOwnerApproval), "past the deadline, still asked")
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(asked), asked)).To(Succeed())
	g.Expect(asked.Status.Waiting).To(BeNumerically("==", 1))

	t.Log("the tenant approves: o1 is released")
	g.Expect(hub.Patch(ctx, o1, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"hostfleet.io/maintenance-approved":"true"}}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(o1), &metal3api.HostClaim{}))).To(BeTrue())
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(asked), asked)).To(Succeed())
		g.Expect(asked.Status.Hosts).To(ConsistOf(hostfleetv1alpha1.MaintainedHost{Host: hostsNS + "/h3", State: hostfleetv1alpha1.MaintenanceInMaintenance}))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("the maintenance completes: its hosts are Done and back in the pool; the waiting claim binds")
	g.Expect(hub.Patch(ctx, enforced, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"complete":true}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(enforced), enforced)).To(Succeed())
		g.Expect(enforced.Status.Hosts).To(HaveEach(HaveField("State", hostfleetv1alpha1.MaintenanceDone)))
		g.Expect(bound(g, late)).To(HavePrefix("h"))
		h := &metal3api.BareMetalHost{}
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: freeR1}, h)).To(Succeed())
		g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationMaintenance))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(hub.Delete(ctx, asked)).To(Succeed())
	g.Eventually(func(g Gomega) {
		h := &metal3api.BareMetalHost{}
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "h3"}, h)).To(Succeed())
		g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationMaintenance), "a deleted maintenance returns its hosts")
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// TestMaintenanceTrustsNoAgentList: a cluster's agent lists, in its
// maintenances' status, the claims their hosts hold. The hub asks and
// releases only those whose host it confirms the maintenance selects (the
// claim holds the listed host, and the host's labels synced to the claim
// match the selector): a hostile agent's list of a claim the selector does
// not select, of a host the claim does not hold, or under a selector on
// labels the tenant does not sync, asks nothing and releases nothing; the
// maintenance says so in a Warning Event.
func TestMaintenanceTrustsNoAgentList(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	f.ManagerForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&maintenance.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, setup.Options{})
	})
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab", LabelSyncPrefixes: []string{"example.com"}}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	// A claim bound to h3 in rack r2, as its agent reports it.
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "web",
		Labels: map[string]string{hostfleetv1alpha1.LabelCluster: cluster, rack: "r2"}, Annotations: planes.PlacedBy()}}
	g.Expect(hub.Create(ctx, c)).To(Succeed())
	c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: hostsNS, Name: "h3"}
	g.Expect(hub.Status().Update(ctx, c)).To(Succeed())
	// listing is a maintenance whose deadline has passed, with the status
	// a hostile agent writes: the claim, on host listed, waiting.
	listing := func(name string, sel map[string]string, listed string) *hostfleetv1alpha1.HostMaintenance {
		m := &hostfleetv1alpha1.HostMaintenance{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
			Spec: hostfleetv1alpha1.HostMaintenanceSpec{HostSelector: metav1.LabelSelector{MatchLabels: sel},
				Policy: hostfleetv1alpha1.MaintenanceEnforced, Deadline: metav1.NewTime(time.Now().Add(2 * time.Second)), Reason: name}}
		g.Expect(hub.Create(ctx, m)).To(Succeed())
		m.Status.Hosts = []hostfleetv1alpha1.MaintainedHost{{Host: listed, State: hostfleetv1alpha1.MaintenanceWaiting, Claim: tenantNS + "/web"}}
		m.Status.Waiting = 1
		g.Expect(hub.Status().Update(ctx, m)).To(Succeed())
		return m
	}
	notSelected := func(g Gomega, m *hostfleetv1alpha1.HostMaintenance, says string) {
		var events eventsv1.EventList
		g.Expect(hub.List(ctx, &events, client.InNamespace(cluster))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(HaveField("Regarding.Name", m.Name), HaveField("Type", corev1.EventTypeWarning),
			HaveField("Reason", hostfleetv1alpha1.ReasonMaintenanceNotSelected), HaveField("Note", ContainSubstring(says)))))
	}
	otherRack := listing("other-rack", map[string]string{rack: "r1"}, hostsNS+"/h3")
	otherHost := listing("other-host", map[string]string{rack: "r2"}, hostsNS+"/h0")
	unsynced := listing("unsynced", map[string]string{"rack": "r2"}, hostsNS+"/h3")
	g.Eventually(func(g Gomega) {
		notSelected(g, otherRack, "do not satisfy example.com/rack=r1")
		notSelected(g, otherHost, "the agent lists it on host hosts/h0, but the claim holds host hosts/h3")
		notSelected(g, unsynced, "hostSelector uses rack, which the claim's tenant does not sync")
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed(), "not released past the deadlines")
		g.Expect(meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionMaintenanceRequested)).To(BeNil(), "not asked")
	}).WithTimeout(5 * time.Second).Should(Succeed())

	t.Log("positive control: a maintenance of rack r2, listing the host the claim holds, releases it at its deadline")
	listing("r2", map[string]string{rack: "r2"}, hostsNS+"/h3")
	g.Eventually(func() bool { return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(c), c)) }).
		WithTimeout(20 * time.Second).Should(BeTrue())
}
