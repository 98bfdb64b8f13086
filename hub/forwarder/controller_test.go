package forwarder_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/forwarder"
	"github.com/hostfleet/hostfleet/hub/scheduler"
	"github.com/hostfleet/hostfleet/internal/setup"
)

func TestMain(m *testing.M) { planes.Main(m) }

const tenantNS = "tenant-a"

func cond(c *metal3api.HostClaim, t string) metav1.Condition {
	if x := meta.FindStatusCondition(c.Status.Conditions, t); x != nil {
		return *x
	}
	return metav1.Condition{}
}

// setAvailable writes the ManagedCluster's Available condition, as its
// registration agent would.
func setAvailable(g Gomega, hub client.Client, cluster string, status metav1.ConditionStatus) {
	g.Eventually(func() error { return planes.SetClusterAvailable(context.Background(), hub, cluster, status) }).
		WithTimeout(10 * time.Second).Should(Succeed())
}

// fleet is a hub running the tenant controller, the scheduler and the
// forwarder; infra-1 runs OCM's real work agent; infra-2 is a cluster with
// none. Tenant a's set holds both. hubConfig reaches the hub's API server.
func fleet(t *testing.T, g Gomega) (hub, infra client.Client, hubConfig *rest.Config) {
	f := planes.ForTest(t, "hub", "infra-1")
	f.HubForTest(t, "hub", func(mgr ctrl.Manager) error {
		if err := (&scheduler.Reconciler{Client: mgr.GetClient(), Deadline: 5 * time.Second}).SetupWithManager(context.Background(), mgr, setup.Options{}); err != nil {
			return err
		}
		return (&forwarder.Reconciler{Client: mgr.GetClient()}).SetupWithManager(context.Background(), mgr, setup.Options{})
	})
	hub, infra, hubConfig = f.Plane("hub").Client, f.Plane("infra-1").Client, f.Plane("hub").Config
	ctx := context.Background()
	g.Expect(hub.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}})).To(Succeed())
	for _, c := range []string{"infra-1", "infra-2"} {
		g.Expect(hub.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c,
			Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "lab"}}})).To(Succeed())
		g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}})).To(Succeed())
		setAvailable(g, hub, c, metav1.ConditionTrue)
	}
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		ta := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ta.Status.Clusters).To(ConsistOf("infra-1", "infra-2"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	// Garbage collection on the target: the work agent deletes what it
	// applied in the foreground.
	f.StartControllerManagerForTest(t, "infra-1")
	f.StartWorkAgentForTest(t, "hub", "infra-1", "infra-1", 2*time.Second)
	t.Cleanup(func() {
		if t.Failed() {
			dump(t, hub, infra)
		}
	})
	return hub, infra, hubConfig
}

// dump logs the claims' conditions and the works' status, for a failed test.
func dump(t *testing.T, hub, infra client.Client) {
	ctx := context.Background()
	var claims metal3api.HostClaimList
	_ = hub.List(ctx, &claims)
	for _, c := range claims.Items {
		t.Logf("claim %s/%s labels %v finalizers %v", c.Namespace, c.Name, c.Labels, c.Finalizers)
		for _, x := range c.Status.Conditions {
			t.Logf("  %s=%s %s: %s", x.Type, x.Status, x.Reason, x.Message)
		}
	}
	var applied workv1.AppliedManifestWorkList
	_ = infra.List(ctx, &applied)
	for _, a := range applied.Items {
		t.Logf("applied work %s finalizers %v deleting %v resources %+v", a.Name, a.Finalizers, a.DeletionTimestamp, a.Status.AppliedResources)
	}
	var nss corev1.NamespaceList
	_ = infra.List(ctx, &nss)
	for _, ns := range nss.Items {
		t.Logf("namespace %s owners %v finalizers %v phase %s", ns.Name, ns.OwnerReferences, ns.Finalizers, ns.Status.Phase)
	}
	var works workv1.ManifestWorkList
	_ = hub.List(ctx, &works)
	for _, w := range works.Items {
		t.Logf("work %s/%s finalizers %v conditions %+v", w.Namespace, w.Name, w.Finalizers, w.Status.Conditions)
		for _, m := range w.Status.ResourceStatus.Manifests {
			t.Logf("  %s %s/%s %+v feedback %+v", m.ResourceMeta.Resource, m.ResourceMeta.Namespace, m.ResourceMeta.Name, m.Conditions, m.StatusFeedbacks.Values)
		}
	}
}

func remoteClaim(name, cluster string, mut func(*metal3api.HostClaim)) *metal3api.HostClaim {
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name,
		Labels: map[string]string{hostfleetv1alpha1.LabelKind: hostfleetv1alpha1.KindRemote}}}
	if cluster != "" {
		c.Labels[hostfleetv1alpha1.LabelCluster] = cluster
	}
	if mut != nil {
		mut(c)
	}
	return c
}

// TestForward: a remote claim the scheduler places on a cluster without a
// HostInventory is forwarded there through the real work agent: the target
// claim and its secret copy appear, the target's status comes back through
// scalar feedback, changes flow down without touching what the target's
// controller owns, stale or incomplete feedback is never Ready, and the
// claim goes only after its target.
func TestForward(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub, infra, hubConfig := fleet(t, g)
	inv := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "infra-1", Name: "infra-1"},
		Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "infra-1"}}
	g.Expect(hub.Create(ctx, inv)).To(Succeed())
	inv.Status.Pools = []hostfleetv1alpha1.HostPool{{Namespaces: []string{tenantNS}, Total: 1, Available: 1}}
	g.Expect(hub.Status().Update(ctx, inv)).To(Succeed())

	g.Expect(hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "ud"},
		StringData: map[string]string{"userData": "#cloud-config\nv: 1\n"}})).To(Succeed())
	src := remoteClaim("web", "", func(c *metal3api.HostClaim) {
		c.Labels["app"] = "web"
		c.Spec.UserData = &corev1.SecretReference{Name: "ud"}
		c.Spec.Image = &metal3api.Image{URL: "http://images/one.qcow2", Checksum: "abc", DiskFormat: ptr("qcow2")}
		c.Spec.HostSelector.MatchLabels = map[string]string{"example.com/rack": "r1"}
	})
	g.Expect(hub.Create(ctx, src)).To(Succeed())

	t.Log("placed on the cluster of the set whose inventory has a free host (before one that publishes none), forwarded, applied")
	targetNS := forwarder.TargetNamespace(tenantNS)
	target := &metal3api.HostClaim{}
	var cluster string
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(src), src)).To(Succeed())
		cluster = src.Labels[hostfleetv1alpha1.LabelCluster]
		g.Expect(cluster).To(Equal("infra-1"))
		g.Expect(cond(src, hostfleetv1alpha1.ConditionScheduled).Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: targetNS, Name: "web"}, target)).To(Succeed())
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(src), src)).To(Succeed())
		g.Expect(cond(src, hostfleetv1alpha1.ConditionForwarded).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(src.Finalizers).To(ContainElement(hostfleetv1alpha1.ForwarderFinalizer))
	g.Expect(target.Labels).To(Equal(map[string]string{"app": "web"}), "Hostfleet's labels stay on the hub")
	g.Expect(target.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationSourceClaim, tenantNS+"/web"))
	g.Expect(target.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationSourceClaimUID, string(src.UID)))
	g.Expect(target.Spec.Image.URL).To(Equal("http://images/one.qcow2"))
	g.Expect(target.Spec.HostSelector.MatchLabels).To(Equal(map[string]string{"example.com/rack": "r1"}))
	copyName := forwarder.SecretName("web", forwarder.RoleUserData)
	g.Expect(target.Spec.UserData).To(Equal(&corev1.SecretReference{Name: copyName}))
	ns := &corev1.Namespace{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Name: targetNS}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelTenant, "a"))
	secret := &corev1.Secret{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: targetNS, Name: copyName}, secret)).To(Succeed())
	g.Expect(string(secret.Data["userData"])).To(ContainSubstring("v: 1"))
	g.Expect(cond(src, hostfleetv1alpha1.ConditionReady).Status).NotTo(Equal(metav1.ConditionTrue), "nothing serves the target yet")
	g.Consistently(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(src), src)).To(Succeed())
		g.Expect(src.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "infra-1"))
	}).WithTimeout(6*time.Second).Should(Succeed(), "past the 5 s bind deadline, unbound, a remote claim stays where its target is")

	t.Log("the target's controller binds it (written here as a HostClaim controller would): the hub claim mirrors it and goes Ready")
	puts := func() float64 {
		n, err := planes.Requests(ctx, hubConfig, "PUT", "manifestworks")
		g.Expect(err).NotTo(HaveOccurred())
		return n
	}
	before := puts()
	bindTarget(g, infra, target, true)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(src), src)).To(Succeed())
		g.Expect(cond(src, hostfleetv1alpha1.ConditionReady)).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "Ready")))
		g.Expect(cond(src, hostfleetv1alpha1.ConditionForwarded).Reason).To(Equal(hostfleetv1alpha1.ReasonTargetBound))
		g.Expect(cond(src, hostfleetv1alpha1.ConditionAssociated).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(src.Status.BareMetalHost).To(Equal(&metal3api.ObjectReference{Namespace: "hosts", Name: "h0"}))
		g.Expect(src.Status.PoweredOn).To(BeTrue())
		g.Expect(src.Status.LastUpdated).NotTo(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(puts()-before).To(BeZero(), "the claim's status changed, not its spec: its work is not written again")
	g.Expect(planes.Events(ctx, hub, src)).To(ConsistOf(HavePrefix("Normal/Forwarding: "),
		HavePrefix("Normal/TargetNotBound: "), HavePrefix("Normal/TargetBound: ")),
		"forwarded and bound without trouble: no Warning, no Event for the steps every claim passes")

	t.Log("changes flow down: image, poweredOn, a keyed reboot annotation, the secret's contents; what the target's controller owns stays")
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(target), target)).To(Succeed())
		target.Finalizers = append(target.Finalizers, "example.com/target-controller")
		target.Labels["example.com/set-on-target"] = "yes"
		g.Expect(infra.Update(ctx, target)).To(Succeed())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(src), src)).To(Succeed())
		src.Spec.Image.URL = "http://images/two.qcow2"
		src.Spec.PoweredOn = true
		src.Annotations[metal3api.RebootAnnotationPrefix+"/maintenance"] = ""
		g.Expect(hub.Update(ctx, src)).To(Succeed())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		ud := &corev1.Secret{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "ud"}, ud)).To(Succeed())
		ud.Data["userData"] = []byte("#cloud-config\nv: 2\n")
		g.Expect(hub.Update(ctx, ud)).To(Succeed())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(target), target)).To(Succeed())
		g.Expect(target.Spec.Image.URL).To(Equal("http://images/two.qcow2"))
		g.Expect(target.Spec.PoweredOn).To(BeTrue())
		g.Expect(target.Annotations).To(HaveKey(metal3api.RebootAnnotationPrefix + "/maintenance"))
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: targetNS, Name: copyName}, secret)).To(Succeed())
		g.Expect(string(secret.Data["userData"])).To(ContainSubstring("v: 2"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(target.Finalizers).To(ContainElement("example.com/target-controller"))
	g.Expect(target.Labels).To(HaveKeyWithValue("example.com/set-on-target", "yes"))
	g.Expect(target.Status.BareMetalHost).NotTo(BeNil(), "the target's status is its controller's")

	t.Log("feedback without a Ready condition (an upstream baremetal-operator target) is reported, never Ready")
	bindTarget(g, infra, target, false)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(src), src)).To(Succeed())
		ready := cond(src, hostfleetv1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(hostfleetv1alpha1.ReasonFeedbackIncomplete))
		g.Expect(ready.Message).To(ContainSubstring("condition Ready"))
		g.Expect(cond(src, hostfleetv1alpha1.ConditionForwarded).Reason).To(Equal(hostfleetv1alpha1.ReasonTargetBound))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	bindTarget(g, infra, target, true)

	t.Log("the cluster stops reporting: the last feedback is stale, and the claim is not Ready")
	setAvailable(g, hub, "infra-1", metav1.ConditionUnknown)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(src), src)).To(Succeed())
		g.Expect(cond(src, hostfleetv1alpha1.ConditionReady)).To(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", hostfleetv1alpha1.ReasonClusterUnavailable)))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	setAvailable(g, hub, "infra-1", metav1.ConditionTrue)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(src), src)).To(Succeed())
		g.Expect(cond(src, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("the cluster's hostfleet-agent add-on stops reporting: nothing keeps the target's status current, and the claim is not Ready")
	mca := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "infra-1", Name: hostfleetv1alpha1.AddonName}}
	g.Expect(hub.Create(ctx, mca)).To(Succeed())
	setAddon := func(status metav1.ConditionStatus) {
		g.Eventually(func(g Gomega) {
			g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(mca), mca)).To(Succeed())
			meta.SetStatusCondition(&mca.Status.Conditions, metav1.Condition{Type: addonv1beta1.ManagedClusterAddOnConditionAvailable,
				Status: status, Reason: "Test", Message: "the agent's Lease"})
			g.Expect(hub.Status().Update(ctx, mca)).To(Succeed())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	setAddon(metav1.ConditionFalse)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(src), src)).To(Succeed())
		g.Expect(cond(src, hostfleetv1alpha1.ConditionReady)).To(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", hostfleetv1alpha1.ReasonAgentUnavailable)))
		g.Expect(cond(src, hostfleetv1alpha1.ConditionForwarded).Status).To(Equal(metav1.ConditionTrue), "the work is still applied")
	}).WithTimeout(20 * time.Second).Should(Succeed())
	setAddon(metav1.ConditionTrue)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(src), src)).To(Succeed())
		g.Expect(cond(src, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("deleting the claim deletes the work and the target; the claim waits for its target's controller")
	g.Expect(hub.Delete(ctx, src)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(target), target)).To(Succeed())
		g.Expect(target.DeletionTimestamp).NotTo(BeNil())
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(src), src)).To(Succeed())
		g.Expect(cond(src, hostfleetv1alpha1.ConditionForwarded).Reason).To(Equal(hostfleetv1alpha1.ReasonWithdrawing))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func() error { return hub.Get(ctx, client.ObjectKeyFromObject(src), &metal3api.HostClaim{}) }).
		WithTimeout(3*time.Second).Should(Succeed(), "the target's host is not released yet")
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(target), target)).To(Succeed())
		target.Finalizers = slices.DeleteFunc(target.Finalizers, func(f string) bool { return f == "example.com/target-controller" })
		g.Expect(infra.Update(ctx, target)).To(Succeed())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(infra.Get(ctx, client.ObjectKeyFromObject(target), target))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(src), src))).To(BeTrue())
		var works workv1.ManifestWorkList
		g.Expect(hub.List(ctx, &works, client.InNamespace("infra-1"))).To(Succeed())
		g.Expect(works.Items).To(BeEmpty())
		g.Expect(apierrors.IsNotFound(infra.Get(ctx, client.ObjectKey{Namespace: targetNS, Name: copyName}, secret))).To(BeTrue())
		// The work agent looks again at a work whose resources are being
		// finalized with exponential backoff, 50 ms up to 60 s.
	}).WithTimeout(100 * time.Second).Should(Succeed())
	g.Expect(infra.Get(ctx, client.ObjectKey{Name: targetNS}, ns)).To(Succeed(), "the namespace stays for the tenant's other claims")
}

// bindTarget writes the status a HostClaim controller writes on a bound
// claim: with ready, the Hostfleet agent's full set; without, upstream
// baremetal-operator's (Associated and Synchronized only).
func bindTarget(g Gomega, infra client.Client, target *metal3api.HostClaim, ready bool) {
	ctx := context.Background()
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(target), target)).To(Succeed())
		target.Status.Conditions = nil
		for _, t := range []string{hostfleetv1alpha1.ConditionAssociated, hostfleetv1alpha1.ConditionSynchronized} {
			meta.SetStatusCondition(&target.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "Done"})
		}
		if ready {
			meta.SetStatusCondition(&target.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionReady,
				Status: metav1.ConditionTrue, Reason: "Ready", Message: "provisioned and powered on"})
		}
		target.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h0"}
		target.Status.PoweredOn = true
		target.Status.LastUpdated = &metav1.Time{Time: time.Now().Truncate(time.Second)}
		g.Expect(infra.Status().Update(ctx, target)).To(Succeed())
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestRefused: what cannot be forwarded is refused on the claim with a
// message that says what to fix, and forwarded once fixed.
func TestRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub, infra, _ := fleet(t, g)
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}})).To(Succeed())
	g.Expect(hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "theirs"},
		StringData: map[string]string{"userData": "not yours"}})).To(Succeed())
	g.Expect(hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "huge"},
		Data: map[string][]byte{"userData": []byte(strings.Repeat("x", 600*1024))}})).To(Succeed())

	claims := map[string]*metal3api.HostClaim{
		"other-namespace": remoteClaim("other-namespace", "infra-1", func(c *metal3api.HostClaim) {
			c.Spec.UserData = &corev1.SecretReference{Namespace: "elsewhere", Name: "theirs"}
		}),
		"too-large": remoteClaim("too-large", "infra-1", func(c *metal3api.HostClaim) {
			c.Spec.UserData = &corev1.SecretReference{Name: "huge"}
		}),
		"missing": remoteClaim("missing", "infra-1", func(c *metal3api.HostClaim) {
			c.Spec.NetworkData = &corev1.SecretReference{Name: "later"}
		}),
		"no-work-agent": remoteClaim("no-work-agent", "infra-2", nil),
		// Admitted before the claims policy checked names (the test's
		// client is a cluster administrator, whom the policy leaves alone).
		"bad-name": remoteClaim("bad-name", "infra-1", func(c *metal3api.HostClaim) {
			c.Spec.UserData = &corev1.SecretReference{Name: "../tenant-x/web-userdata"}
		}),
	}
	want := map[string][2]string{
		"other-namespace": {hostfleetv1alpha1.ReasonSecretInvalid, "outside the claim's namespace tenant-a"},
		"too-large":       {hostfleetv1alpha1.ReasonWorkTooLarge, "exceeds the 512000 limit"},
		"missing":         {hostfleetv1alpha1.ReasonSecretInvalid, "names secret later, which does not exist in tenant-a"},
		"no-work-agent":   {hostfleetv1alpha1.ReasonWorkNotApplied, "is not applied on infra-2"},
		"bad-name":        {hostfleetv1alpha1.ReasonSecretInvalid, `names secret "../tenant-x/web-userdata", which is not a valid Secret name`},
	}
	for _, c := range claims {
		g.Expect(hub.Create(ctx, c)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		for name, c := range claims {
			g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			f := cond(c, hostfleetv1alpha1.ConditionForwarded)
			g.Expect(f.Status).To(Equal(metav1.ConditionFalse), name)
			g.Expect(f.Reason).To(Equal(want[name][0]), name)
			g.Expect(f.Message).To(ContainSubstring(want[name][1]), name)
			g.Expect(cond(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse), name)
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
	var works workv1.ManifestWorkList
	g.Expect(hub.List(ctx, &works, client.InNamespace("infra-1"))).To(Succeed())
	g.Expect(works.Items).To(BeEmpty(), "nothing refused reaches the cluster")

	t.Log("two tenants' claims of the same name on one cluster land in namespaces of their own")
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		tb := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "b"}, tb)).To(Succeed())
		g.Expect(tb.Status.Clusters).To(ContainElement("infra-1"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	mine, theirs := remoteClaim("same", "infra-1", nil), remoteClaim("same", "infra-1", nil)
	theirs.Namespace = "tenant-b"
	g.Expect(hub.Create(ctx, mine)).To(Succeed())
	g.Expect(hub.Create(ctx, theirs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, c := range []*metal3api.HostClaim{mine, theirs} {
			target := &metal3api.HostClaim{}
			g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: forwarder.TargetNamespace(c.Namespace), Name: "same"}, target)).To(Succeed())
			g.Expect(target.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationSourceClaim, c.Namespace+"/same"))
			ns := &corev1.Namespace{}
			g.Expect(infra.Get(ctx, client.ObjectKey{Name: target.Namespace}, ns)).To(Succeed())
			g.Expect(ns.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelHubNamespace, c.Namespace))
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("the missing secret appears: the claim is forwarded")
	g.Expect(hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "later"},
		StringData: map[string]string{"networkData": "{}"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: forwarder.TargetNamespace(tenantNS), Name: "missing"}, &metal3api.HostClaim{})).To(Succeed())
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func ptr[T any](v T) *T { return &v }
