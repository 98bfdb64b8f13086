package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/admission"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/ledger"
	"github.com/hostfleet/hostfleet/hub/metrics"
	"github.com/hostfleet/hostfleet/hub/usage"
	"github.com/hostfleet/hostfleet/internal/permissions"
	"github.com/hostfleet/hostfleet/internal/setup"
)

func TestMain(m *testing.M) { planes.Main(m) }

// TestHostileCluster: cluster c1's agent, hostile, writes its HostUsage
// report as it likes. It cannot bill tenant b, none of whose claims was
// ever placed on c1, nor bill tenant a's claim for tenant b; it cannot make
// the hub count an interval twice, shrink one the hub has counted, or count
// time before the hub placed the claim there; it cannot write what the
// hub settled. Each refusal is said in the report's Accepted condition, a
// Warning Event and the hub's metric, once, though the hub read the
// report before its own write showed. The legitimate interval is counted
// once, and so is one the cluster reports after its claim is gone.
func TestHostileCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	g.Expect(admission.Install(ctx, hub)).To(Succeed())
	f.ManagerForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&ledger.Reconciler{Client: mgr.GetClient(), Skew: time.Minute, Memory: time.Hour, MaxGone: ledger.MaxGone}).
			SetupWithManager(context.Background(), mgr, setup.Options{})
	})
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-b", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "b"}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent-cluster"}, Rules: permissions.AgentClusterNamespace()},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "agent"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "agent-cluster"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: hostfleetv1alpha1.AgentHubGroup("c1")}}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	cfg, err := f.AddUser("hub", hostfleetv1alpha1.AgentHubUser("c1"), hostfleetv1alpha1.AgentHubGroup("c1"), hostfleetv1alpha1.AgentSharedGroup)
	g.Expect(err).NotTo(HaveOccurred())
	agent, err := client.New(cfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	placedAt := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
	// placed is a claim the hub placed on cluster two hours ago.
	placed := func(ns, name, cluster string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{hostfleetv1alpha1.LabelCluster: cluster},
			Annotations: map[string]string{hostfleetv1alpha1.AnnotationPlacedBy: hostfleetv1alpha1.PlacedByScheduler,
				hostfleetv1alpha1.AnnotationPlacedAt: placedAt.Format(time.RFC3339)}}}
		g.Expect(hub.Create(ctx, c)).To(Succeed())
		return c
	}
	a1, b1 := placed("tenant-a", "a1", "c1"), placed("tenant-b", "b1", "c3")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(a1), a1)).To(Succeed())
		g.Expect(a1.Finalizers).To(ContainElement(hostfleetv1alpha1.UsageFinalizer), "held for the ledger")
	}).WithTimeout(20 * time.Second).Should(Succeed())

	span := func(claim types.UID, ns string, from, to time.Duration) hostfleetv1alpha1.UsageInterval {
		return hostfleetv1alpha1.UsageInterval{Claim: claim, Namespace: ns, Host: "hosts/h0",
			Start: metav1.NewTime(placedAt.Add(from)), End: metav1.NewTime(placedAt.Add(to))}
	}
	g.Expect(agent.Create(ctx, &hostfleetv1alpha1.HostUsage{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"},
		Spec: hostfleetv1alpha1.HostUsageSpec{ClusterName: "c1"}})).To(Succeed())
	// report writes the cluster's report as its agent, whole.
	report := func(intervals ...hostfleetv1alpha1.UsageInterval) {
		g.Eventually(func() error {
			u := &hostfleetv1alpha1.HostUsage{}
			if err := agent.Get(ctx, client.ObjectKey{Namespace: "c1", Name: "c1"}, u); err != nil {
				return err
			}
			u.Status.Intervals = intervals
			return agent.Status().Update(ctx, u)
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	settled := func(g Gomega, n int) *hostfleetv1alpha1.HostUsage {
		u := &hostfleetv1alpha1.HostUsage{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "c1", Name: "c1"}, u)).To(Succeed())
		g.Expect(u.Status.Settled).To(HaveLen(n))
		return u
	}
	totals := func(g Gomega) map[string]int64 {
		var ls hostfleetv1alpha1.UsageLedgerList
		g.Expect(hub.List(ctx, &ls)).To(Succeed())
		tenants := []hostfleetv1alpha1.Tenant{
			{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: hostfleetv1alpha1.TenantStatus{Namespaces: []string{"tenant-a"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: hostfleetv1alpha1.TenantStatus{Namespaces: []string{"tenant-b"}}}}
		out := map[string]int64{}
		for _, tot := range usage.Totals(ls.Items, tenants, time.Now(), time.Time{}) {
			out[tot.Tenant] += tot.Seconds
		}
		return out
	}
	refusedEvent := func(g Gomega, reason, says string) {
		var events eventsv1.EventList
		g.Expect(hub.List(ctx, &events, client.InNamespace("c1"))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(HaveField("Regarding.Name", "c1"), HaveField("Type", corev1.EventTypeWarning),
			HaveField("Reason", reason), HaveField("Note", ContainSubstring(says)))))
	}

	t.Log("c1 bills tenant b, whose claims were never placed on c1, 100 hours; and tenant a's claim to tenant b")
	unknown0 := testutil.ToFloat64(metrics.UsageRefused.WithLabelValues("c1", hostfleetv1alpha1.ReasonUsageUnknownClaim))
	report(span(b1.UID, "tenant-b", -100*time.Hour, 0), span(a1.UID, "tenant-b", 90*time.Minute, 2*time.Hour))
	g.Eventually(func(g Gomega) {
		u := settled(g, 2)
		cond := meta.FindStatusCondition(u.Status.Conditions, hostfleetv1alpha1.ConditionUsageAccepted)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonUsageRefused))
		g.Expect(cond.Message).To(And(ContainSubstring("2 refused"), ContainSubstring("no claim with UID "+string(b1.UID)+" was placed on this cluster"),
			ContainSubstring("names namespace \"tenant-b\"; the hub placed the claim from tenant-a")))
		refusedEvent(g, hostfleetv1alpha1.ReasonUsageUnknownClaim, string(b1.UID))
		refusedEvent(g, hostfleetv1alpha1.ReasonUsageWrongNamespace, string(a1.UID))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(testutil.ToFloat64(metrics.UsageRefused.WithLabelValues("c1", hostfleetv1alpha1.ReasonUsageUnknownClaim)) - unknown0).To(BeNumerically("==", 1))

	t.Log("the hub's read of the report that does not show what it wrote yet (a cache behind) counts and says nothing again")
	stale := &hostfleetv1alpha1.HostUsage{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "c1", Name: "c1"}, stale)).To(Succeed())
	told := stale.DeepCopy()
	stale.Status.Settled, stale.Status.Refused = nil, nil
	g.Expect(hub.Status().Patch(ctx, stale, client.MergeFrom(told))).To(Succeed())
	g.Eventually(func(g Gomega) { settled(g, 2) }).WithTimeout(20*time.Second).Should(Succeed(), "written again")
	g.Expect(testutil.ToFloat64(metrics.UsageRefused.WithLabelValues("c1", hostfleetv1alpha1.ReasonUsageUnknownClaim)) - unknown0).To(BeNumerically("==", 1))
	g.Consistently(func(g Gomega) { g.Expect(totals(g)).To(BeEmpty()) }).WithTimeout(2*time.Second).Should(Succeed(), "nobody billed")

	t.Log("the hour a1 was bound is counted, once: sent again, and again shorter, it adds nothing")
	hour := span(a1.UID, "tenant-a", 0, time.Hour)
	report(hour)
	g.Eventually(func(g Gomega) {
		settled(g, 1)
		g.Expect(totals(g)).To(Equal(map[string]int64{"a": 3600}))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	report()
	g.Eventually(func(g Gomega) { settled(g, 0) }).WithTimeout(20 * time.Second).Should(Succeed())
	report(hour)
	g.Eventually(func(g Gomega) { settled(g, 1) }).WithTimeout(20 * time.Second).Should(Succeed())
	report(span(a1.UID, "tenant-a", 0, 10*time.Minute))
	g.Eventually(func(g Gomega) { settled(g, 1) }).WithTimeout(20 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(totals(g)).To(Equal(map[string]int64{"a": 3600})) }).WithTimeout(2*time.Second).Should(Succeed(),
		"the same hour twice, or shorter, adds nothing and takes nothing")

	t.Log("time before the hub placed a1 on c1 is refused")
	report(span(a1.UID, "tenant-a", -3*time.Hour, -2*time.Hour))
	g.Eventually(func(g Gomega) {
		refusedEvent(g, hostfleetv1alpha1.ReasonUsageOutsidePlacement, "outside its placement")
	}).WithTimeout(20 * time.Second).Should(Succeed())

	t.Log("c1 may not write what the hub settled")
	u := &hostfleetv1alpha1.HostUsage{}
	g.Expect(agent.Get(ctx, client.ObjectKey{Namespace: "c1", Name: "c1"}, u)).To(Succeed())
	orig := u.DeepCopy()
	u.Status.Settled = []string{"anything"}
	// A patch without the resourceVersion: the hub writes the status too,
	// and only the admission policy is to answer.
	g.Expect(agent.Status().Patch(ctx, u, client.MergeFrom(orig))).To(MatchError(ContainSubstring("what the hub settled of it and whether it accepted it")))

	t.Log("a1 deleted: gone once the ledger holds its end; an interval reported after counts up to it")
	g.Expect(hub.Delete(ctx, a1)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(a1), a1)) }).WithTimeout(20 * time.Second).Should(BeTrue())
	report(span(a1.UID, "tenant-a", time.Hour, 90*time.Minute))
	g.Eventually(func(g Gomega) { g.Expect(totals(g)).To(Equal(map[string]int64{"a": 3600 + 1800})) }).WithTimeout(20 * time.Second).Should(Succeed())
}

// TestNewClusterFirstReport: three new clusters' agents write their first
// reports, each billing tenant a 100 hours of a claim the hub never
// placed, in the interval format and in the totals format of agents of
// earlier releases (status.closed): c1 before the hub's ledger controller
// runs, c2 as it starts, c3 once the hub keeps the others' ledgers.
// Whenever the hub's
// first read comes, nothing is counted: every interval goes through the
// placement check, and a total with no claim is nothing the hub reads.
func TestNewClusterFirstReport(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	g.Expect(admission.Install(ctx, hub)).To(Succeed())
	clusters := []string{"c1", "c2", "c3"}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent-cluster"}, Rules: permissions.AgentClusterNamespace()},
	}
	for _, c := range clusters {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: c, Name: "agent"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "agent-cluster"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: hostfleetv1alpha1.AgentHubGroup(c)}}})
	}
	for _, o := range objs {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	start := time.Now().Add(-200 * time.Hour).UTC().Truncate(time.Second)
	bill := fmt.Sprintf(`{"status":{"intervals":[{"claim":"never-placed","namespace":"tenant-a","host":"hosts/h0","start":%q,"end":%q}],`+
		`"closed":[{"period":%q,"namespace":"tenant-a","seconds":360000}]}}`,
		start.Format(time.RFC3339), start.Add(100*time.Hour).Format(time.RFC3339), start.Format("2006-01-02"))
	// report writes cluster's first report as its agent: the object, then
	// its status with the bill.
	report := func(g Gomega, cluster string) {
		cfg, err := f.AddUser("hub", hostfleetv1alpha1.AgentHubUser(cluster), hostfleetv1alpha1.AgentHubGroup(cluster), hostfleetv1alpha1.AgentSharedGroup)
		g.Expect(err).NotTo(HaveOccurred())
		agent, err := client.New(cfg, client.Options{Scheme: f.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		u := &hostfleetv1alpha1.HostUsage{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: cluster}, Spec: hostfleetv1alpha1.HostUsageSpec{ClusterName: cluster}}
		g.Expect(agent.Create(ctx, u)).To(Succeed())
		g.Expect(agent.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(bill)))).To(Succeed())
	}
	report(g, "c1")
	second := make(chan error, 1)
	go func() {
		g := NewGomega(func(message string, _ ...int) { second <- errors.New(message) })
		report(g, "c2")
		close(second)
	}()
	f.ManagerForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&ledger.Reconciler{Client: mgr.GetClient(), Skew: time.Minute, Memory: time.Hour, MaxGone: ledger.MaxGone}).
			SetupWithManager(context.Background(), mgr, setup.Options{})
	})
	g.Eventually(second).WithTimeout(30 * time.Second).Should(BeClosed())
	g.Eventually(func(g Gomega) {
		for _, c := range clusters[:2] {
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: c, Name: c}, &hostfleetv1alpha1.UsageLedger{})).To(Succeed())
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
	report(g, "c3")

	refused := func(g Gomega, cluster string) {
		u := &hostfleetv1alpha1.HostUsage{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: cluster}, u)).To(Succeed())
		cond := meta.FindStatusCondition(u.Status.Conditions, hostfleetv1alpha1.ConditionUsageAccepted)
		g.Expect(cond).NotTo(BeNil(), cluster)
		g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonUsageRefused), cluster)
		g.Expect(cond.Message).To(ContainSubstring("no claim with UID never-placed was placed on this cluster"), cluster)
	}
	nothingCounted := func(g Gomega) {
		var ls hostfleetv1alpha1.UsageLedgerList
		g.Expect(hub.List(ctx, &ls)).To(Succeed())
		g.Expect(ls.Items).To(HaveLen(len(clusters)))
		for _, l := range ls.Items {
			g.Expect(l.Status.Counted).To(BeEmpty(), "%s bills nobody", l.Name)
		}
	}
	g.Eventually(func(g Gomega) {
		for _, c := range clusters {
			refused(g, c)
		}
		nothingCounted(g)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(nothingCounted).WithTimeout(2 * time.Second).Should(Succeed())
}
