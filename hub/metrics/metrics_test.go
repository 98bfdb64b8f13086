package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/metrics"
)

func TestMain(m *testing.M) { planes.Main(m) }

func cond(t string, s metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: reason, LastTransitionTime: metav1.Now()}
}

func TestPhaseAndFeedback(t *testing.T) {
	g := NewWithT(t)
	now := metav1.Now()
	for _, tc := range []struct {
		name            string
		labels          map[string]string
		conds           []metav1.Condition
		deleting, bound bool
		phase, feedback string
	}{
		{"new", nil, nil, false, false, metrics.PhaseUnplaced, "pending"},
		{"placed", map[string]string{hostfleetv1alpha1.LabelCluster: "c1"}, nil, false, false, metrics.PhasePlaced, "pending"},
		{"bound", map[string]string{hostfleetv1alpha1.LabelCluster: "c1"},
			[]metav1.Condition{cond(hostfleetv1alpha1.ConditionAssociated, metav1.ConditionTrue, "BareMetalHostAssociated")}, false, false, metrics.PhaseBound, "pending"},
		{"remote, bound, stale", map[string]string{hostfleetv1alpha1.LabelCluster: "c1", hostfleetv1alpha1.LabelKind: hostfleetv1alpha1.KindRemote},
			[]metav1.Condition{cond(hostfleetv1alpha1.ConditionReady, metav1.ConditionFalse, hostfleetv1alpha1.ReasonClusterUnavailable)}, false, true, metrics.PhaseBound, "stale"},
		{"ready", map[string]string{hostfleetv1alpha1.LabelCluster: "c1"},
			[]metav1.Condition{cond(hostfleetv1alpha1.ConditionReady, metav1.ConditionTrue, "Ready")}, false, false, metrics.PhaseReady, "fresh"},
		{"deleting", map[string]string{hostfleetv1alpha1.LabelCluster: "c1"},
			[]metav1.Condition{cond(hostfleetv1alpha1.ConditionReady, metav1.ConditionTrue, "Ready")}, true, false, metrics.PhaseDeleting, "fresh"},
	} {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}, Status: metal3api.HostClaimStatus{Conditions: tc.conds}}
		if tc.deleting {
			c.DeletionTimestamp = &now
		}
		if tc.bound {
			c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h0"}
		}
		g.Expect(metrics.Phase(c)).To(Equal(tc.phase), tc.name)
		g.Expect(metrics.Feedback(c)).To(Equal(tc.feedback), tc.name)
	}
	g.Expect(metrics.PoolName(hostfleetv1alpha1.HostPool{})).To(Equal("default"))
	g.Expect(metrics.PoolName(hostfleetv1alpha1.HostPool{Labels: map[string]string{"z.io/b": "2", "a.io/a": "1"}, FailureDomain: "r1"})).
		To(Equal("a.io/a=1,z.io/b=2,failure-domain=r1"))
}

// TestCollector: the hub's gauges from what a real API server holds.
func TestCollector(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub := planes.ForTest(t, "hub").Plane("hub").Client
	created := time.Now()
	mk := func(o client.Object) { g.Expect(hub.Create(ctx, o)).To(Succeed()) }
	mk(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}})
	mk(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}})
	mk(&metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "waiting"}})
	ready := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "ready", Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "c1"}}}
	mk(ready)
	ready.Status.Conditions = []metav1.Condition{cond(hostfleetv1alpha1.ConditionReady, metav1.ConditionTrue, "Ready")}
	g.Expect(hub.Status().Update(ctx, ready)).To(Succeed())
	inv := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"}, Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "c1"}}
	mk(inv)
	inv.Status.Pools = []hostfleetv1alpha1.HostPool{{Labels: map[string]string{"example.com/size": "large"}, Total: 3, Available: 1}}
	inv.Status.LastUpdated = &metav1.Time{Time: time.Unix(1_800_000_000, 0)}
	g.Expect(hub.Status().Update(ctx, inv)).To(Succeed())
	addon := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: hostfleetv1alpha1.AddonName}}
	mk(addon)

	col := metrics.NewCollector(hub)
	col.Now = func() time.Time { return created.Add(time.Hour) }
	g.Expect(testutil.CollectAndCompare(col, strings.NewReader(`
# HELP hostfleet_agent_available 1 when the cluster's hostfleet-agent add-on is Available (its health Lease renewed), else 0.
# TYPE hostfleet_agent_available gauge
hostfleet_agent_available{cluster="c1"} 0
# HELP hostfleet_claims HostClaims on the hub, by tenant, cluster (empty: not placed) and phase.
# TYPE hostfleet_claims gauge
hostfleet_claims{cluster="",phase="Unplaced",tenant="a"} 1
hostfleet_claims{cluster="c1",phase="Ready",tenant="a"} 1
# HELP hostfleet_hosts Hosts the agents report in their HostInventory, by cluster, pool and state (available or in_use).
# TYPE hostfleet_hosts gauge
hostfleet_hosts{cluster="c1",pool="example.com/size=large",state="available"} 1
hostfleet_hosts{cluster="c1",pool="example.com/size=large",state="in_use"} 2
# HELP hostfleet_inventory_last_update_timestamp_seconds When the cluster's agent last read its hosts for the HostInventory (Unix seconds).
# TYPE hostfleet_inventory_last_update_timestamp_seconds gauge
hostfleet_inventory_last_update_timestamp_seconds{cluster="c1"} 1.8e+09
`), "hostfleet_agent_available", "hostfleet_claims", "hostfleet_hosts", "hostfleet_inventory_last_update_timestamp_seconds")).To(Succeed())
	n, err := testutil.GatherAndCount(registry(col), "hostfleet_claims_oldest_waiting_seconds")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(1), "one tenant and cluster has a waiting claim")

	t.Log("usage: the clusters' ledgers, summed per tenant, class and cluster, open hosts up to now")
	gpu := map[string]string{"example.com/gpu": "yes"}
	tenant := &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
		LabelSyncPrefixes: []string{"example.com"}, Quotas: []hostfleetv1alpha1.ClassQuota{{Name: "gpu", MaxClaims: 1,
			HostSelector: hostfleetv1alpha1.ClassSelector{MatchLabels: gpu}}}}}
	mk(tenant)
	tenant.Status.Namespaces = []string{"tenant-a"}
	g.Expect(hub.Status().Update(ctx, tenant)).To(Succeed())
	rec := &hostfleetv1alpha1.UsageLedger{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"}, Spec: hostfleetv1alpha1.UsageLedgerSpec{ClusterName: "c1"}}
	mk(rec)
	rec.Status = hostfleetv1alpha1.UsageLedgerStatus{
		Counted: []hostfleetv1alpha1.UsageEntry{{Period: "2026-11-26", Namespace: "tenant-a", Labels: gpu, Seconds: 100}, {Period: "2026-11-27", Namespace: "tenant-a", Seconds: 20}},
		Open:    []hostfleetv1alpha1.OpenUsage{{Host: "hosts/h0", Claim: "u1", Namespace: "tenant-a", Since: metav1.NewTime(created.Add(time.Hour - time.Minute))}}}
	g.Expect(hub.Status().Update(ctx, rec)).To(Succeed())
	g.Eventually(func() error {
		return testutil.CollectAndCompare(col, strings.NewReader(`
# HELP hostfleet_usage_host_seconds_total Seconds the hosts of a cluster were bound to a tenant's claims, as the hub counted them in the cluster's UsageLedger; class is a host class of the tenant, or empty for all its hosts.
# TYPE hostfleet_usage_host_seconds_total counter
hostfleet_usage_host_seconds_total{class="",cluster="c1",tenant="a"} 180
hostfleet_usage_host_seconds_total{class="gpu",cluster="c1",tenant="a"} 100
`), "hostfleet_usage_host_seconds_total")
	}).WithTimeout(10 * time.Second).Should(Succeed())

	t.Log("the open host closes 30 s before that scrape, by the agent's clock: the counter stays at what it showed until the ledger passes it")
	rec.Status.Open = nil
	rec.Status.Counted = append(rec.Status.Counted, hostfleetv1alpha1.UsageEntry{Period: "2026-11-27", Namespace: "tenant-a", Seconds: 30})
	g.Expect(hub.Status().Update(ctx, rec)).To(Succeed())
	usageSeries := func(all, gpu int) string {
		return fmt.Sprintf(`
# HELP hostfleet_usage_host_seconds_total Seconds the hosts of a cluster were bound to a tenant's claims, as the hub counted them in the cluster's UsageLedger; class is a host class of the tenant, or empty for all its hosts.
# TYPE hostfleet_usage_host_seconds_total counter
hostfleet_usage_host_seconds_total{class="",cluster="c1",tenant="a"} %d
hostfleet_usage_host_seconds_total{class="gpu",cluster="c1",tenant="a"} %d
`, all, gpu)
	}
	g.Eventually(func(g Gomega) {
		var l hostfleetv1alpha1.UsageLedger
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(rec), &l)).To(Succeed())
		g.Expect(l.Status.Open).To(BeEmpty())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(testutil.CollectAndCompare(col, strings.NewReader(usageSeries(180, 100)), "hostfleet_usage_host_seconds_total")).To(Succeed(),
		"150 s counted, 180 s shown before: 180")
	rec.Status.Counted = append(rec.Status.Counted, hostfleetv1alpha1.UsageEntry{Period: "2026-11-27", Namespace: "tenant-a", Seconds: 60})
	g.Expect(hub.Status().Update(ctx, rec)).To(Succeed())
	g.Eventually(func() error {
		return testutil.CollectAndCompare(col, strings.NewReader(usageSeries(210, 100)), "hostfleet_usage_host_seconds_total")
	}).WithTimeout(10*time.Second).Should(Succeed(), "the ledger passes it: 210 s")
}

func registry(c prometheus.Collector) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(c)
	return r
}
