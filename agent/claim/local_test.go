package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/agent/hostspec"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestLocalClaims: with --local-claims, an upstream HostClaim on the
// infrastructure cluster itself, in a namespace the administrator named (a
// forwarded claim arrives the same way, marked by the forwarder), is bound
// and synced by the same code as hub claims, beside a hub claim, with a
// hostfleet.io consumerRef (no hub named) and status written to the local
// claim. A
// local claim the agent is not meant to serve is left alone.
//
// No baremetal-operator here (TestLocalClaimsBesideAnotherController plays
// baremetal-operator's HostClaim controller).
func TestLocalClaims(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, false, "h0", "h1")
	hub, infra, f := s.hub, s.infra, s.f
	mustCreate(t, infra,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-local"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-local", Name: "ud"}, StringData: map[string]string{"userData": "#cloud-config\nlocal: true\n"}},
	)
	startAgent(t, f, "infra-1", 2, func(o *app.Options) { o.LocalClaims, o.LocalClaimNamespaces = true, []string{"tenant-local"} })

	unserved := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "not-mine"}}
	mustCreate(t, infra, unserved)
	local := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-local", Name: "fwd"},
		Spec: metal3api.HostClaimSpec{UserData: &corev1.SecretReference{Name: "ud"}}}
	mustCreate(t, infra, local)
	remote := hubClaim("from-hub", "infra-1", nil)
	mustCreate(t, hub, remote)

	var localHost string
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(local), local)).To(Succeed())
		g.Expect(associated(local)).NotTo(BeNil())
		g.Expect(associated(local)).To(HaveField("Status", metav1.ConditionTrue))
		g.Expect(condition(local, hostfleetv1alpha1.ConditionSynchronized).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(local.Finalizers).To(ContainElement(hostfleetv1alpha1.AgentFinalizer))
		localHost = local.Status.BareMetalHost.Name
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(remote), remote)).To(Succeed())
		g.Expect(associated(remote)).NotTo(BeNil())
		g.Expect(associated(remote)).To(HaveField("Status", metav1.ConditionTrue))
		g.Expect(remote.Status.BareMetalHost.Name).NotTo(Equal(localHost), "one host each")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: localHost}, h)).To(Succeed())
	g.Expect(h.Spec.ConsumerRef).To(Equal(&corev1.ObjectReference{APIVersion: "hostfleet.io/v1alpha1", Kind: "HostClaim", Namespace: "tenant-local", Name: "fwd"}))
	g.Expect(h.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationClaimUID, string(local.UID)))
	g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationHub))
	copyName := hostspec.CopyName(local, hostspec.UserData)
	g.Expect(h.Spec.UserData).To(Equal(&corev1.SecretReference{Namespace: hostsNS, Name: copyName}))
	cp := &corev1.Secret{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: copyName}, cp)).To(Succeed())
	g.Expect(string(cp.Data["userData"])).To(ContainSubstring("local: true"))

	g.Expect(infra.Delete(ctx, local)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(infra.Get(ctx, client.ObjectKeyFromObject(local), &metal3api.HostClaim{}))).To(BeTrue())
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: localHost}, h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
		g.Expect(apierrors.IsNotFound(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: copyName}, &corev1.Secret{}))).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(remote), remote)).To(Succeed())
	g.Expect(associated(remote)).To(HaveField("Status", metav1.ConditionTrue), "the hub claim keeps its host")
	g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(unserved), unserved)).To(Succeed())
	g.Expect(unserved.Finalizers).To(BeEmpty(), "a claim outside the forwarded ones and --local-claim-namespaces is not the agent's")
	g.Expect(unserved.Status.Conditions).To(BeEmpty())
}

// TestLocalClaimsBesideAnotherController: on a cluster where
// baremetal-operator's HostClaim controller also runs (played here by the
// test, as baremetal-operator v0.14 writes: finalizer metal3.io/hostclaim,
// a host's upstream consumerRef, its Associated condition), the agent never
// binds a claim that controller serves, leaves a claim whose host it bound,
// never releases that host nor one carrying a stale hostfleet.io/claim-uid,
// and says so with an Event on the claim. On a claim it serves that the
// other controller reconciles too, it leaves Associated and Ready to it;
// a host an older agent bound with the upstream consumerRef gets the
// agent's.
func TestLocalClaimsBesideAnotherController(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, false, "h0", "h1", "h2", "h3", "h4")
	infra, f := s.infra, s.f
	mustCreate(t, infra, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hf-tenant-a"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: "forwarded"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^hf-"}}})
	forwarded := func(name string, finalizers ...string) *metal3api.HostClaim {
		return &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "hf-tenant-a", Name: name, Finalizers: finalizers,
			Annotations: map[string]string{hostfleetv1alpha1.AnnotationSourceClaimUID: "uid-" + name}}}
	}
	upstreamRef := func(c *metal3api.HostClaim) *corev1.ObjectReference {
		return &corev1.ObjectReference{APIVersion: metal3api.GroupVersion.String(), Kind: "HostClaim", Namespace: c.Namespace, Name: c.Name}
	}
	bindHost := func(name string, c *metal3api.HostClaim, uid string) {
		h := &metal3api.BareMetalHost{}
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: name}, h)).To(Succeed())
		h.Spec.ConsumerRef = upstreamRef(c)
		if uid != "" {
			h.Annotations = map[string]string{hostfleetv1alpha1.AnnotationClaimUID: uid}
		}
		g.Expect(infra.Update(ctx, h)).To(Succeed(), "as baremetal-operator's association does: an Update of the host")
	}

	t.Log("a host an older agent bound to a forwarded claim, with the upstream consumerRef, before this agent starts")
	legacy := forwarded("legacy")
	mustCreate(t, infra, legacy)
	bindHost("h4", legacy, string(legacy.UID))

	t.Log("a forwarded claim baremetal-operator took first (its finalizer) is left to it")
	theirs := forwarded("theirs", metal3api.HostClaimFinalizer)
	mustCreate(t, infra, theirs)
	t.Log("a forwarded claim whose host baremetal-operator bound (no hostfleet.io/claim-uid on it) is left to it, host and all")
	bound := forwarded("bound")
	mustCreate(t, infra, bound)
	bindHost("h2", bound, "")
	t.Log("and so is one whose host baremetal-operator bound over a deleted claim's leftover hostfleet.io/claim-uid")
	stale := forwarded("stale")
	mustCreate(t, infra, stale)
	bindHost("h3", stale, "uid-of-a-deleted-claim")
	t.Log("a forwarded claim nobody else serves is the agent's")
	mine := forwarded("mine")
	mustCreate(t, infra, mine)
	// The agent starts once the other controller's bindings are written:
	// a claim it saw before its host was bound would be anyone's to take.
	startAgent(t, f, "infra-1", 2, func(o *app.Options) { o.LocalClaims, o.OrphanGrace = true, time.Second })

	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(mine), mine)).To(Succeed())
		g.Expect(associated(mine)).To(HaveField("Status", metav1.ConditionTrue))
		for _, c := range []*metal3api.HostClaim{theirs, bound, stale} {
			g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			g.Expect(planes.Events(ctx, infra, c)).To(ContainElement(ContainSubstring(hostfleetv1alpha1.ReasonServedByOtherController)), c.Name)
		}
		h4 := &metal3api.BareMetalHost{}
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "h4"}, h4)).To(Succeed())
		g.Expect(h4.Spec.ConsumerRef.APIVersion).To(Equal(hostfleetv1alpha1.GroupVersion.String()), "the older agent's binding gets the agent's consumerRef")
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(legacy), legacy)).To(Succeed())
		g.Expect(legacy.Status.BareMetalHost).To(HaveField("Name", "h4"), "the claim keeps its host")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, c := range []*metal3api.HostClaim{theirs, bound, stale} {
			g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			g.Expect(c.Finalizers).NotTo(ContainElement(hostfleetv1alpha1.AgentFinalizer), c.Name)
			g.Expect(c.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationReservedHost), c.Name)
			g.Expect(c.Status.Conditions).To(BeEmpty(), "the other controller's to write: %s", c.Name)
		}
		var hosts metal3api.BareMetalHostList
		g.Expect(infra.List(ctx, &hosts, client.InNamespace(hostsNS))).To(Succeed())
		held := map[string]string{}
		for _, h := range hosts.Items {
			if h.Spec.ConsumerRef != nil {
				held[h.Spec.ConsumerRef.Name] = h.Name
			}
		}
		g.Expect(held).To(HaveLen(4), "the agent bound one host, for its own claim only: %v", held)
		g.Expect(held).To(HaveKeyWithValue("bound", "h2"), "the other controller's host is kept, past the agent's orphan grace")
		g.Expect(held).To(HaveKeyWithValue("stale", "h3"), "even with another claim's UID left on it")
		g.Expect(held).To(HaveKey("mine"))
	}).WithTimeout(5 * time.Second).Should(Succeed())

	t.Log("the other controller starts reconciling the agent's claim: its finalizer, its Associated; the agent leaves that to it")
	g.Eventually(func() error {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(mine), mine)).To(Succeed())
		mine.Finalizers = append(mine.Finalizers, metal3api.HostClaimFinalizer)
		if err := infra.Update(ctx, mine); err != nil {
			return err
		}
		meta.SetStatusCondition(&mine.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionAssociated,
			Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonHostAssociated})
		return infra.Status().Update(ctx, mine)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(planes.Events(ctx, infra, mine)).To(ContainElement(ContainSubstring(hostfleetv1alpha1.ReasonTwoHostClaimControllers)))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(mine), mine)).To(Succeed())
		g.Expect(associated(mine)).To(HaveField("Message", ""), "the other controller's Associated stands")
		g.Expect(mine.Finalizers).To(ContainElement(hostfleetv1alpha1.AgentFinalizer), "the agent still serves its claim")
	}).WithTimeout(5 * time.Second).Should(Succeed())
}

// TestLocalClaimHealth: a local claim (a forwarded one arrives the same
// way) is judged as a hub claim is: its failed host is reported on the
// claim's own HostHealthy, which the forwarder mirrors to the hub claim. A
// local claim has no tenant: its hostfleet.io/healing is bounded by the
// defaults (a grace of at least 5 m, never unfenced), and one overstepping
// them is ignored and said so.
func TestLocalClaimHealth(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, false, "h0")
	mustCreate(t, s.infra, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-local"}})
	startAgent(t, s.f, "infra-1", 2, func(o *app.Options) { o.LocalClaims, o.LocalClaimNamespaces = true, []string{"tenant-local"} })
	local := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-local", Name: "fwd",
		Annotations: map[string]string{hostfleetv1alpha1.AnnotationHealing: "Replace,grace=1m"}}}
	mustCreate(t, s.infra, local)
	g.Eventually(func(g Gomega) {
		g.Expect(s.infra.Get(ctx, client.ObjectKeyFromObject(local), local)).To(Succeed())
		g.Expect(local.Status.BareMetalHost).NotTo(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	hostStatus(g, s.infra, "h0", powerFault)
	g.Eventually(func(g Gomega) {
		g.Expect(s.infra.Get(ctx, client.ObjectKeyFromObject(local), local)).To(Succeed())
		hc := condition(local, hostfleetv1alpha1.ConditionHostHealthy)
		g.Expect(hc.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(hc.Reason).To(Equal(hostfleetv1alpha1.ReasonHostFailed), "the defaults: Notify")
		g.Expect(hc.Message).To(ContainSubstring("host hosts/h0 reports power management error"))
		g.Expect(hc.Message).To(ContainSubstring("asks a grace of 1m0s, shorter than the tenant's 5m0s"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	h := &metal3api.BareMetalHost{}
	g.Expect(s.infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "h0"}, h)).To(Succeed())
	g.Expect(h.Spec.ConsumerRef).NotTo(BeNil(), "reported only: not fenced, not released")
}
