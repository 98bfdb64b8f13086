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
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}},
		planes.Tenancy(cluster, hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{tenantNS}}),
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
	for i, rack := range []string{"r1", "r1", "r1", "r2"} {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: fmt.Sprintf("h%d", i), Labels: map[string]string{"rack": rack}},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", 6230+i), CredentialsName: "bmc"}}}
		g.Expect(infra.Create(ctx, h)).To(Succeed())
		h.Status.Provisioning.State, h.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}
	agents.ForTest(t, f.Plane("hub").Config, f.Plane(cluster).Config, cluster, func(o *app.Options) { o.InventoryInterval = time.Second })

	claim := func(name, rack string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name, Labels: map[string]string{hostfleetv1alpha1.LabelCluster: cluster}},
			Spec: metal3api.HostClaimSpec{HostSelector: metal3api.HostSelector{MatchLabels: map[string]string{"rack": rack}}}}
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
	maint := func(name, rack string, policy hostfleetv1alpha1.MaintenancePolicy) *hostfleetv1alpha1.HostMaintenance {
		m := &hostfleetv1alpha1.HostMaintenance{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
			Spec: hostfleetv1alpha1.HostMaintenanceSpec{HostSelector: metav1.LabelSelector{MatchLabels: map[string]string{"rack": rack}},
				Policy: policy, Deadline: metav1.NewTime(deadline), Reason: "firmware " + rack}}
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
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(o1), o1)).To(Succeed())
	o1.Annotations = map[string]string{hostfleetv1alpha1.AnnotationMaintenanceApproved: "true"}
	g.Expect(hub.Update(ctx, o1)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(o1), &metal3api.HostClaim{}))).To(BeTrue())
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(asked), asked)).To(Succeed())
		g.Expect(asked.Status.Hosts).To(ConsistOf(hostfleetv1alpha1.MaintainedHost{Host: hostsNS + "/h3", State: hostfleetv1alpha1.MaintenanceInMaintenance}))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("the maintenance completes: its hosts are Done and back in the pool; the waiting claim binds")
	enforced.Spec.Complete = true
	g.Expect(hub.Update(ctx, enforced)).To(Succeed())
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
