package kubectl_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	hfkubectl "github.com/hostfleet/hostfleet/hub/kubectl"
)

// TestExtend: a tenant admin extends a lease with the plugin within the
// tenant's 3h cap; past it, admission refuses and the plugin says how far
// the cap allows; a claim without a lease has nothing to extend.
func TestExtend(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// Fresh planes: the admission policies and the tenant controller run.
	f := planes.ForTestWith(t, planes.Options{Dir: t.TempDir()}, "hub")
	f.HubForTest(t, "hub")
	hub := f.Plane("hub").Client
	g.Expect(hub.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}})).To(Succeed())
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
		MaxLeaseDuration: &metav1.Duration{Duration: 3 * time.Hour},
		Admins:           []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}})).To(Succeed())
	aliceCfg, err := f.AddUser("hub", "alice")
	g.Expect(err).NotTo(HaveOccurred())
	alice := filepath.Join(t.TempDir(), "alice")
	g.Expect(planes.WriteKubeconfig(alice, aliceCfg)).To(Succeed())
	aliceClient, err := client.New(aliceCfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	leased := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-ext", Name: "leased",
		Annotations: map[string]string{hostfleetv1alpha1.AnnotationLeaseFor: "1h"}}}
	g.Eventually(func() error { return aliceClient.Create(ctx, leased) }).WithTimeout(30*time.Second).Should(Succeed(), "alice leases a claim for an hour")
	// No lease controller here: the end is written as it would write it.
	end := leased.CreationTimestamp.Add(time.Hour).UTC()
	delete(leased.Annotations, hostfleetv1alpha1.AnnotationLeaseFor)
	leased.Annotations[hostfleetv1alpha1.AnnotationLeaseUntil] = end.Format(time.RFC3339)
	g.Expect(hub.Update(ctx, leased)).To(Succeed())

	out, err := kubectl(t, alice, "hostfleet", "extend", "leased", "--for", "90m", "-n", "tenant-ext")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("HostClaim tenant-ext/leased: the lease now ends at " + end.Add(90*time.Minute).Format(time.RFC3339) +
		" (was " + end.Format(time.RFC3339) + ")\n"))
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(leased), leased)).To(Succeed())
	g.Expect(leased.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationLeaseUntil, end.Add(90*time.Minute).Format(time.RFC3339)))

	out, err = kubectl(t, alice, "hostfleet", "extend", "leased", "--for", "1h", "-n", "tenant-ext")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("beyond the maxLeaseDuration of tenant ext (3h0m0s from the claim's creation): the lease may end at"))

	g.Expect(aliceClient.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-ext", Name: "open"}})).To(Succeed())
	out, err = kubectl(t, alice, "hostfleet", "extend", "open", "--for", "1h", "-n", "tenant-ext")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("has no lease end"))
}

func TestExtended(t *testing.T) {
	g := NewWithT(t)
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "c",
		Annotations: map[string]string{hostfleetv1alpha1.AnnotationLeaseUntil: "2026-12-01T10:00:00+01:00"}}}
	until, err := hfkubectl.Extended(c, 2*time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(until).To(Equal(time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)))
	c.Annotations[hostfleetv1alpha1.AnnotationReleasedBy] = hostfleetv1alpha1.ReleasedByLease
	_, err = hfkubectl.Extended(c, time.Hour)
	g.Expect(err).To(MatchError(ContainSubstring("is being released")))
	c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationLeaseUntil: "soon"}
	_, err = hfkubectl.Extended(c, time.Hour)
	g.Expect(err).To(MatchError(ContainSubstring(`"soon" is not an RFC 3339 time`)))
}
