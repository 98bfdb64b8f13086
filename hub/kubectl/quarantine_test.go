package kubectl_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestQuarantinedHosts: on an infrastructure cluster, `kubectl hostfleet
// quarantined` lists the hosts replaced behind their claims, and
// `return-host` returns one to the pool; a host that is not quarantined is
// refused.
func TestQuarantinedHosts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "infra-1")
	infra := f.Plane("infra-1").Client
	g.Expect(infra.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())
	q := healing.Quarantine{Since: metav1.NewTime(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)), Claim: "tenant-a/web",
		Reason: "power management error", Fenced: true}
	for name, ann := range map[string]map[string]string{"failed": {hostfleetv1alpha1.AnnotationQuarantined: q.String()}, "fine": nil} {
		g.Expect(infra.Create(ctx, &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name, Annotations: ann},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "ipmi://127.0.0.1:623", CredentialsName: "bmc"}}})).To(Succeed())
	}
	admin := filepath.Join(t.TempDir(), "admin")
	g.Expect(planes.WriteKubeconfig(admin, f.Plane("infra-1").Config)).To(Succeed())

	out, err := kubectl(t, admin, "hostfleet", "quarantined", "-A")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`HOST\s+SINCE\s+CLAIM\s+REASON\s+FENCED\s+STATE\nhosts/failed\s+2026-11-28T12:00:00Z\s+tenant-a/web\s+power management error\s+true`))
	g.Expect(out).NotTo(ContainSubstring("hosts/fine"))

	out, err = kubectl(t, admin, "hostfleet", "return-host", "fine", "-n", "hosts")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("host hosts/fine is not quarantined"))
	out, err = kubectl(t, admin, "hostfleet", "return-host", "failed", "-n", "hosts")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("host hosts/failed returned to the pool (quarantined 2026-11-28T12:00:00Z for claim tenant-a/web: power management error)"))
	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: "failed"}, h)).To(Succeed())
	g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationQuarantined))
	out, err = kubectl(t, admin, "hostfleet", "quarantined", "-A")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("no quarantined hosts\n"))
}
