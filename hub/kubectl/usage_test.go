package kubectl_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	hfscheme "github.com/hostfleet/hostfleet/internal/scheme"
)

// TestUsage: host-hours per tenant, class and cluster from the clusters'
// UsageLedgers, for a hub administrator only; --since counts from a
// day on.
func TestUsage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	admin, alice := fleet(t)
	c, err := client.New(configOf(t, admin), client.Options{Scheme: hfscheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	tn := &hostfleetv1alpha1.Tenant{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "acme"}, tn)).To(Succeed())
	tn.Spec.LabelSyncPrefixes = []string{"example.com"}
	tn.Spec.Quotas = []hostfleetv1alpha1.ClassQuota{{Name: "large", MaxClaims: 2,
		HostSelector: hostfleetv1alpha1.ClassSelector{MatchLabels: map[string]string{"example.com/size": "large"}}}}
	g.Expect(c.Update(ctx, tn)).To(Succeed())
	tn.Status.Namespaces = []string{ns}
	g.Expect(c.Status().Update(ctx, tn)).To(Succeed())
	rec := &hostfleetv1alpha1.UsageLedger{ObjectMeta: metav1.ObjectMeta{Namespace: "infra-1", Name: "infra-1"}, Spec: hostfleetv1alpha1.UsageLedgerSpec{ClusterName: "infra-1"}}
	g.Expect(c.Create(ctx, rec)).To(Succeed())
	yesterday := time.Now().UTC().AddDate(0, 0, -1)
	rec.Status.Counted = []hostfleetv1alpha1.UsageEntry{
		{Period: yesterday.Format("2006-01-02"), Namespace: ns, Labels: map[string]string{"example.com/size": "large"}, Seconds: 7200},
		{Period: time.Now().UTC().Format("2006-01-02"), Namespace: ns, Labels: map[string]string{"example.com/size": "medium"}, Seconds: 1800},
		{Period: time.Now().UTC().Format("2006-01-02"), Namespace: "tenant-other", Seconds: 99},
	}
	g.Expect(c.Status().Update(ctx, rec)).To(Succeed())

	out, err := kubectl(t, admin, "hostfleet", "usage")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("kubectl hostfleet usage\n%s", out)
	g.Expect(lines(out)).To(Equal([]string{
		"TENANT   CLASS   CLUSTER   HOST-HOURS   SECONDS",
		"acme     (all)   infra-1   2.50         9000",
		"acme     large   infra-1   2.00         7200",
	}))
	out, err = kubectl(t, admin, "hostfleet", "usage", "--tenant", "acme", "--since", time.Now().UTC().Format("2006-01-02"))
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(lines(out)).To(Equal([]string{
		"TENANT   CLASS   CLUSTER   HOST-HOURS   SECONDS",
		"acme     (all)   infra-1   0.50         1800",
	}))
	out, err = kubectl(t, admin, "hostfleet", "usage", "--since", "last week")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring(`--since "last week" is not a day: give YYYY-MM-DD`))
	out, err = kubectl(t, alice, "hostfleet", "usage")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("usage is a hub administrator's view: you may not list usageledgers in any namespace"))
}
