package lease

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestDecide(t *testing.T) {
	created := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	tests := []struct {
		name       string
		in         Input
		until      time.Time
		release    bool
		status     metav1.ConditionStatus
		reason     string
		after      time.Duration
		mentioning string
	}{
		{name: "no lease, no cap: nothing", in: Input{Now: created.Add(time.Hour)}},
		{name: "an end a day off: active, looked at again when the warning starts",
			in:     Input{Now: created, Until: "2026-11-28T08:00:00Z"},
			status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonLeaseActive, after: day - time.Hour, mentioning: "2026-11-28T08:00:00Z"},
		{name: "within the warning: ending, with how to extend and the cap",
			in:     Input{Now: created.Add(day - 30*time.Minute), Claim: "tenant-a/web", Created: created, Until: "2026-11-28T08:00:00Z", Cap: ptr(2 * day)},
			status: metav1.ConditionTrue, reason: hostfleetv1alpha1.ReasonLeaseEnding, after: 30 * time.Minute, mentioning: "kubectl hostfleet extend tenant-a/web --for 2h, up to 2026-11-29T08:00:00Z"},
		{name: "at the end: released",
			in:      Input{Now: created.Add(day), Until: "2026-11-28T08:00:00Z"},
			release: true, status: metav1.ConditionTrue, reason: hostfleetv1alpha1.ReasonLeaseEnded},
		{name: "marked released (a leader died before deleting): released, whatever the clock",
			in:      Input{Now: created, Until: "2026-11-28T08:00:00Z", ReleasedBy: hostfleetv1alpha1.ReleasedByLease},
			release: true, status: metav1.ConditionTrue, reason: hostfleetv1alpha1.ReasonLeaseEnded},
		{name: "a length: an end from the creation, written",
			in:    Input{Now: created.Add(time.Minute), Created: created, For: "90m"},
			until: created.Add(90 * time.Minute), status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonLeaseActive, after: 29 * time.Minute},
		{name: "no end under a cap: the cap from the creation",
			in:    Input{Now: created.Add(time.Minute), Created: created, Cap: ptr(3 * day), Warning: 2 * time.Hour},
			until: created.Add(3 * day), status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonLeaseActive, after: 3*day - 2*time.Hour - time.Minute},
		{name: "a cap set on an old claim: warned first, released a warning from now",
			in:    Input{Now: created.Add(10 * day), Created: created, Cap: ptr(day), Warning: time.Hour},
			until: created.Add(10*day + time.Hour), status: metav1.ConditionTrue, reason: hostfleetv1alpha1.ReasonLeaseEnding, after: time.Hour},
		{name: "an end that does not parse: kept, and said",
			in:     Input{Now: created, Until: "tomorrow"},
			status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonLeaseInvalid, mentioning: `"tomorrow" is not an RFC 3339 time`},
		{name: "a length that does not parse: kept, and said",
			in:     Input{Now: created, For: "-1h"},
			status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonLeaseInvalid, mentioning: "not a positive duration"},
		{name: "an end with an offset is the same instant",
			in:     Input{Now: created, Until: "2026-11-28T09:00:00+01:00", Warning: time.Hour},
			status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonLeaseActive, after: day - time.Hour, mentioning: "2026-11-28T08:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			if tt.in.Warning == 0 {
				tt.in.Warning = DefaultWarning
			}
			p := Decide(tt.in)
			g.Expect(p.Until).To(Equal(tt.until))
			g.Expect(p.Release).To(Equal(tt.release))
			g.Expect(p.After).To(Equal(tt.after))
			if tt.reason == "" {
				g.Expect(p.Condition).To(BeNil())
				return
			}
			g.Expect(p.Condition).NotTo(BeNil())
			g.Expect(p.Condition.Type).To(Equal(hostfleetv1alpha1.ConditionLeaseExpiring))
			g.Expect(p.Condition.Status).To(Equal(tt.status))
			g.Expect(p.Condition.Reason).To(Equal(tt.reason))
			g.Expect(p.Condition.Message).To(ContainSubstring(tt.mentioning))
		})
	}
}

func ptr[T any](v T) *T { return &v }
