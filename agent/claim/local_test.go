package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// and synced by the same code as hub claims, beside a hub claim, with the
// upstream metal3.io consumerRef and status written to the local claim. A
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
	g.Expect(h.Spec.ConsumerRef).To(Equal(&corev1.ObjectReference{APIVersion: "metal3.io/v1alpha1", Kind: "HostClaim", Namespace: "tenant-local", Name: "fwd"}))
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
// a host's consumerRef), the agent never binds a claim that controller
// serves, leaves a claim whose host it bound, never releases that host, and
// says so with an Event on the claim.
func TestLocalClaimsBesideAnotherController(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, false, "h0", "h1", "h2")
	infra, f := s.infra, s.f
	mustCreate(t, infra, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hf-tenant-a"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: "forwarded"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^hf-"}}})
	startAgent(t, f, "infra-1", 2, func(o *app.Options) { o.LocalClaims, o.OrphanGrace = true, time.Second })
	forwarded := func(name string, finalizers ...string) *metal3api.HostClaim {
		return &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "hf-tenant-a", Name: name, Finalizers: finalizers,
			Annotations: map[string]string{hostfleetv1alpha1.AnnotationSourceClaimUID: "uid-" + name}}}
	}

	t.Log("a forwarded claim baremetal-operator took first (its finalizer) is left to it")
	theirs := forwarded("theirs", metal3api.HostClaimFinalizer)
	mustCreate(t, infra, theirs)
	t.Log("a forwarded claim whose host baremetal-operator bound (no hostfleet.io/claim-uid on it) is left to it, host and all")
	bound := forwarded("bound")
	mustCreate(t, infra, bound)
	h2 := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "h2"}, h2)).To(Succeed())
	h2.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: metal3api.GroupVersion.String(), Kind: "HostClaim", Namespace: bound.Namespace, Name: bound.Name}
	g.Expect(infra.Update(ctx, h2)).To(Succeed(), "as baremetal-operator's association does: an Update of the host")
	t.Log("a forwarded claim nobody else serves is the agent's")
	mine := forwarded("mine")
	mustCreate(t, infra, mine)

	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(mine), mine)).To(Succeed())
		g.Expect(associated(mine)).To(HaveField("Status", metav1.ConditionTrue))
		for _, c := range []*metal3api.HostClaim{theirs, bound} {
			g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			g.Expect(planes.Events(ctx, infra, c)).To(ContainElement(ContainSubstring(hostfleetv1alpha1.ReasonServedByOtherController)), c.Name)
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, c := range []*metal3api.HostClaim{theirs, bound} {
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
		g.Expect(held).To(HaveLen(2), "the agent bound one host, for its own claim only: %v", held)
		g.Expect(held).To(HaveKeyWithValue("bound", "h2"), "the other controller's host is kept, past the agent's orphan grace")
		g.Expect(held).To(HaveKey("mine"))
	}).WithTimeout(5 * time.Second).Should(Succeed())
}
