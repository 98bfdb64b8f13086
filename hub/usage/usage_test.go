package usage_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/usage"
)

func TestTotals(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	gpu := map[string]string{"example.com/gpu": "yes"}
	tenants := []hostfleetv1alpha1.Tenant{{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: hostfleetv1alpha1.TenantSpec{LabelSyncPrefixes: []string{"example.com"}, Quotas: []hostfleetv1alpha1.ClassQuota{
			{Name: "gpu", MaxClaims: 1, HostSelector: hostfleetv1alpha1.ClassSelector{MatchLabels: gpu}},
			// By hardware: the ledger keeps no hardware, AllHosts only.
			{Name: "big", MaxClaims: 1, HostSelector: hostfleetv1alpha1.ClassSelector{Hardware: "host.cpu.count >= 64"}}}},
		Status: hostfleetv1alpha1.TenantStatus{Namespaces: []string{"tenant-a"}}}}
	records := []hostfleetv1alpha1.UsageLedger{
		{Spec: hostfleetv1alpha1.UsageLedgerSpec{ClusterName: "c1"}, Status: hostfleetv1alpha1.UsageLedgerStatus{
			Counted: []hostfleetv1alpha1.UsageEntry{
				{Period: "2026-10", Namespace: "tenant-a", Seconds: 1000},
				{Period: "2026-11-26", Namespace: "tenant-a", Labels: gpu, Seconds: 100},
				{Period: "2026-11-27", Namespace: "tenant-a", Seconds: 10},
				{Period: "2026-11-27", Namespace: "nobody", Seconds: 99},
			},
			Open: []hostfleetv1alpha1.OpenUsage{{Host: "hosts/h0", Namespace: "tenant-a", Labels: gpu, Since: metav1.NewTime(now.Add(-time.Minute))}}}},
		{Spec: hostfleetv1alpha1.UsageLedgerSpec{ClusterName: "c2"}, Status: hostfleetv1alpha1.UsageLedgerStatus{
			Counted: []hostfleetv1alpha1.UsageEntry{{Period: "2026-11-27", Namespace: "tenant-a", Seconds: 5}}}},
	}
	g.Expect(usage.Totals(records, tenants, now, time.Time{})).To(Equal([]usage.Total{
		{Tenant: "a", Class: "", Cluster: "c1", Seconds: 1000 + 100 + 10 + 60},
		{Tenant: "a", Class: "", Cluster: "c2", Seconds: 5},
		{Tenant: "a", Class: "gpu", Cluster: "c1", Seconds: 100 + 60},
	}), "every ledger; a namespace of no tenant left out")
	g.Expect(usage.Totals(records, tenants, now, now.Add(-30*time.Second))).To(Equal([]usage.Total{
		{Tenant: "a", Class: "", Cluster: "c1", Seconds: 10 + 30},
		{Tenant: "a", Class: "", Cluster: "c2", Seconds: 5},
		{Tenant: "a", Class: "gpu", Cluster: "c1", Seconds: 30},
	}), "since today: today's periods, and the open interval from since")
	g.Expect(usage.Totals(records, tenants, now, time.Date(2026, 10, 20, 0, 0, 0, 0, time.UTC))).To(ContainElement(
		usage.Total{Tenant: "a", Class: "", Cluster: "c1", Seconds: 1000 + 100 + 10 + 60}), "a compacted month counts whole from a day in it")
}
