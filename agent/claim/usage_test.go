package claim_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/usage"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/ledger"
	hubmetrics "github.com/hostfleet/hostfleet/hub/metrics"
	"github.com/hostfleet/hostfleet/internal/hostwrites"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// TestUsage: a claim's bound interval runs from the binding write (the
// host's bound-at, to the second) to the release write (the agent's
// clock when it wrote it, which lies between the claim's deletion and the
// first read that shows the host free), with the host's labels under the
// served tenants' prefixes. The agent reports it open while bound and
// closed after, the hub counts it into its ledger once and settles it, and
// the agent then drops it from the host and its report. The hub's copy of
// the report deleted is written again; a second interval adds to the
// first; the host deleted takes nothing from the ledger.
func TestUsage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub, infra := servedScene(t, hostfleetv1alpha1.ServedTenant{LabelSyncPrefixes: []string{"example.com"}})
	h := bmh("h0", 0, map[string]string{"example.com/gpu": "yes", "other.org/owner": "ops"})
	mustCreate(t, infra, h)
	g.Expect(planes.MarkAvailable(ctx, infra, h)).To(Succeed())
	f.ManagerForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&ledger.Reconciler{Client: mgr.GetClient(), Skew: time.Minute, Memory: time.Hour, MaxGone: ledger.MaxGone}).
			SetupWithManager(context.Background(), mgr, setup.Options{})
	})
	startAgent(t, f, "infra-1", 2, func(o *app.Options) { o.InventoryInterval = time.Second })
	gpu := map[string]string{"example.com/gpu": "yes"}
	report := func(g Gomega) hostfleetv1alpha1.HostUsageStatus {
		u := &hostfleetv1alpha1.HostUsage{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, u)).To(Succeed())
		return u.Status
	}
	counted := func(g Gomega) int64 {
		l := &hostfleetv1alpha1.UsageLedger{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, l)).To(Succeed())
		var n int64
		for _, e := range l.Status.Counted {
			g.Expect(e.Namespace).To(Equal(tenantNS))
			g.Expect(e.Labels).To(Equal(gpu))
			n += e.Seconds
		}
		return n
	}

	// interval binds a claim to h0 for a while and deletes it; it returns
	// the interval the agent reported, and the window its release write
	// fell in: after the deletion was sent (deleted), by the return of the
	// read that showed the host free (freed).
	interval := func(name string, hold time.Duration) (iv hostfleetv1alpha1.UsageInterval, deleted, freed time.Time) {
		c := hubClaim(name, "infra-1", nil)
		mustCreate(t, hub, c)
		g.Eventually(func(g Gomega) {
			g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
			g.Expect(h.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationBoundClaim, string(c.UID)))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		bound, err := time.Parse(time.RFC3339, h.Annotations[hostfleetv1alpha1.AnnotationBoundAt])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationBoundFor, tenantNS))
		g.Eventually(func(g Gomega) {
			g.Expect(report(g).Open).To(ConsistOf(And(HaveField("Host", "hosts/h0"), HaveField("Claim", c.UID), HaveField("Namespace", tenantNS),
				HaveField("Labels", gpu), HaveField("Since.Time", BeTemporally("==", bound)))))
		}).WithTimeout(10*time.Second).Should(Succeed(), "reported open while bound")
		g.Consistently(func(g Gomega) {
			g.Expect(report(g).Open).To(HaveLen(1))
		}).WithTimeout(hold).WithPolling(500*time.Millisecond).Should(Succeed(), "open while the claim holds the host")
		deleted = time.Now()
		g.Expect(hub.Delete(ctx, c)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
			g.Expect(h.Spec.ConsumerRef).To(BeNil())
		}).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
		freed = time.Now()
		g.Eventually(func() bool { return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(c), c)) }).
			WithTimeout(30*time.Second).Should(BeTrue(), "gone once its host is released and its placement is in the ledger")
		g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationBoundAt))
		g.Expect(h.Annotations).To(HaveKey(hostfleetv1alpha1.AnnotationUsage), "the closed interval kept on the host until the hub settles it")
		// The interval as the agent reported it, or, settled already, as
		// the host's record still holds it.
		rec, err := usage.Of(h)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rec).To(HaveLen(1))
		iv = rec[0]
		g.Expect(iv.Claim).To(Equal(c.UID))
		g.Expect(iv.Start.Time).To(BeTemporally("==", bound), "from the binding write")
		return iv, deleted, freed
	}
	// within: the end is the agent's clock at the release write, to the
	// second: after the deletion was sent, by the read that saw the host
	// free. The seconds counted are End − Start exactly.
	within := func(iv hostfleetv1alpha1.UsageInterval, deleted, freed time.Time) {
		g.Expect(iv.End.Time).To(BeTemporally(">=", deleted.Truncate(time.Second)), "released after the claim was deleted")
		g.Expect(iv.End.Time).To(BeTemporally("<=", freed), "released by the time the host was seen free")
	}
	settledAndDropped := func() {
		g.Eventually(func(g Gomega) {
			st := report(g)
			g.Expect(st.Intervals).To(BeEmpty(), "the hub settled it, the agent dropped it")
			g.Expect(st.Settled).To(BeEmpty())
			g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
			g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationUsage))
		}).WithTimeout(20 * time.Second).Should(Succeed())
	}

	first, d1, f1 := interval("first", 3*time.Second)
	within(first, d1, f1)
	firstSeconds := int64(first.End.Sub(first.Start.Time) / time.Second)
	g.Expect(firstSeconds).To(BeNumerically(">=", 3))
	g.Eventually(func(g Gomega) { g.Expect(counted(g)).To(Equal(firstSeconds)) }).WithTimeout(20*time.Second).Should(Succeed(),
		"the hub counts End − Start, once")
	settledAndDropped()
	var managers []string
	for _, m := range h.ManagedFields {
		managers = append(managers, m.Manager)
	}
	g.Expect(managers).To(ContainElement(string(hostwrites.Claims)),
		"the host's managedFields say who wrote it: the claim controller bound and released it (the usage reporter, which removed the settled interval, owns nothing left)")

	t.Log("the hub's copy of the report deleted (a hub restored from before it): written again")
	g.Expect(hub.Delete(ctx, &hostfleetv1alpha1.HostUsage{ObjectMeta: metav1.ObjectMeta{Namespace: "infra-1", Name: "infra-1"}})).To(Succeed())
	g.Eventually(func(g Gomega) { report(g) }).WithTimeout(10 * time.Second).Should(Succeed())

	t.Log("a second interval adds to the first")
	second, d2, f2 := interval("second", 2*time.Second)
	within(second, d2, f2)
	total := firstSeconds + int64(second.End.Sub(second.Start.Time)/time.Second)
	g.Eventually(func(g Gomega) { g.Expect(counted(g)).To(Equal(total)) }).WithTimeout(20 * time.Second).Should(Succeed())
	settledAndDropped()

	t.Log("the host scrapped after its release: the ledger keeps what it counted")
	g.Expect(infra.Delete(ctx, h)).To(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(counted(g)).To(Equal(total)) }).WithTimeout(3 * time.Second).Should(Succeed())
	for _, reason := range []string{hostfleetv1alpha1.ReasonUsageUnknownClaim, hostfleetv1alpha1.ReasonUsageOutsidePlacement,
		hostfleetv1alpha1.ReasonUsageWrongNamespace, hostfleetv1alpha1.ReasonUsageInvalid} {
		g.Expect(testutil.ToFloat64(hubmetrics.UsageRefused.WithLabelValues("infra-1", reason))).To(BeZero(),
			"%s: nothing of an honest cluster is refused, a release reported after the hub saw its claim go included", reason)
	}
}
