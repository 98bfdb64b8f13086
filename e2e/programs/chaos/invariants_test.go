package chaos

import (
	"context"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestMain(m *testing.M) { planes.Main(m) }

// TestCheckFindsViolations: the end-of-run check is not a formality. On
// planes where a host holds a claim that is gone, a claim names a host that
// does not name it back, another holds two hosts, and copies outlive their
// claims, a free host is powered on and a BMC got a command twice, it
// reports each of them, and does not call the fleet converged.
func TestCheckFindsViolations(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub", "infra-1")
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	for _, ns := range []string{tenantNS} {
		g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	g.Expect(infra.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())

	claim := func(name string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name,
			Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, Annotations: planes.PlacedBy()}}
		g.Expect(hub.Create(ctx, c)).To(Succeed())
		return c
	}
	host := func(name string, holder *metal3api.HostClaim, uid string) {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name}}
		if holder != nil {
			h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "HostClaim", Namespace: holder.Namespace, Name: holder.Name}
			h.Annotations = map[string]string{hostfleetv1alpha1.AnnotationClaimUID: uid}
		}
		g.Expect(infra.Create(ctx, h)).To(Succeed())
	}
	twice := claim("twice")
	host("h1", twice, string(twice.UID))
	host("h2", twice, string(twice.UID))
	gone := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "gone"}}
	host("h3", gone, "no-such-uid")
	lonely := claim("lonely")
	lonely.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h4"}
	g.Expect(hub.Status().Update(ctx, lonely)).To(Succeed())
	host("h4", nil, "")
	g.Expect(infra.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "gone-userdata",
		Labels: map[string]string{hostfleetv1alpha1.LabelClaimUID: "no-such-uid"}}})).To(Succeed())
	g.Expect(hub.Create(ctx, &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "gone",
		Labels: map[string]string{hostfleetv1alpha1.LabelClaimUID: "no-such-uid"}}})).To(Succeed())

	// host-0000 is free while its BMC has it on, and the BMC got an On
	// while on.
	b := redfish.Start(redfish.Options{PoweredOn: true})
	defer b.Close()
	host("host-0000", nil, "")
	free := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: "host-0000"}, free)).To(Succeed())
	free.Status.Provisioning.State = metal3api.StateAvailable
	g.Expect(infra.Status().Update(ctx, free)).To(Succeed())
	g.Expect(b.ResetForTest("On")).To(Succeed())

	c, err := check(ctx, f, []string{"infra-1"}, []*redfish.BMC{b})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Violations).To(ContainElements(
		ContainSubstring("claim twice holds two hosts or more"),
		ContainSubstring(`host infra-1/h3 holds claim tenant-acme/gone (uid "no-such-uid"), which does not exist`),
		ContainSubstring("claim lonely names host hosts/h4, which does not name it back"),
		ContainSubstring("secret copy infra-1/hosts/gone-userdata outlives its claim"),
		ContainSubstring("HardwareData copy gone outlives its claim"),
		ContainSubstring("host infra-1/host-0000 is free while its BMC has it On"),
	))
	g.Expect(c.Repeats).To(Equal([]string{"host infra-1/host-0000: On while On"}))
	g.Expect(c.Converged()).To(BeFalse())
}
