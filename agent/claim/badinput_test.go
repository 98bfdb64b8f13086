package claim_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/hostspec"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestBadInputs: a namespace no HostDeployPolicy admits, a secret reference
// to another namespace, and a bound host that goes into error each yield a
// condition that says what to fix, without BMC details.
func TestBadInputs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, true, "h0") // the policy admits ^tenant- only
	hub, infra := s.hub, s.infra
	// Tenant b's namespace, which the cluster serves and no policy admits.
	mustCreate(t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "outsiders"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		planes.Tenancy("infra-1", hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{tenantNS}},
			hostfleetv1alpha1.ServedTenant{Name: "b", Namespaces: []string{"outsiders"}}))
	startAgent(t, s.f, "infra-1", 2)

	t.Log("a namespace that no HostDeployPolicy admits")
	outsider := hubClaim("x", "infra-1", nil)
	outsider.Namespace = "outsiders"
	mustCreate(t, hub, outsider)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(outsider), outsider)).To(Succeed())
		cond := associated(outsider)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonNoDeployPolicy))
		g.Expect(cond.Message).To(ContainSubstring("no HostDeployPolicy in any namespace admits claims from namespace outsiders; ask the cluster administrator to admit it"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("a secret in another namespace")
	c := hubClaim("c", "infra-1", nil)
	c.Spec.UserData = &corev1.SecretReference{Name: "theirs", Namespace: "outsiders"}
	mustCreate(t, hub, c)
	key := client.ObjectKeyFromObject(c)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		s := condition(c, hostfleetv1alpha1.ConditionSynchronized)
		g.Expect(s.Reason).To(Equal(metal3api.BadUserDataSecretReason))
		g.Expect(s.Message).To(ContainSubstring("secrets must be in the claim's namespace tenant-a"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	mutate(g, hub, key, c, func(c *metal3api.HostClaim) { c.Spec.UserData = nil })
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(120 * time.Second).Should(Succeed())

	t.Log("a secret whose copy the infrastructure cluster refuses")
	mustCreate(t, hub, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "sa-token",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
		Type: corev1.SecretTypeServiceAccountToken})
	mutate(g, hub, key, c, func(c *metal3api.HostClaim) { c.Spec.UserData = &corev1.SecretReference{Name: "sa-token"} })
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		s := condition(c, hostfleetv1alpha1.ConditionSynchronized)
		g.Expect(s.Reason).To(Equal(metal3api.BadUserDataSecretReason))
		g.Expect(s.Message).To(ContainSubstring("secret tenant-a/sa-token named by spec.userData cannot be copied to the host"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("a secret at the size limit is copied whole")
	big := make([]byte, 1024*1024-16)
	for i := range big {
		big[i] = 'x'
	}
	mustCreate(t, hub, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "big"}, Data: map[string][]byte{"userData": big}})
	mutate(g, hub, key, c, func(c *metal3api.HostClaim) { c.Spec.UserData = &corev1.SecretReference{Name: "big"} })
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionSynchronized).Status).To(Equal(metav1.ConditionTrue))
		cp := &corev1.Secret{}
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: hostspec.CopyName(c, hostspec.UserData)}, cp)).To(Succeed())
		g.Expect(cp.Data["userData"]).To(HaveLen(len(big)))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	mutate(g, hub, key, c, func(c *metal3api.HostClaim) { c.Spec.UserData = nil })

	t.Log("the bound host goes into error: its BMC credentials lose the password")
	mutate(g, infra, client.ObjectKey{Namespace: hostsNS, Name: "bmc"}, &corev1.Secret{}, func(s *corev1.Secret) {
		s.Data["password"] = nil
	})
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		avail := condition(c, hostfleetv1alpha1.ConditionAvailableForProvisioning)
		g.Expect(avail.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(avail.Reason).To(Equal(hostfleetv1alpha1.ReasonHostError))
		g.Expect(avail.Message).To(ContainSubstring("the infrastructure cluster's administrator must fix it"))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
	}).WithTimeout(120 * time.Second).Should(Succeed())
	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "h0"}, h)).To(Succeed())
	g.Expect(h.Status.ErrorMessage).NotTo(BeEmpty(), "baremetal-operator reports the error on the host")
	raw, _ := json.Marshal(c.Status)
	g.Expect(string(raw)).NotTo(ContainSubstring(h.Status.ErrorMessage), "the host's own error message stays on the infrastructure cluster")
	g.Expect(string(raw)).NotTo(ContainSubstring("ipmi://"))
	t.Logf("the claim says: %s", condition(c, hostfleetv1alpha1.ConditionAvailableForProvisioning).Message)
}
