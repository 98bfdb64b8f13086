package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestUsage: a claim's bound interval, from the binding write to the
// release write, is recorded on its host to the second, with the host's
// labels under the served tenants' prefixes, and published in the
// cluster's HostUsage on the hub (open while bound, closed after). A hub
// copy set back to an older record, or deleted (a restore from an older
// snapshot), is written again whole; a second interval adds to the first.
func TestUsage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub, infra := servedScene(t, hostfleetv1alpha1.ServedTenant{LabelSyncPrefixes: []string{"example.com"}})
	h := bmh("h0", 0, map[string]string{"example.com/gpu": "yes", "other.org/owner": "ops"})
	mustCreate(t, infra, h)
	h.Status.Provisioning.State, h.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
	g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	startAgent(t, f, "infra-1", 2, func(o *app.Options) { o.InventoryInterval = time.Second })
	gpu := map[string]string{"example.com/gpu": "yes"}
	record := func(g Gomega) hostfleetv1alpha1.HostUsageStatus {
		u := &hostfleetv1alpha1.HostUsage{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, u)).To(Succeed())
		return u.Status
	}

	// interval binds a claim to h0 and deletes it after a while; it
	// returns the host's bound-at and the window the release write fell
	// in: after a read sent at from still showed the host bound, by the
	// return of the read that showed it released (to).
	interval := func(name string, hold time.Duration) (bound, from, to time.Time) {
		c := hubClaim(name, "infra-1", nil)
		mustCreate(t, hub, c)
		g.Eventually(func(g Gomega) {
			g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
			g.Expect(h.Annotations).To(HaveKey(hostfleetv1alpha1.AnnotationBoundAt))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		bound, err := time.Parse(time.RFC3339, h.Annotations[hostfleetv1alpha1.AnnotationBoundAt])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationBoundFor, tenantNS))
		g.Eventually(func(g Gomega) {
			g.Expect(record(g).Open).To(ConsistOf(And(HaveField("Host", "hosts/h0"), HaveField("Namespace", tenantNS), HaveField("Labels", gpu),
				HaveField("Since.Time", BeTemporally("==", bound)))))
		}).WithTimeout(10*time.Second).Should(Succeed(), "open on the hub while bound")
		g.Consistently(func(g Gomega) {
			g.Expect(record(g).Open).To(HaveLen(1))
		}).WithTimeout(hold).WithPolling(500*time.Millisecond).Should(Succeed(), "open while the claim holds the host")
		from = time.Now()
		g.Expect(hub.Delete(ctx, c)).To(Succeed())
		g.Eventually(func(g Gomega) {
			sent := time.Now()
			g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
			if h.Spec.ConsumerRef != nil {
				from = sent
			}
			g.Expect(h.Spec.ConsumerRef).To(BeNil())
		}).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
		to = time.Now()
		g.Eventually(func() bool { return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(c), c)) }).
			WithTimeout(30 * time.Second).Should(BeTrue())
		return bound, from, to
	}
	// within: recorded seconds are the whole seconds from bound-at (whole
	// already) to the release write, which fell in (from, to].
	within := func(recorded int64, bound, from, to time.Time) {
		lo, hi := int64(from.Truncate(time.Second).Sub(bound)/time.Second), int64(to.Truncate(time.Second).Sub(bound)/time.Second)
		g.Expect(recorded).To(BeNumerically(">=", lo), "the bound interval, to the second: bound at %s, released in (%s, %s]", bound, from, to)
		g.Expect(recorded).To(BeNumerically("<=", hi), "the bound interval, to the second: bound at %s, released in (%s, %s]", bound, from, to)
	}
	day := func(t time.Time) string { return t.UTC().Format("2006-01-02") }
	seconds := func(st hostfleetv1alpha1.HostUsageStatus) int64 {
		var n int64
		for _, e := range st.Closed {
			n += e.Seconds
		}
		return n
	}

	b1, f1, r1 := interval("first", 3*time.Second)
	var first int64
	g.Eventually(func(g Gomega) {
		st := record(g)
		g.Expect(st.Open).To(BeEmpty())
		g.Expect(st.Closed).To(HaveLen(1))
		g.Expect(st.Closed[0]).To(And(HaveField("Period", day(r1)), HaveField("Namespace", tenantNS), HaveField("Labels", gpu)))
		first = st.Closed[0].Seconds
	}).WithTimeout(10 * time.Second).Should(Succeed())
	t.Logf("bound at %s, released %s–%s later: %d s recorded", b1.Format(time.TimeOnly), f1.Sub(b1).Round(10*time.Millisecond),
		r1.Sub(b1).Round(10*time.Millisecond), first)
	within(first, b1, f1, r1)
	g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
	g.Expect(h.Annotations).To(HaveKey(hostfleetv1alpha1.AnnotationUsage), "kept on the host")
	g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationBoundAt))

	t.Log("the hub's copy set back to an older record, then deleted: written again whole")
	older := &hostfleetv1alpha1.HostUsage{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, older)).To(Succeed())
	older.Status = hostfleetv1alpha1.HostUsageStatus{Open: []hostfleetv1alpha1.OpenUsage{{Host: "hosts/h0", Namespace: tenantNS, Since: metav1.NewTime(b1)}}}
	g.Expect(hub.Status().Update(ctx, older)).To(Succeed())
	g.Eventually(func(g Gomega) {
		st := record(g)
		g.Expect(st.Open).To(BeEmpty())
		g.Expect(seconds(st)).To(Equal(first))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(hub.Delete(ctx, older)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(seconds(record(g))).To(Equal(first)) }).WithTimeout(10 * time.Second).Should(Succeed())

	t.Log("a second interval adds to the first")
	b2, f2, r2 := interval("second", 2*time.Second)
	var total int64
	g.Eventually(func(g Gomega) {
		st := record(g)
		g.Expect(st.Open).To(BeEmpty())
		total = seconds(st)
		g.Expect(total).To(BeNumerically(">", first))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	within(total-first, b2, f2, r2)
}
