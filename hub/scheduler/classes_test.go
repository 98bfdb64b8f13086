package scheduler_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
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
	ta := &hostfleetv1alpha1.Tenant{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
	ta.Spec.Quotas = []hostfleetv1alpha1.ClassQuota{{Name: "gpu", MaxClaims: 1, HostSelector: hostfleetv1alpha1.ClassSelector{MatchLabels: gpu}}}
	g.Expect(hub.Update(ctx, ta)).To(Succeed())
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
