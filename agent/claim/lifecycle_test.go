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

	"github.com/hostfleet/hostfleet/agent/hostspec"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func condition(c *metal3api.HostClaim, t string) metav1.Condition {
	if cond := meta.FindStatusCondition(c.Status.Conditions, t); cond != nil {
		return *cond
	}
	return metav1.Condition{}
}

// TestLifecycle drives a claim through the whole pull path with the real
// baremetal-operator: a missing secret is reported and then supplied; the host
// is provisioned with the claim's image and user data and the claim goes Ready;
// a changed hub secret reaches the copy; deleting the claim deprovisions the
// host back to available, removes the copies and only then the claim.
func TestLifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, true, "h0")
	hub, infra := s.hub, s.infra
	startAgent(t, s.f, "infra-1", 2)

	c := hubClaim("web", "infra-1", nil)
	c.Spec.PoweredOn = true
	c.Spec.Image = &metal3api.Image{URL: "http://127.0.0.1:8099/os.qcow2", Checksum: "http://127.0.0.1:8099/os.qcow2.sha256sum"}
	c.Spec.UserData = &corev1.SecretReference{Name: "web-userdata"}
	mustCreate(t, hub, c)

	// The secret does not exist yet: bound, but nothing is deployed, and the
	// claim says what to do.
	key := client.ObjectKeyFromObject(c)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionAssociated).Status).To(Equal(metav1.ConditionTrue))
		s := condition(c, hostfleetv1alpha1.ConditionSynchronized)
		g.Expect(s.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(s.Reason).To(Equal(metal3api.BadUserDataSecretReason))
		g.Expect(s.Message).To(ContainSubstring("secret tenant-a/web-userdata named by spec.userData does not exist; create it"))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Reason).To(Equal(metal3api.BadUserDataSecretReason))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "h0"}, h)).To(Succeed())
	g.Expect(h.Spec.Image).To(BeNil(), "nothing is deployed with half a configuration")

	// Supplying the secret lets the host provision; the claim goes Ready.
	mustCreate(t, hub, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "web-userdata"},
		StringData: map[string]string{"userData": "#cloud-config\nhostname: web\n"}})
	start := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		ready := condition(c, hostfleetv1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(condition(c, hostfleetv1alpha1.ConditionProvisioned).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionSynchronized).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionAvailableForProvisioning).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Status.PoweredOn).To(BeTrue())
	}).WithTimeout(180 * time.Second).WithPolling(time.Second).Should(Succeed())
	t.Logf("provisioned and Ready in %s", time.Since(start).Round(100*time.Millisecond))

	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "h0"}, h)).To(Succeed())
	g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateProvisioned))
	g.Expect(h.Status.Provisioning.Image.URL).To(Equal(c.Spec.Image.URL))
	g.Expect(h.Spec.Online).To(BeTrue())
	copyName := hostspec.CopyName(c, hostspec.UserData)
	g.Expect(h.Spec.UserData).To(Equal(&corev1.SecretReference{Namespace: hostsNS, Name: copyName}))
	cp := &corev1.Secret{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: copyName}, cp)).To(Succeed())
	g.Expect(string(cp.Data["userData"])).To(ContainSubstring("hostname: web"))
	g.Expect(cp.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelClaimUID, string(c.UID)))
	// The agent owns only its fields; BMO's and the creator's stay theirs.
	g.Expect(h.Spec.BMC.Address).To(Equal("ipmi://127.0.0.1:6230"))
	g.Expect(h.Spec.BootMACAddress).To(Equal("00:11:22:33:44:00"))

	// A changed hub secret reaches the copy.
	hubSecret := &corev1.Secret{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "web-userdata"}, hubSecret)).To(Succeed())
	hubSecret.Data["userData"] = []byte("#cloud-config\nhostname: web-2\n")
	g.Expect(hub.Update(ctx, hubSecret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: copyName}, cp)).To(Succeed())
		g.Expect(string(cp.Data["userData"])).To(ContainSubstring("hostname: web-2"))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	// Deleting the claim deprovisions the host; the claim stays until the
	// host is available again and unbound.
	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	sawDeprovisioning := false
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "h0"}, h)).To(Succeed())
		if h.Status.Provisioning.State == metal3api.StateDeprovisioning {
			sawDeprovisioning = true
			g.Expect(h.Spec.ConsumerRef).NotTo(BeNil(), "the host stays bound while it deprovisions")
			g.Expect(hub.Get(ctx, key, &metal3api.HostClaim{})).To(Succeed(), "the claim stays while its host deprovisions")
		}
		err := hub.Get(ctx, key, &metal3api.HostClaim{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "claim gone, got %v", err)
	}).WithTimeout(180 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(sawDeprovisioning).To(BeTrue(), "BMO deprovisioned the host")
	g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateAvailable))
	g.Expect(h.Spec.ConsumerRef).To(BeNil())
	g.Expect(h.Spec.Image).To(BeNil())
	g.Expect(h.Spec.UserData).To(BeNil())
	g.Expect(h.Spec.Online).To(BeFalse())
	err := infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: copyName}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the secret copy is deleted, got %v", err)
}
