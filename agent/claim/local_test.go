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
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestLocalClaims: with --local-claims, an upstream HostClaim created on the
// infrastructure cluster itself (as a forwarded claim arrives) is bound and
// synced by the same code as hub claims, beside a hub claim, with the upstream
// metal3.io consumerRef and status written to the local claim.
//
// No baremetal-operator here: local mode is for clusters where nothing else
// binds HostClaims (baremetal-operator v0.13.2 registers a HostClaim
// controller whose Reconcile does nothing; e2e/suites/forwarding shows it).
func TestLocalClaims(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, false, "h0", "h1")
	hub, infra, f := s.hub, s.infra, s.f
	mustCreate(t, infra,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-local"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-local", Name: "ud"}, StringData: map[string]string{"userData": "#cloud-config\nlocal: true\n"}},
	)
	startAgent(t, f, "infra-1", 2, func(o *app.Options) { o.LocalClaims = true })

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
}
