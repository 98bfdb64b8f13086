package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestPinWaitsForTheHub: a claim its tenant pinned to the cluster is not
// served until the hub's scheduler admits it (Scheduled True, after its
// host-class checks): the agent writes nothing on it and binds nothing for
// it. Admitted, it is bound, and never to a host of a class the hub keeps
// it off (hostfleet.io/excluded-hosts).
func TestPinWaitsForTheHub(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, false, "gpu", "plain")
	h := &metal3api.BareMetalHost{}
	g.Expect(s.infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "gpu"}, h)).To(Succeed())
	g.Expect(s.infra.Patch(ctx, h, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"example.com/gpu":"yes"}}}`)))).To(Succeed())
	mustCreate(t, s.hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		planes.Tenancy("infra-1", hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{tenantNS}}))
	startAgent(t, s.f, "infra-1", 2)

	pinned := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "pinned",
		Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}}}
	mustCreate(t, s.hub, pinned)
	g.Consistently(func(g Gomega) {
		g.Expect(s.hub.Get(ctx, client.ObjectKeyFromObject(pinned), pinned)).To(Succeed())
		g.Expect(pinned.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationReservedHost))
		g.Expect(pinned.Finalizers).To(BeEmpty())
		g.Expect(pinned.Status.Conditions).To(BeEmpty())
	}).WithTimeout(3*time.Second).Should(Succeed(), "not admitted: not served")

	t.Log("the hub admits the pin, keeping it off the full class gpu: bound to plain")
	g.Expect(s.hub.Patch(ctx, pinned, client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"hostfleet.io/excluded-hosts":"[{\"matchLabels\":{\"example.com/gpu\":\"yes\"}}]"}}}`)))).To(Succeed())
	meta.SetStatusCondition(&pinned.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue,
		Reason: hostfleetv1alpha1.ReasonPinned, Message: "pinned by the tenant to infra-1"})
	g.Expect(s.hub.Status().Update(ctx, pinned)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(s.hub.Get(ctx, client.ObjectKeyFromObject(pinned), pinned)).To(Succeed())
		g.Expect(pinned.Status.BareMetalHost).To(PointTo(HaveField("Name", "plain")))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
