package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestBMCDriverFailuresReachTheClaim: what goes wrong on a driven host is on
// the claim, in words a tenant can act on and without BMC addresses; fixed,
// the claim goes Ready.
func TestBMCDriverFailuresReachTheClaim(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s, b, h, iso := drivenScene(t, g, "rf1", 1)
	hub, infra := s.hub, s.infra

	c := hubClaim("broken-image", "infra-1", nil)
	c.Spec.PoweredOn = true
	c.Spec.Image = &metal3api.Image{URL: iso.URL + "/missing.iso", DiskFormat: ptr.To("live-iso")}
	mustCreate(t, hub, c)
	key := client.ObjectKeyFromObject(c)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionAssociated).Status).To(Equal(metav1.ConditionTrue))
		ready := condition(c, hostfleetv1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring("deploying to host hosts/rf1 failed (provisioning error): check spec.image"))
		g.Expect(ready.Message).NotTo(ContainSubstring(b.HostPort()), "BMC addresses never reach the hub")
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
	g.Expect(h.Status.ErrorMessage).To(ContainSubstring("404"), "the infrastructure cluster's administrator sees the cause")

	t.Log("the tenant fixes the image: the host boots it and the claim goes Ready")
	g.Eventually(func() error {
		if err := hub.Get(ctx, key, c); err != nil {
			return err
		}
		c.Spec.Image.URL = iso.URL + "/live.iso"
		return hub.Update(ctx, c)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		ready := condition(c, hostfleetv1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
	}).WithTimeout(60 * time.Second).Should(Succeed())
	_, url, _ := b.Media()
	g.Expect(url).To(Equal(iso.URL + "/live.iso"))
}
