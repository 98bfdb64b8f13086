package claim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/agents"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

const (
	tenantNS = "tenant-a"
	hostsNS  = "hosts"
)

// startAgent runs an agent for cluster in this process until the test ends.
// Its cluster serves tenant a (tenantNS) unless the test wrote the
// cluster's ClusterTenancy first: the hub's tenancy controller, which does
// not run here, would.
func startAgent(t *testing.T, f *planes.Fleet, cluster string, concurrency int, opts ...func(*app.Options)) context.CancelFunc {
	t.Helper()
	servesTenantA(t, f.Plane("hub").Client, cluster)
	return startAgentWith(t, f.Plane("hub").Config, f.Plane(cluster).Config, cluster, concurrency, opts...)
}

// servesTenantA writes cluster's ClusterTenancy serving tenant a
// (tenantNS), unless the test wrote one first.
func servesTenantA(t *testing.T, hub client.Client, cluster string) {
	t.Helper()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}},
		planes.Tenancy(cluster, hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{tenantNS}}),
	} {
		if err := hub.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// startAgentWith runs an agent with the given hub and managed configs.
func startAgentWith(t *testing.T, hubCfg, managedCfg *rest.Config, cluster string, concurrency int, opts ...func(*app.Options)) context.CancelFunc {
	t.Helper()
	return agents.ForTest(t, hubCfg, managedCfg, cluster, append([]func(*app.Options){func(o *app.Options) { o.Concurrency = concurrency }}, opts...)...)
}

func mustCreate(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// servedScene starts a hub and infra-1 where infra-1 serves tenant a (its
// ClusterTenancy says so, with a's namespace labelled), and the host
// infrastructure of hostInfra.
func servedScene(t *testing.T, a hostfleetv1alpha1.ServedTenant) (*planes.Fleet, client.Client, client.Client) {
	t.Helper()
	f := planes.ForTest(t, "hub", "infra-1")
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	a.Name, a.Namespaces = "a", []string{tenantNS}
	mustCreate(t, hub,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		planes.Tenancy("infra-1", a),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
	)
	hostInfra(t, infra)
	return f, hub, infra
}

// hostInfra creates the hosts namespace, BMC credentials and a policy that
// admits tenant namespaces.
func hostInfra(t *testing.T, c client.Client) {
	mustCreate(t, c,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostsNS}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: "bmc"},
			StringData: map[string]string{"username": "admin", "password": "secret"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: "tenants"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^tenant-"}}},
	)
}

func bmh(name string, i int, lbls map[string]string) *metal3api.BareMetalHost {
	return &metal3api.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: name, Labels: lbls},
		Spec: metal3api.BareMetalHostSpec{
			BMC:            metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", 6230+i), CredentialsName: "bmc"},
			BootMACAddress: fmt.Sprintf("00:11:22:33:44:%02x", i),
		},
	}
}

func hubClaim(name, cluster string, selector map[string]string) *metal3api.HostClaim {
	return &metal3api.HostClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name, Labels: map[string]string{hostfleetv1alpha1.LabelCluster: cluster},
			Annotations: planes.PlacedBy()},
		Spec: metal3api.HostClaimSpec{HostSelector: metal3api.HostSelector{MatchLabels: selector}},
	}
}

func associated(c *metal3api.HostClaim) *metav1.Condition {
	return meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
}

func waitAvailable(g Gomega, c client.Client, names ...string) {
	for _, n := range names {
		g.Eventually(func(g Gomega) {
			h := &metal3api.BareMetalHost{}
			g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: hostsNS, Name: n}, h)).To(Succeed())
			g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateAvailable))
		}).WithTimeout(90*time.Second).WithPolling(500*time.Millisecond).Should(Succeed(), "baremetal-operator makes %s available", n)
	}
}

// TestBindAcrossClusters: a claim on the hub plane binds a BareMetalHost on the
// infra-1 plane, made available by the real baremetal-operator; a claim for
// infra-2 is never touched; deleting the claim releases the host, which then
// serves the claim that was waiting for it.
func TestBindAcrossClusters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub", "infra-1")
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	g.Expect(f.Plane("hub").Config.Host).NotTo(Equal(f.Plane("infra-1").Config.Host), "two API servers")

	f.StartBMOForTest(t, "infra-1")
	mustCreate(t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}})
	hostInfra(t, infra)
	mustCreate(t, infra, bmh("gpu-0", 0, map[string]string{"example.com/gpu": "yes"}), bmh("plain-0", 1, nil))
	start := time.Now()
	waitAvailable(g, infra, "gpu-0", "plain-0")
	t.Logf("baremetal-operator made 2 hosts available in %s", time.Since(start).Round(100*time.Millisecond))

	startAgent(t, f, "infra-1", 2)

	// A claim for another cluster, on the same hub.
	elsewhere := hubClaim("elsewhere", "infra-2", nil)
	mustCreate(t, hub, elsewhere)

	// Placed by the scheduler (none runs here), which alone writes the
	// Scheduled condition: the agent writes none.
	first := hubClaim("first", "infra-1", map[string]string{"example.com/gpu": "yes"})
	mustCreate(t, hub, first)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(first), first)).To(Succeed())
		g.Expect(first.Status.BareMetalHost).To(Equal(&metal3api.ObjectReference{Namespace: hostsNS, Name: "gpu-0"}))
		cond := associated(first)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonHostAssociated))
		g.Expect(first.Finalizers).To(ContainElement(hostfleetv1alpha1.AgentFinalizer))
		g.Expect(meta.FindStatusCondition(first.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)).To(BeNil(), "the scheduler's to write")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// The truth is on the other plane: the host's consumerRef.
	host := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "gpu-0"}, host)).To(Succeed())
	g.Expect(host.Spec.ConsumerRef).To(Equal(&corev1.ObjectReference{
		APIVersion: "hostfleet.io/v1alpha1", Kind: "HostClaim", Namespace: tenantNS, Name: "first"}))
	g.Expect(host.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationClaimUID, string(first.UID)))
	g.Expect(host.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationHub, "hub"))

	// A second gpu claim waits, and says why.
	second := hubClaim("second", "infra-1", map[string]string{"example.com/gpu": "yes"})
	mustCreate(t, hub, second)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(second), second)).To(Succeed())
		cond := associated(second)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonNoHostAvailable))
		g.Expect(cond.Message).To(ContainSubstring("example.com/gpu=yes"))
		g.Expect(second.Status.BareMetalHost).To(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(meta.FindStatusCondition(second.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)).To(BeNil(),
		"a pinned claim's Scheduled condition is the scheduler's")

	// infra-1's agent never touched infra-2's claim.
	g.Consistently(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(elsewhere), elsewhere)).To(Succeed())
		g.Expect(elsewhere.Finalizers).To(BeEmpty())
		g.Expect(elsewhere.Status.Conditions).To(BeEmpty())
	}).WithTimeout(3 * time.Second).Should(Succeed())

	// Deleting the first claim releases gpu-0 before the claim goes ...
	g.Expect(hub.Delete(ctx, first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := hub.Get(ctx, client.ObjectKeyFromObject(first), &metal3api.HostClaim{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "claim gone after release, got %v", err)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	// ... so the waiting claim gets it.
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(second), second)).To(Succeed())
		g.Expect(second.Status.BareMetalHost).To(Equal(&metal3api.ObjectReference{Namespace: hostsNS, Name: "gpu-0"}))
		g.Expect(associated(second)).To(HaveField("Status", metav1.ConditionTrue))
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "gpu-0"}, host)).To(Succeed())
		g.Expect(host.Spec.ConsumerRef).NotTo(BeNil())
		g.Expect(host.Spec.ConsumerRef.Name).To(Equal("second"))
		g.Expect(host.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationClaimUID, string(second.UID)))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// TestNoHostBoundTwice races two agents for the same cluster (as during a
// rolling restart), each with several workers, over many claims and few hosts:
// every host ends with at most one claim, every claim with at most one host.
func TestNoHostBoundTwice(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub", "infra-1")
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	mustCreate(t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}})
	hostInfra(t, infra)

	const hosts, claims = 4, 12
	for i := 0; i < hosts; i++ {
		h := bmh(fmt.Sprintf("h%d", i), i, nil)
		mustCreate(t, infra, h)
		// No baremetal-operator here: make the hosts available directly, as
		// the race is between agents, not with the host state machine.
		h.Status.Provisioning.State = metal3api.StateAvailable
		h.Status.OperationalStatus = metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}
	for i := 0; i < claims; i++ {
		mustCreate(t, hub, hubClaim(fmt.Sprintf("c%02d", i), "infra-1", nil))
	}
	startAgent(t, f, "infra-1", 4)
	startAgent(t, f, "infra-1", 4)

	g.Eventually(func(g Gomega) {
		var list metal3api.HostClaimList
		g.Expect(hub.List(ctx, &list, client.InNamespace(tenantNS))).To(Succeed())
		bound := 0
		for i := range list.Items {
			if cond := associated(&list.Items[i]); cond != nil && cond.Status == metav1.ConditionTrue {
				bound++
			}
		}
		g.Expect(bound).To(Equal(hosts))
	}).WithTimeout(120 * time.Second).Should(Succeed())

	// Hold still for a moment with both agents running, then check both sides.
	g.Consistently(func(g Gomega) {
		var list metal3api.HostClaimList
		g.Expect(hub.List(ctx, &list, client.InNamespace(tenantNS))).To(Succeed())
		var bmhs metal3api.BareMetalHostList
		g.Expect(infra.List(ctx, &bmhs, client.InNamespace(hostsNS))).To(Succeed())
		owner := map[string]string{}
		for _, h := range bmhs.Items {
			g.Expect(h.Spec.ConsumerRef).NotTo(BeNil())
			owner[h.Name] = h.Spec.ConsumerRef.Name
		}
		claimed := map[string]string{}
		for _, c := range list.Items {
			if cond := associated(&c); cond == nil || cond.Status != metav1.ConditionTrue {
				continue
			}
			h := c.Status.BareMetalHost.Name
			g.Expect(claimed).NotTo(HaveKey(h), "host %s reported by two claims", h)
			claimed[h] = c.Name
			g.Expect(owner[h]).To(Equal(c.Name), "claim %s reports %s, whose consumer is %s", c.Name, h, owner[h])
		}
		g.Expect(claimed).To(HaveLen(hosts))
	}).WithTimeout(3 * time.Second).Should(Succeed())
}

// TestStrayHostIsUnbound: a host that names a claim but is not the claim's
// reservation (a binding that lost a race) is unbound, and the reserved host
// is bound: a claim never holds two hosts.
func TestStrayHostIsUnbound(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub", "infra-1")
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	mustCreate(t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}})
	hostInfra(t, infra)

	c := hubClaim("c", "infra-1", nil)
	mustCreate(t, hub, c)
	c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: hostsNS, Name: "h1"}
	g.Expect(hub.Status().Update(ctx, c)).To(Succeed())
	for i, name := range []string{"h0", "h1"} {
		h := bmh(name, i, nil)
		if name == "h0" {
			h.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: "hostfleet.io/v1alpha1", Kind: "HostClaim", Namespace: tenantNS, Name: "c"}
			h.Annotations = map[string]string{hostfleetv1alpha1.AnnotationHub: "hub", hostfleetv1alpha1.AnnotationClaimUID: string(c.UID)}
		}
		mustCreate(t, infra, h)
		h.Status.Provisioning.State = metal3api.StateAvailable
		h.Status.OperationalStatus = metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}
	startAgent(t, f, "infra-1", 2)

	g.Eventually(func(g Gomega) {
		h0, h1 := &metal3api.BareMetalHost{}, &metal3api.BareMetalHost{}
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "h0"}, h0)).To(Succeed())
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "h1"}, h1)).To(Succeed())
		g.Expect(h0.Spec.ConsumerRef).To(BeNil(), "the stray is unbound")
		g.Expect(h0.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationClaimUID))
		g.Expect(h1.Spec.ConsumerRef).NotTo(BeNil())
		g.Expect(h1.Spec.ConsumerRef.Name).To(Equal("c"))
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.BareMetalHost.Name).To(Equal("h1"))
		g.Expect(associated(c)).To(HaveField("Status", metav1.ConditionTrue))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// scene is a hub and an infra-1 plane with a tenant namespace on the hub and,
// on infra-1, the hosts namespace, BMC credentials, a policy admitting tenant
// namespaces and the named hosts, available.
type scene struct {
	f          *planes.Fleet
	hub, infra client.Client
}

// newScene sets a scene up. With bmo, the real baremetal-operator makes the
// hosts available; without, their status is written directly.
func newScene(t *testing.T, g Gomega, bmo bool, hosts ...string) *scene {
	t.Helper()
	f := planes.ForTest(t, "hub", "infra-1")
	s := &scene{f: f, hub: f.Plane("hub").Client, infra: f.Plane("infra-1").Client}
	if bmo {
		f.StartBMOForTest(t, "infra-1")
	}
	mustCreate(t, s.hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}})
	hostInfra(t, s.infra)
	for i, name := range hosts {
		h := bmh(name, i, nil)
		mustCreate(t, s.infra, h)
		if !bmo {
			h.Status.Provisioning.State = metal3api.StateAvailable
			h.Status.OperationalStatus = metal3api.OperationalStatusOK
			g.Expect(s.infra.Status().Update(context.Background(), h)).To(Succeed())
		}
	}
	if bmo {
		waitAvailable(g, s.infra, hosts...)
	}
	return s
}

// updateClaim changes claim c (re-read first, and again on a conflict)
// until the hub takes the update.
func updateClaim(g Gomega, hub client.Client, c *metal3api.HostClaim, change func(*metal3api.HostClaim)) {
	g.Eventually(func() error {
		if err := hub.Get(context.Background(), client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		change(c)
		return hub.Update(context.Background(), c)
	}).WithTimeout(10 * time.Second).Should(Succeed())
}
