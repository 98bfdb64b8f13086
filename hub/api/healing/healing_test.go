package healing

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestEffective(t *testing.T) {
	tenant := &hostfleetv1alpha1.Healing{Action: hostfleetv1alpha1.HealingReplace, Grace: &metav1.Duration{Duration: 2 * time.Minute},
		MaxReplacementsPerDay: ptr.To[int32](1)}
	allowing := tenant.DeepCopy()
	allowing.AllowUnfenced = true
	tests := []struct {
		name       string
		tenant     *hostfleetv1alpha1.Healing
		annotation string
		want       Policy
		err        string
	}{
		{name: "no tenant policy: Notify, the defaults", want: Policy{Action: hostfleetv1alpha1.HealingNotify, Grace: DefaultGrace, MaxPerDay: DefaultMaxPerDay}},
		{name: "the tenant's", tenant: tenant, want: Policy{Action: hostfleetv1alpha1.HealingReplace, Grace: 2 * time.Minute, MaxPerDay: 1}},
		{name: "a claim opts in", annotation: "Replace", want: Policy{Action: hostfleetv1alpha1.HealingReplace, Grace: DefaultGrace, MaxPerDay: DefaultMaxPerDay}},
		{name: "a claim opts out", tenant: tenant, annotation: "Notify", want: Policy{Action: hostfleetv1alpha1.HealingNotify, Grace: 2 * time.Minute, MaxPerDay: 1}},
		{name: "a longer grace", tenant: tenant, annotation: "Replace, grace=10m", want: Policy{Action: hostfleetv1alpha1.HealingReplace, Grace: 10 * time.Minute, MaxPerDay: 1}},
		{name: "a shorter grace: the tenant's, and why", tenant: tenant, annotation: "Replace,grace=30s",
			want: Policy{Action: hostfleetv1alpha1.HealingReplace, Grace: 2 * time.Minute, MaxPerDay: 1}, err: "at least 2m0s"},
		{name: "unfenced where the tenant allows it", tenant: allowing, annotation: "Replace,unfenced",
			want: Policy{Action: hostfleetv1alpha1.HealingReplace, Grace: 2 * time.Minute, MaxPerDay: 1, Unfenced: true}},
		{name: "unfenced where it does not: refused", tenant: tenant, annotation: "Replace,unfenced",
			want: Policy{Action: hostfleetv1alpha1.HealingReplace, Grace: 2 * time.Minute, MaxPerDay: 1}, err: "allowUnfenced"},
		{name: "the tenant allows unfenced; a claim that does not ask is fenced", tenant: allowing,
			want: Policy{Action: hostfleetv1alpha1.HealingReplace, Grace: 2 * time.Minute, MaxPerDay: 1}},
		{name: "a typo", tenant: tenant, annotation: "replace",
			want: Policy{Action: hostfleetv1alpha1.HealingReplace, Grace: 2 * time.Minute, MaxPerDay: 1}, err: "neither Notify nor Replace"},
		{name: "an unknown option", annotation: "Replace,fast", want: Tenant(nil), err: `"fast"`},
		{name: "a grace that is no duration", annotation: "Replace,grace=soon", want: Tenant(nil), err: "grace=10m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ann := map[string]string{}
			if tt.annotation != "" {
				ann[hostfleetv1alpha1.AnnotationHealing] = tt.annotation
			}
			p, err := Effective(tt.tenant, ann)
			g.Expect(p).To(Equal(tt.want))
			if tt.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
			}
		})
	}
}

func TestRecord(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	r, err := RecordOf(nil, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Count).To(BeZero())
	for i := range 12 {
		r = r.Add(Replacement{At: metav1.NewTime(now.Add(time.Duration(i-11) * 3 * time.Hour)), Failed: "hosts/h", Reason: "x"})
	}
	g.Expect(r.Count).To(Equal(12))
	g.Expect(r.Recent).To(HaveLen(MaxRecent))
	g.Expect(r.Within(now, 24*time.Hour)).To(Equal(9), "the last nine are within 24 hours: 0, 3, ..., 24 hours ago")
	back, err := RecordOf(map[string]string{hostfleetv1alpha1.AnnotationReplacements: r.String()}, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Count).To(Equal(12))
	last, ok := back.Last()
	g.Expect(ok).To(BeTrue())
	g.Expect(last.At.Time.Equal(now)).To(BeTrue())

	bad, err := RecordOf(map[string]string{hostfleetv1alpha1.AnnotationReplacements: "twelve"}, now)
	g.Expect(err).To(MatchError(ContainSubstring("does not parse")))
	g.Expect(bad.Within(now, 24*time.Hour)).To(Equal(MaxRecent), "a damaged record holds the claim at any limit")
}

func TestQuarantine(t *testing.T) {
	g := NewWithT(t)
	_, ok, err := QuarantineOf(nil)
	g.Expect(ok).To(BeFalse())
	g.Expect(err).NotTo(HaveOccurred())
	q := Quarantine{Since: metav1.NewTime(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)), Claim: "tenant-a/web", Reason: "power management error", Fenced: true}
	back, ok, err := QuarantineOf(map[string]string{hostfleetv1alpha1.AnnotationQuarantined: q.String()})
	g.Expect(ok).To(BeTrue())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Claim).To(Equal("tenant-a/web"))
	g.Expect(back.Fenced).To(BeTrue())
	_, ok, err = QuarantineOf(map[string]string{hostfleetv1alpha1.AnnotationQuarantined: "yes"})
	g.Expect(ok).To(BeTrue(), "an unreadable quarantine still keeps the host out")
	g.Expect(err).To(HaveOccurred())
}

// FuzzEffective: any annotation gives a policy within the tenant's
// bounds.
func FuzzEffective(f *testing.F) {
	f.Add("Replace,grace=10m,unfenced", int64(120), false)
	f.Add("Notify", int64(0), true)
	f.Fuzz(func(t *testing.T, v string, graceSec int64, allow bool) {
		tenant := &hostfleetv1alpha1.Healing{Action: hostfleetv1alpha1.HealingNotify, AllowUnfenced: allow,
			Grace: &metav1.Duration{Duration: time.Duration(graceSec%100000) * time.Second}}
		base := Tenant(tenant)
		p, _ := Effective(tenant, map[string]string{hostfleetv1alpha1.AnnotationHealing: v})
		if p.Grace < base.Grace || p.Unfenced && !allow || p.MaxPerDay != base.MaxPerDay {
			t.Fatalf("%q overstepped the tenant's bounds: %+v from %+v", v, p, base)
		}
		if p.Action != hostfleetv1alpha1.HealingNotify && p.Action != hostfleetv1alpha1.HealingReplace {
			t.Fatalf("%q gave action %q", v, p.Action)
		}
	})
}
