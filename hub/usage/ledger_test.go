package usage_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiusage "github.com/hostfleet/hostfleet/hub/api/usage"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/usage"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

func iv(claim, ns, host string, from, to time.Duration) hostfleetv1alpha1.UsageInterval {
	return hostfleetv1alpha1.UsageInterval{Claim: types.UID(claim), Namespace: ns, Host: host,
		Start: metav1.NewTime(t0.Add(from)), End: metav1.NewTime(t0.Add(to))}
}

// sum is every second a ledger has counted.
func sum(l hostfleetv1alpha1.UsageLedgerStatus) int64 {
	var n int64
	for _, e := range l.Counted {
		n += e.Seconds
	}
	return n
}

func TestIngest(t *testing.T) {
	placedA := usage.Placement{UID: "a1", Namespace: "tenant-a", From: t0}
	base := usage.Input{Now: t0.Add(3 * time.Hour), Skew: time.Minute, Memory: 24 * time.Hour, MaxGone: 100,
		Placed: []usage.Placement{placedA}}
	with := func(f func(in *usage.Input)) usage.Input {
		in := base
		in.Placed = append([]usage.Placement(nil), base.Placed...)
		f(&in)
		return in
	}
	for _, tc := range []struct {
		name    string
		in      usage.Input
		counted int64
		refused []string // reasons
		settled int
	}{
		{name: "an hour of a claim placed here: counted",
			in: with(func(in *usage.Input) {
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("a1", "tenant-a", "hosts/h0", 0, time.Hour)}
			}),
			counted: 3600, settled: 1},
		{name: "a claim never placed here: refused, settled",
			in: with(func(in *usage.Input) {
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("b9", "tenant-b", "hosts/h0", 0, time.Hour)}
			}),
			refused: []string{hostfleetv1alpha1.ReasonUsageUnknownClaim}, settled: 1},
		{name: "another tenant's namespace on a claim placed here: refused",
			in: with(func(in *usage.Input) {
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("a1", "tenant-b", "hosts/h0", 0, time.Hour)}
			}),
			refused: []string{hostfleetv1alpha1.ReasonUsageWrongNamespace}, settled: 1},
		{name: "before the claim was placed: refused",
			in: with(func(in *usage.Input) {
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("a1", "tenant-a", "hosts/h0", -time.Hour, time.Hour)}
			}),
			refused: []string{hostfleetv1alpha1.ReasonUsageOutsidePlacement}, settled: 1},
		{name: "within the clock skew of the placement: counted from the placement",
			in: with(func(in *usage.Input) {
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("a1", "tenant-a", "hosts/h0", -30*time.Second, time.Hour)}
			}), counted: 3600, settled: 1},
		{name: "in the future: refused",
			in: with(func(in *usage.Input) {
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("a1", "tenant-a", "hosts/h0", 0, 5*time.Hour)}
			}),
			refused: []string{hostfleetv1alpha1.ReasonUsageInvalid}, settled: 1},
		{name: "ends before it starts: refused",
			in: with(func(in *usage.Input) {
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("a1", "tenant-a", "hosts/h0", time.Hour, 0)}
			}),
			refused: []string{hostfleetv1alpha1.ReasonUsageInvalid}, settled: 1},
		{name: "the same time on two hosts counts once",
			in: with(func(in *usage.Input) {
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("a1", "tenant-a", "hosts/h0", 0, time.Hour), iv("a1", "tenant-a", "hosts/h1", 0, time.Hour)}
			}), counted: 3600, settled: 2},
		{name: "overlapping intervals count their union",
			in: with(func(in *usage.Input) {
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("a1", "tenant-a", "hosts/h0", 0, time.Hour), iv("a1", "tenant-a", "hosts/h1", 30*time.Minute, 2*time.Hour)}
			}), counted: 7200, settled: 2},
		{name: "settled before: not looked at again",
			in: with(func(in *usage.Input) {
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("b9", "tenant-b", "hosts/h0", 0, time.Hour)}
				in.Report.Settled = []string{apiusage.Key(iv("b9", "tenant-b", "hosts/h0", 0, time.Hour))}
			}), settled: 1},
		{name: "a claim gone, remembered: counted up to its end",
			in: with(func(in *usage.Input) {
				in.Placed = nil
				in.Ledger.Claims = []hostfleetv1alpha1.LedgerClaim{{UID: "g1", Namespace: "tenant-a", From: metav1.NewTime(t0), To: &metav1.Time{Time: t0.Add(time.Hour)}}}
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("g1", "tenant-a", "hosts/h0", 0, time.Hour+30*time.Second)}
			}), counted: 3600, settled: 1},
		{name: "a claim gone, remembered, past its end by more than the skew: refused",
			in: with(func(in *usage.Input) {
				in.Placed = nil
				in.Ledger.Claims = []hostfleetv1alpha1.LedgerClaim{{UID: "g1", Namespace: "tenant-a", From: metav1.NewTime(t0), To: &metav1.Time{Time: t0.Add(time.Hour)}}}
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("g1", "tenant-a", "hosts/h0", 0, 2*time.Hour)}
			}), refused: []string{hostfleetv1alpha1.ReasonUsageOutsidePlacement}, settled: 1},
		{name: "time already counted for the claim: adds nothing",
			in: with(func(in *usage.Input) {
				in.Ledger.Claims = []hostfleetv1alpha1.LedgerClaim{{UID: "a1", Namespace: "tenant-a", From: metav1.NewTime(t0),
					Counted: []hostfleetv1alpha1.Span{{Start: metav1.NewTime(t0), End: metav1.NewTime(t0.Add(time.Hour))}}}}
				in.Report.Intervals = []hostfleetv1alpha1.UsageInterval{iv("a1", "tenant-a", "hosts/h9", 10*time.Minute, 50*time.Minute)}
			}), settled: 1},
		{name: "open hosts: one per claim placed here, others refused",
			in: with(func(in *usage.Input) {
				in.Report.Open = []hostfleetv1alpha1.OpenUsage{
					{Host: "hosts/h0", Claim: "a1", Namespace: "tenant-a", Since: metav1.NewTime(t0)},
					{Host: "hosts/h1", Claim: "a1", Namespace: "tenant-a", Since: metav1.NewTime(t0.Add(time.Minute))},
					{Host: "hosts/h2", Claim: "b9", Namespace: "tenant-b", Since: metav1.NewTime(t0)},
					{Host: "hosts/h3", Namespace: "tenant-a", Since: metav1.NewTime(t0)},
				}
			}), refused: []string{hostfleetv1alpha1.ReasonUsageOutsidePlacement, hostfleetv1alpha1.ReasonUsageUnknownClaim, hostfleetv1alpha1.ReasonUsageUnknownClaim}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			res := usage.Ingest(tc.in)
			g.Expect(res.Counted).To(Equal(tc.counted))
			g.Expect(sum(res.Ledger) - sum(tc.in.Ledger)).To(Equal(tc.counted))
			var reasons []string
			for _, r := range res.Refused {
				reasons = append(reasons, r.Reason)
				g.Expect(r.Message).NotTo(BeEmpty())
			}
			g.Expect(reasons).To(ConsistOf(tc.refused))
			g.Expect(res.Settled).To(HaveLen(tc.settled))
			g.Expect(res.Ledger.Refused - tc.in.Ledger.Refused).To(BeNumerically("==", countIntervals(res.Refused)))
			again := tc.in
			again.Ledger, again.Report.Settled = res.Ledger, nil
			g.Expect(usage.Ingest(again).Counted).To(BeZero(), "the same report again counts nothing")
		})
	}
}

func countIntervals(rs []usage.Refusal) int {
	n := 0
	for _, r := range rs {
		if len(r.Key) < 5 || r.Key[:5] != "open/" {
			n++
		}
	}
	return n
}

// TestIngestMemory: a claim gone is remembered for Memory, and at most
// MaxGone of them, its time counted up to its end; a claim placed here is
// kept whatever its age; the ledger's claims end when the hub records
// their end, or when they are no longer placed here.
func TestIngestMemory(t *testing.T) {
	g := NewWithT(t)
	in := usage.Input{Now: t0.Add(time.Hour), Skew: time.Minute, Memory: 24 * time.Hour, MaxGone: 2,
		Placed: []usage.Placement{{UID: "a1", Namespace: "tenant-a", From: t0}, {UID: "a2", Namespace: "tenant-a", From: t0}},
		Ended:  map[types.UID]bool{"a2": true},
		Ledger: hostfleetv1alpha1.UsageLedgerStatus{Claims: []hostfleetv1alpha1.LedgerClaim{
			{UID: "moved", Namespace: "tenant-a", From: metav1.NewTime(t0)},
			{UID: "old", Namespace: "tenant-a", From: metav1.NewTime(t0.Add(-72 * time.Hour)), To: &metav1.Time{Time: t0.Add(-48 * time.Hour)}},
			{UID: "g1", Namespace: "tenant-a", From: metav1.NewTime(t0.Add(-3 * time.Hour)), To: &metav1.Time{Time: t0.Add(-2 * time.Hour)}},
			{UID: "g2", Namespace: "tenant-a", From: metav1.NewTime(t0.Add(-3 * time.Hour)), To: &metav1.Time{Time: t0.Add(-time.Hour)}},
		}}}
	l := usage.Ingest(in).Ledger
	var uids []types.UID
	for _, c := range l.Claims {
		uids = append(uids, c.UID)
		g.Expect(c.To).NotTo(BeNil(), "%s: every claim here is gone", c.UID)
	}
	g.Expect(uids).To(ConsistOf(types.UID("a2"), types.UID("moved")),
		"a2 ended now and moved is no longer placed here: the newest two gone; old is past memory, g1 and g2 past MaxGone; a1 has counted nothing")
}

// TestIngestFirstReport: a cluster's first report, read when the hub
// makes its ledger, goes through the same checks as every later one: a
// cluster that reports before the hub's first read bills no tenant it did
// not serve.
func TestIngestFirstReport(t *testing.T) {
	g := NewWithT(t)
	in := usage.Input{Now: t0.Add(200 * time.Hour), Report: hostfleetv1alpha1.HostUsageStatus{Intervals: []hostfleetv1alpha1.UsageInterval{
		{Claim: "never-placed", Namespace: "tenant-a", Host: "hosts/h0", Start: metav1.NewTime(t0), End: metav1.NewTime(t0.Add(100 * time.Hour))},
	}}}
	res := usage.Ingest(in)
	g.Expect(sum(res.Ledger)).To(BeZero())
	g.Expect(res.Counted).To(BeZero())
	g.Expect(res.Refused).To(ConsistOf(HaveField("Reason", hostfleetv1alpha1.ReasonUsageUnknownClaim)))
}

// FuzzIngest: whatever a cluster reports, in whatever order and however
// often, no counted total goes down, the same report twice counts once,
// and nothing is counted for a claim never placed here.
func FuzzIngest(f *testing.F) {
	f.Add(int64(0), int64(3600), uint8(0), uint8(0), "tenant-a", int64(60), int64(7200), uint8(1))
	f.Add(int64(-100), int64(10), uint8(1), uint8(2), "tenant-b", int64(-5), int64(5), uint8(0))
	f.Fuzz(func(t *testing.T, s1, e1 int64, c1, h1 uint8, ns string, s2, e2 int64, c2 uint8) {
		claims := []types.UID{"a1", "a2", "b9"}
		mk := func(s, e int64, c, h uint8, ns string) hostfleetv1alpha1.UsageInterval {
			return hostfleetv1alpha1.UsageInterval{Claim: claims[int(c)%len(claims)], Namespace: ns, Host: "hosts/h" + string(rune('0'+h%4)),
				Start: metav1.NewTime(t0.Add(time.Duration(s%100000) * time.Second)), End: metav1.NewTime(t0.Add(time.Duration(e%100000) * time.Second))}
		}
		in := usage.Input{Now: t0.Add(10 * time.Hour), Skew: time.Minute, Memory: time.Hour, MaxGone: 1,
			Placed: []usage.Placement{{UID: "a1", Namespace: "tenant-a", From: t0}, {UID: "a2", Namespace: "tenant-a", From: t0.Add(time.Hour)}},
		}
		var ledger hostfleetv1alpha1.UsageLedgerStatus
		totals := func(l hostfleetv1alpha1.UsageLedgerStatus) map[string]int64 {
			out := map[string]int64{}
			for _, e := range l.Counted {
				out[e.Period+"/"+e.Namespace] += e.Seconds
			}
			return out
		}
		for _, report := range [][]hostfleetv1alpha1.UsageInterval{
			{mk(s1, e1, c1, h1, ns)}, {mk(s2, e2, c2, h1+1, "tenant-a"), mk(s1, e1, c1, h1, ns)}, {mk(s1, e1, c1, h1, ns)},
		} {
			in.Ledger = ledger
			in.Report = hostfleetv1alpha1.HostUsageStatus{Intervals: report}
			res := usage.Ingest(in)
			before, after := totals(ledger), totals(res.Ledger)
			for k, v := range before {
				if after[k] < v {
					t.Fatalf("total %s went down: %d -> %d", k, v, after[k])
				}
			}
			for k := range after {
				if k[len(k)-len("tenant-b"):] == "tenant-b" {
					t.Fatalf("counted for tenant-b, whose claim b9 was never placed here: %v", after)
				}
			}
			again := in
			again.Ledger = res.Ledger
			if n := usage.Ingest(again).Counted; n != 0 {
				t.Fatalf("the same report twice counted %d s more", n)
			}
			ledger = res.Ledger
			in.Now = in.Now.Add(time.Minute)
		}
	})
}

// openA1 is claim a1 placed at t0, its host open since then, as the hub
// ingests it an hour later: the input and its result.
func openA1(g Gomega) (usage.Input, usage.Result) {
	open := hostfleetv1alpha1.OpenUsage{Host: "hosts/h0", Claim: "a1", Namespace: "tenant-a", Since: metav1.NewTime(t0)}
	in := usage.Input{Now: t0.Add(time.Hour), Skew: time.Minute, Memory: 24 * time.Hour, MaxGone: 100,
		Placed: []usage.Placement{{UID: "a1", Namespace: "tenant-a", From: t0}},
		Report: hostfleetv1alpha1.HostUsageStatus{Open: []hostfleetv1alpha1.OpenUsage{open}}}
	res := usage.Ingest(in)
	g.Expect(res.Ledger.Open).To(HaveLen(1))
	return in, res
}

// TestIngestVanished: an open host the hub took is counted when it closes
// (its interval), and, when it vanishes from the report without closing (a
// host deleted while bound, a cluster restored to before its binding), up
// to when the hub learns of it: Totals never shows less than it showed.
func TestIngestVanished(t *testing.T) {
	g := NewWithT(t)
	in, res := openA1(g)
	g.Expect(res.Counted).To(BeZero(), "open: counted up to now by Totals, not yet in the ledger")
	ledgers := func(l hostfleetv1alpha1.UsageLedgerStatus) []hostfleetv1alpha1.UsageLedger {
		return []hostfleetv1alpha1.UsageLedger{{Spec: hostfleetv1alpha1.UsageLedgerSpec{ClusterName: "c1"}, Status: l}}
	}
	tenants := []hostfleetv1alpha1.Tenant{{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: hostfleetv1alpha1.TenantStatus{Namespaces: []string{"tenant-a"}}}}
	g.Expect(usage.Totals(ledgers(res.Ledger), tenants, in.Now, time.Time{})).To(ConsistOf(usage.Total{Tenant: "a", Cluster: "c1", Seconds: 3600}))

	t.Log("it closes: its interval is counted, and nothing more")
	closed := in
	closed.Now, closed.Ledger = t0.Add(2*time.Hour), res.Ledger
	closed.Report = hostfleetv1alpha1.HostUsageStatus{Intervals: []hostfleetv1alpha1.UsageInterval{iv("a1", "tenant-a", "hosts/h0", 0, 90*time.Minute)}}
	g.Expect(usage.Ingest(closed).Counted).To(BeNumerically("==", 5400))

	t.Log("it vanishes: counted up to now, and Totals shows no less than before")
	gone := in
	gone.Now, gone.Ledger, gone.Report = t0.Add(2*time.Hour), res.Ledger, hostfleetv1alpha1.HostUsageStatus{}
	after := usage.Ingest(gone)
	g.Expect(after.Counted).To(BeNumerically("==", 7200))
	g.Expect(after.Ledger.Open).To(BeEmpty())
	g.Expect(usage.Totals(ledgers(after.Ledger), tenants, gone.Now, time.Time{})).To(ConsistOf(usage.Total{Tenant: "a", Cluster: "c1", Seconds: 7200}))

	t.Log("rebound on the restored cluster: the new open host counts from the end of what was counted")
	rebound := gone
	rebound.Ledger = after.Ledger
	rebound.Report.Open = []hostfleetv1alpha1.OpenUsage{{Host: "hosts/h1", Claim: "a1", Namespace: "tenant-a", Since: metav1.NewTime(t0.Add(90 * time.Minute))}}
	res = usage.Ingest(rebound)
	g.Expect(usage.Totals(ledgers(res.Ledger), tenants, t0.Add(3*time.Hour), time.Time{})).To(ConsistOf(usage.Total{Tenant: "a", Cluster: "c1", Seconds: 3 * 3600}))
}

// TestIngestReleaseReportedLate: the hub learns a claim has let go of its
// host (no finalizer of the agent left) before the cluster's report says
// the host was released: the open host of that claim is neither refused
// nor counted as vanished, Totals shows it up to the claim's end, and the
// interval that closes it counts End − Start.
func TestIngestReleaseReportedLate(t *testing.T) {
	g := NewWithT(t)
	in, res := openA1(g)

	ended := in
	ended.Now, ended.Ledger, ended.Ended = t0.Add(2*time.Hour), res.Ledger, map[types.UID]bool{"a1": true}
	res = usage.Ingest(ended)
	g.Expect(res.Refused).To(BeEmpty(), "the report was written before the release")
	g.Expect(res.Counted).To(BeZero(), "not vanished: its interval comes")
	g.Expect(res.Ledger.Open).To(HaveLen(1))
	ledgers := []hostfleetv1alpha1.UsageLedger{{Spec: hostfleetv1alpha1.UsageLedgerSpec{ClusterName: "c1"}, Status: res.Ledger}}
	tenants := []hostfleetv1alpha1.Tenant{{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: hostfleetv1alpha1.TenantStatus{Namespaces: []string{"tenant-a"}}}}
	g.Expect(usage.Totals(ledgers, tenants, t0.Add(5*time.Hour), time.Time{})).To(ConsistOf(usage.Total{Tenant: "a", Cluster: "c1", Seconds: 7200}),
		"shown up to the claim's end, not now")

	closed := ended
	closed.Now, closed.Ledger, closed.Placed, closed.Ended = t0.Add(2*time.Hour+time.Minute), res.Ledger, nil, nil
	closed.Report = hostfleetv1alpha1.HostUsageStatus{Intervals: []hostfleetv1alpha1.UsageInterval{iv("a1", "tenant-a", "hosts/h0", 0, 2*time.Hour-5*time.Second)}}
	res = usage.Ingest(closed)
	g.Expect(res.Refused).To(BeEmpty())
	g.Expect(res.Counted).To(BeNumerically("==", 7195), "End − Start, by the agent's clock")
	g.Expect(res.Ledger.Open).To(BeEmpty())
}

// TestIngestMovedAway: a claim whose open host the hub took, moved to
// another cluster (its failed host replaced, none free there) before its
// closed interval is reported: remembered from its placement, its interval
// counts, as a deleted claim's does.
func TestIngestMovedAway(t *testing.T) {
	g := NewWithT(t)
	in, res := openA1(g)

	moved := in
	moved.Now, moved.Ledger, moved.Placed = t0.Add(2*time.Hour), res.Ledger, nil
	moved.Report = hostfleetv1alpha1.HostUsageStatus{Intervals: []hostfleetv1alpha1.UsageInterval{iv("a1", "tenant-a", "hosts/h0", 0, 90*time.Minute)}}
	res = usage.Ingest(moved)
	g.Expect(res.Refused).To(BeEmpty(), "remembered from its placement here")
	g.Expect(res.Counted).To(BeNumerically("==", 5400))
	g.Expect(res.Ledger.Claims).To(ConsistOf(HaveField("To.Time", t0.Add(2*time.Hour))), "its placement here ended when the hub learnt it moved")
}
