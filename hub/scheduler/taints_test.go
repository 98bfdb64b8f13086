package scheduler_test

import (
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestTaintedPoolPlacement: cluster tainted offers only hosts tainted gpu
// (more of them than plain has): a claim that tolerates gpu is placed
// there, one that does not goes to plain, and once plain is full it waits
// rather than take a tainted host.
func TestTaintedPoolPlacement(t *testing.T) {
	g := NewWithT(t)
	hub := schedulerPlane(t, time.Hour)
	lab(g, hub, map[string][]hostfleetv1alpha1.HostPool{
		"tainted": {{Namespaces: []string{"tenant-a"}, Taints: []string{"gpu"}, Total: 5, Available: 5}},
		"plain":   {{Namespaces: []string{"tenant-a"}, Total: 1, Available: 1}},
	})
	get := getter(hub)
	tolerant := createClaim(g, hub, "tolerant", func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationTolerations] = "gpu" })
	plain := createClaim(g, hub, "plain", nil)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, tolerant).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "tainted"))
		g.Expect(get(g, plain).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "plain"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	late := createClaim(g, hub, "late", nil)
	g.Eventually(func(g Gomega) {
		get(g, late)
		g.Expect(scheduled(late).Reason).To(Equal(hostfleetv1alpha1.ReasonNoCapacity))
		g.Expect(scheduled(late).Message).To(ContainSubstring("tainted (0 free matching hosts"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, late).Labels).NotTo(HaveKey(hostfleetv1alpha1.LabelCluster))
	}).WithTimeout(2 * time.Second).Should(Succeed())
}
