package scheduler_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
)

// TestClassQuota: tenant a may hold one claim in host class gpu. A second
// gpu claim is held back (Scheduled and Ready say ClassQuotaExceeded, with
// the class's use), a claim that does not ask for gpu is placed but kept off
// gpu hosts, the Tenant reports the class's use, and the held claim is
// placed as soon as the first goes.
func TestClassQuota(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub := schedulerPlane(t, time.Hour)
	gpu := map[string]string{"example.com/gpu": "yes"}
	lab(g, hub, map[string][]hostfleetv1alpha1.HostPool{
		"c1": {{Labels: gpu, Namespaces: []string{"tenant-a"}, Total: 3, Available: 3}, {Namespaces: []string{"tenant-a"}, Total: 3, Available: 3}},
	})
	ta := gpuClass(g, hub, gpu)
	get := getter(hub)

	first := createClaim(g, hub, "gpu-1", func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = gpu })
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, first).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("a second gpu claim is held back, and says why on Scheduled and Ready")
	second := createClaim(g, hub, "gpu-2", func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = gpu })
	g.Eventually(func(g Gomega) {
		get(g, second)
		g.Expect(second.Labels).NotTo(HaveKey(hostfleetv1alpha1.LabelCluster))
		g.Expect(scheduled(second).Reason).To(Equal(hostfleetv1alpha1.ReasonClassQuotaExceeded))
		g.Expect(scheduled(second).Message).To(ContainSubstring("class gpu holds 1 of its 1 claims"))
		ready := meta.FindStatusCondition(second.Status.Conditions, hostfleetv1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(hostfleetv1alpha1.ReasonClassQuotaExceeded))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("a claim that does not ask for gpu is placed, kept off the full class's hosts; the Tenant reports the class's use")
	plain := createClaim(g, hub, "plain", nil)
	g.Eventually(func(g Gomega) {
		get(g, plain)
		g.Expect(plain.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
		g.Expect(plain.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationExcludedHosts, `[{"matchLabels":{"example.com/gpu":"yes"}}]`))
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ta.Status.Classes).To(Equal([]hostfleetv1alpha1.ClassUsage{{Name: "gpu", Claims: 1, MaxClaims: 1}}))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("the first gpu claim goes: the held one is placed, and Ready no longer says the class holds it")
	g.Expect(hub.Delete(ctx, first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(g, second)
		g.Expect(second.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
		g.Expect(scheduled(second).Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced))
		g.Expect(meta.FindStatusCondition(second.Status.Conditions, hostfleetv1alpha1.ConditionReady)).To(BeNil())
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

// gpuClass gives tenant a host class gpu of one claim, by a merge patch
// (the tenant controller writes the Tenant too).
func gpuClass(g Gomega, hub client.Client, gpu map[string]string) *hostfleetv1alpha1.Tenant {
	ta := &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	g.Expect(hub.Patch(context.Background(), ta, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"quotas":[{"name":"gpu","maxClaims":1,"hostSelector":{"matchLabels":{"example.com/gpu":"yes"}}}]}}`)))).To(Succeed())
	g.Expect(ta.Spec.Quotas).To(Equal([]hostfleetv1alpha1.ClassQuota{{Name: "gpu", MaxClaims: 1, HostSelector: hostfleetv1alpha1.ClassSelector{MatchLabels: gpu}}}))
	return ta
}

// TestPinHeldByItsClass: a tenant's pin is judged as a placement is. With
// class gpu full, a claim pinned to c1 that asks for gpu is not admitted
// (Scheduled and Ready say ClassQuotaExceeded; not counted in the class,
// not excluded from anything, served by no agent: conditions.Admitted),
// a pinned claim that does not ask for gpu is admitted and kept off gpu
// hosts, and the held pin is admitted once the class has room.
func TestPinHeldByItsClass(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub := schedulerPlane(t, time.Hour)
	gpu := map[string]string{"example.com/gpu": "yes"}
	lab(g, hub, map[string][]hostfleetv1alpha1.HostPool{
		"c1": {{Labels: gpu, Namespaces: []string{"tenant-a"}, Total: 3, Available: 3}, {Namespaces: []string{"tenant-a"}, Total: 3, Available: 3}},
	})
	gpuClass(g, hub, gpu)
	get := getter(hub)
	pin := func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelCluster] = "c1" }

	first := createClaim(g, hub, "gpu-1", func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = gpu })
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, first).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("a gpu claim pinned to c1 while gpu is full: held where it is pinned, not admitted")
	held := createClaim(g, hub, "gpu-pinned", func(c *metal3api.HostClaim) { pin(c); c.Spec.HostSelector.MatchLabels = gpu })
	g.Eventually(func(g Gomega) {
		get(g, held)
		g.Expect(scheduled(held)).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", hostfleetv1alpha1.ReasonClassQuotaExceeded),
			HaveField("Message", ContainSubstring("class gpu holds 1 of its 1 claims"))))
		g.Expect(meta.FindStatusCondition(held.Status.Conditions, hostfleetv1alpha1.ConditionReady)).To(PointTo(
			HaveField("Reason", hostfleetv1alpha1.ReasonClassQuotaExceeded)))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(conditions.Admitted(held)).To(BeFalse(), "no agent serves it")
	g.Expect(held.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationPlacedBy))

	t.Log("a plain claim pinned to c1: admitted, kept off the full class's hosts; the class counts only gpu-1")
	plain := createClaim(g, hub, "plain-pinned", pin)
	g.Eventually(func(g Gomega) {
		get(g, plain)
		g.Expect(scheduled(plain)).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", hostfleetv1alpha1.ReasonPinned)))
		g.Expect(plain.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationExcludedHosts, `[{"matchLabels":{"example.com/gpu":"yes"}}]`))
		ta := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ta.Status.Classes).To(Equal([]hostfleetv1alpha1.ClassUsage{{Name: "gpu", Claims: 1, MaxClaims: 1}}))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(conditions.Admitted(plain)).To(BeTrue())

	t.Log("gpu-1 goes: the held pin is admitted, and Ready no longer says the class holds it")
	g.Expect(hub.Delete(ctx, first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(g, held)
		g.Expect(scheduled(held)).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", hostfleetv1alpha1.ReasonPinned)))
		g.Expect(meta.FindStatusCondition(held.Status.Conditions, hostfleetv1alpha1.ConditionReady)).To(BeNil())
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(conditions.Admitted(held)).To(BeTrue())

	t.Log("a second gpu pin now waits for the admitted one: pins count as placements do")
	again := createClaim(g, hub, "gpu-pinned-2", func(c *metal3api.HostClaim) { pin(c); c.Spec.HostSelector.MatchLabels = gpu })
	g.Eventually(func(g Gomega) {
		g.Expect(scheduled(get(g, again)).Reason).To(Equal(hostfleetv1alpha1.ReasonClassQuotaExceeded))
	}).WithTimeout(20 * time.Second).Should(Succeed())
}
