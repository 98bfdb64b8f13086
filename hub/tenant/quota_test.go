package tenant_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestMaxClaimsAtAdmission: maxClaims becomes a ResourceQuota that the API
// server's quota admission enforces when claims are created, not after.
//
// The test planes run no kube-controller-manager, whose quota controller
// writes a new quota's first status (hard, used: 0); the test writes that one
// status as it would. Everything else is the API server's own admission.
func TestMaxClaimsAtAdmission(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, hub := labHub(t)
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab", MaxClaims: ptr.To[int32](2)}})).To(Succeed())
	quota := &corev1.ResourceQuota{}
	g.Eventually(func() error {
		return hub.Get(ctx, client.ObjectKey{Namespace: "tenant-q", Name: hostfleetv1alpha1.TenantQuota}, quota)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	quota.Status.Hard = quota.Spec.Hard
	quota.Status.Used = corev1.ResourceList{hostfleetv1alpha1.QuotaClaims: resource.MustParse("0")}
	g.Expect(hub.Status().Update(ctx, quota)).To(Succeed())

	// Quota admission reads quotas from the API server's cache: until the
	// cache has the status above, a claim passes uncounted. The first claim is
	// made again until the quota counts it.
	g.Eventually(func(g Gomega) {
		c0 := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-q", Name: "c0"}}
		g.Expect(hub.Create(ctx, c0)).To(Succeed())
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
		used := quota.Status.Used[hostfleetv1alpha1.QuotaClaims]
		if used.IsZero() {
			g.Expect(hub.Delete(ctx, c0)).To(Succeed())
		}
		g.Expect(used.Value()).To(BeEquivalentTo(1), "the quota counts the first claim")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(hub.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-q", Name: "c1"}})).To(Succeed())
	err := hub.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-q", Name: "c2"}})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("exceeded quota: " + hostfleetv1alpha1.TenantQuota))
	t.Logf("the third claim: %v", err)
}
