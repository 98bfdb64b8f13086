package heal

import (
	"errors"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func host(op metal3api.OperationalStatus, kind metal3api.ErrorType, msg string) *metal3api.BareMetalHost {
	h := &metal3api.BareMetalHost{}
	h.Namespace, h.Name = "hosts", "h1"
	h.Status.OperationalStatus, h.Status.ErrorType, h.Status.ErrorMessage = op, kind, msg
	return h
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name     string
		h        *metal3api.BareMetalHost
		state    State
		evidence string
	}{
		{"ok", host(metal3api.OperationalStatusOK, "", ""), Healthy, ""},
		{"detached", host(metal3api.OperationalStatusDetached, "", ""), Healthy, ""},
		{"a BMC that does not answer: failed", host(metal3api.OperationalStatusError, metal3api.PowerManagementError, "the BMC at 10.0.0.1:623 does not answer"), Failed, "power management error"},
		{"a provisioned host its BMC no longer registers: failed", host(metal3api.OperationalStatusError, metal3api.ProvisionedRegistrationError, "x"), Failed, "provisioned registration error"},
		{"a provisioning error: degraded (the image may be at fault)", host(metal3api.OperationalStatusError, metal3api.ProvisioningError, "image"), Degraded, "provisioning error"},
		{"wrong credentials: degraded (the administrator's to fix)", host(metal3api.OperationalStatusError, metal3api.RegistrationError, "refused"), Degraded, "registration error"},
		{"an error type without the status: judged by the type", host(metal3api.OperationalStatusOK, metal3api.PowerManagementError, ""), Failed, "power management error"},
		{"the status without a type: degraded", host(metal3api.OperationalStatusError, "", ""), Degraded, "error"},
		{"the BMC reports it Critical: failed", sick(metav1.ConditionFalse, hostfleetv1alpha1.ReasonHealthCritical), Failed, "HealthCritical"},
		{"the BMC reports a Warning: degraded", sick(metav1.ConditionFalse, hostfleetv1alpha1.ReasonHealthWarning), Degraded, "HealthWarning"},
		{"the BMC reports it OK", sick(metav1.ConditionTrue, hostfleetv1alpha1.ReasonHealthOK), Healthy, ""},
		{"an error outweighs the health", withHealth(host(metal3api.OperationalStatusError, metal3api.ProvisioningError, "image"), metav1.ConditionFalse, hostfleetv1alpha1.ReasonHealthCritical), Degraded, "provisioning error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v := Judge(tt.h)
			g.Expect(v.State).To(Equal(tt.state))
			g.Expect(v.Evidence).To(Equal(tt.evidence))
			if tt.state != Healthy {
				g.Expect(v.Message).To(ContainSubstring("hosts/h1"))
				detail := tt.h.Status.ErrorMessage
				if c := meta.FindStatusCondition(tt.h.Status.Conditions, hostfleetv1alpha1.ConditionHardwareHealthy); c != nil && tt.h.Status.ErrorType == "" {
					detail = c.Message
				}
				g.Expect(v.Detail).To(Equal(detail))
				if tt.h.Status.ErrorMessage != "" {
					g.Expect(v.Message).NotTo(ContainSubstring(tt.h.Status.ErrorMessage), "a host's errorMessage may name its BMC: never on the claim")
				}
			}
		})
	}
}

// sick is a host without an error whose BMC reports a health.
func sick(status metav1.ConditionStatus, reason string) *metal3api.BareMetalHost {
	return withHealth(host(metal3api.OperationalStatusOK, "", ""), status, reason)
}

func withHealth(h *metal3api.BareMetalHost, status metav1.ConditionStatus, reason string) *metal3api.BareMetalHost {
	meta.SetStatusCondition(&h.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionHardwareHealthy, Status: status, Reason: reason,
		Message: "the BMC reports Status.Health " + reason})
	return h
}

func TestEvidenceIn(t *testing.T) {
	g := NewWithT(t)
	v := Judge(host(metal3api.OperationalStatusError, metal3api.PowerManagementError, "the BMC at 10.0.0.1:623 does not answer"))
	g.Expect(EvidenceIn(v.Message + "; powering it off")).To(Equal(v.Evidence))
	g.Expect(EvidenceIn("host hosts/h1 is healthy")).To(BeEmpty())
}

func TestOff(t *testing.T) {
	g := NewWithT(t)
	h := host(metal3api.OperationalStatusOK, "", "")
	h.Spec.Online, h.Status.PoweredOn = true, false
	g.Expect(Off(h)).To(BeFalse(), "asked to be on")
	h.Spec.Online = false
	g.Expect(Off(h)).To(BeTrue())
	h.Status.PoweredOn = true
	g.Expect(Off(h)).To(BeFalse(), "still on")
	h.Status.PoweredOn = false
	h.Status.ErrorType = metal3api.PowerManagementError
	g.Expect(Off(h)).To(BeFalse(), "a BMC that does not answer confirms nothing")
	h.Status.ErrorType = ""
	h.Status.Conditions = []metav1.Condition{{Type: hostfleetv1alpha1.ConditionPowerChanging, Status: metav1.ConditionTrue, Reason: "PowerOnSent"}}
	g.Expect(Off(h)).To(BeFalse(), "off as read before a power on was sent: not confirmed until it lands")
	h.Status.Conditions[0].Status = metav1.ConditionFalse
	g.Expect(Off(h)).To(BeTrue())
}

func TestBreaker(t *testing.T) {
	b := Breaker{MaxPercent: 40, Window: time.Hour}
	tests := []struct {
		name string
		c    Count
		open bool
	}{
		{"nothing bound", Count{}, false},
		{"one of one failed: the host's own", Count{Bound: 1, Failed: 1}, false},
		{"one of two failed", Count{Bound: 2, Failed: 1}, false},
		{"two of ten", Count{Bound: 10, Failed: 2}, false},
		{"four of ten: at the share, not over", Count{Bound: 10, Failed: 4}, false},
		{"half of a cluster", Count{Bound: 4, Failed: 2}, true},
		{"one failed now, one replaced within the window", Count{Bound: 3, Failed: 1, Quarantined: 1}, true},
		{"one replaced within the window of ten", Count{Bound: 10, Failed: 1, Quarantined: 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			open, why := b.Open(tt.c)
			g.Expect(open).To(Equal(tt.open))
			if open {
				g.Expect(why).To(ContainSubstring("--breaker-max-percent"))
			}
		})
	}
}

func TestNext(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	failed := Verdict{State: Failed, Evidence: "power management error", Message: "host hosts/h1 reports power management error"}
	replace := healing.Policy{Action: hostfleetv1alpha1.HealingReplace, Grace: time.Minute, MaxPerDay: 3}
	notify := healing.Policy{Action: hostfleetv1alpha1.HealingNotify, Grace: time.Minute, MaxPerDay: 3}
	cond := func(s metav1.ConditionStatus, reason string, ago time.Duration) *metav1.Condition {
		return &metav1.Condition{Type: hostfleetv1alpha1.ConditionHostHealthy, Status: s, Reason: reason, Message: "before",
			LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	base := func(mod func(*Input)) Input {
		in := Input{Host: "hosts/h1", Verdict: failed, Policy: replace, FenceTimeout: time.Minute, Now: now}
		mod(&in)
		return in
	}
	tests := []struct {
		name       string
		in         Input
		step       Step
		status     metav1.ConditionStatus
		reason     string
		after      time.Duration
		restart    bool
		mentioning string
	}{
		{name: "healthy", in: base(func(in *Input) { in.Verdict = Verdict{} }),
			status: metav1.ConditionTrue, reason: hostfleetv1alpha1.ReasonHealthy},
		{name: "healthy, a bad annotation said", in: base(func(in *Input) { in.Verdict, in.PolicyErr = Verdict{}, errors.New("bad grace") }),
			status: metav1.ConditionTrue, reason: hostfleetv1alpha1.ReasonInvalidHealing, mentioning: "bad grace"},
		{name: "degraded: reported, never replaced", in: base(func(in *Input) { in.Verdict = Verdict{State: Degraded, Message: "provisioning error"} }),
			status: metav1.ConditionTrue, reason: hostfleetv1alpha1.ReasonDegraded, mentioning: "not replaced"},
		{name: "failed under Notify: reported with what to do", in: base(func(in *Input) { in.Policy = notify }),
			status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonHostFailed, mentioning: "hostfleet.io/healing: Replace"},
		{name: "failed just now: replaced after the grace", in: base(func(*Input) {}),
			status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonHostFailed, after: time.Minute, mentioning: "2026-11-28T12:01:00Z"},
		{name: "failed within the grace, counted from the condition", in: base(func(in *Input) {
			in.Current = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonHostFailed, 40*time.Second)
		}),
			status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonHostFailed, after: 20 * time.Second},
		{name: "a True condition does not count as failed since", in: base(func(in *Input) { in.Current = cond(metav1.ConditionTrue, hostfleetv1alpha1.ReasonHealthy, time.Hour) }),
			status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonHostFailed, after: time.Minute},
		{name: "past the grace: fenced", in: base(func(in *Input) {
			in.Current = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonHostFailed, time.Minute)
		}),
			step: Fence, status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonFencing, after: Poll, mentioning: "powering host hosts/h1 off"},
		{name: "past the grace, breaker open: paused", in: base(func(in *Input) {
			in.Current, in.BreakerOpen, in.BreakerWhy = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonHostFailed, time.Hour), true, "a rack"
		}), status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonReplacementPaused, mentioning: "a rack"},
		{name: "past the grace, replaced three times today: held", in: base(func(in *Input) {
			in.Current, in.Replaced = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonHostFailed, time.Hour), 3
		}), status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonReplacementLimit, mentioning: "3 times"},
		{name: "fencing, not off yet: wait", in: base(func(in *Input) {
			in.Current = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonFencing, 90*time.Second)
		}),
			step: AwaitFence, status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonFencing, after: Poll},
		{name: "fencing, off: quarantined", in: base(func(in *Input) {
			in.Current, in.Off = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonFencing, 90*time.Second), true
		}), step: Quarantine, status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonReplacing},
		{name: "fencing, off, though the host recovered meanwhile: quarantined all the same", in: base(func(in *Input) {
			in.Current, in.Off, in.Verdict = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonFencing, 90*time.Second), true, Verdict{}
		}), step: Quarantine, status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonReplacing},
		{name: "fencing past its timeout: unconfirmed, not replaced", in: base(func(in *Input) {
			in.Current = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonFencing, 2*time.Minute)
		}),
			step: AwaitFence, status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonFenceUnconfirmed, after: 10 * Poll, mentioning: "not replaced"},
		{name: "unconfirmed, the host now reporting nothing: the failure the fence began with still said", in: base(func(in *Input) {
			in.Current, in.Verdict = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonFencing, 2*time.Minute), Verdict{}
			in.Current.Message = "host hosts/h1 reports power management error; powering host hosts/h1 off before another host takes its place"
		}),
			step: AwaitFence, status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonFenceUnconfirmed, after: 10 * Poll,
			mentioning: "(host hosts/h1 reports power management error; its status still says powered on)"},
		{name: "unconfirmed under an unfenced policy: quarantined at the tenant's risk", in: base(func(in *Input) {
			in.Current, in.Policy.Unfenced = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonFenceUnconfirmed, 3*time.Minute), true
		}), step: Quarantine, status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonReplacing, mentioning: "tenant's risk"},
		{name: "fencing, the policy turned Notify: back to reporting", in: base(func(in *Input) {
			in.Current, in.Policy = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonFencing, 2*time.Minute), notify
		}), status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonHostFailed},
		{name: "a quarantine cut short: it goes on, whatever the host reports", in: base(func(in *Input) {
			in.Current, in.Verdict = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonReplacing, time.Hour), Verdict{}
			in.Last = &healing.Replacement{Failed: "hosts/h1"}
		}), step: Quarantine, status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonReplacing},
		{name: "the new host provisioning: replacing, True", in: base(func(in *Input) {
			in.Current, in.Verdict, in.ReadyMessage = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonReplacing, time.Hour), Verdict{}, "provisioning"
			in.Last = &healing.Replacement{Failed: "hosts/h0", Reason: "power management error", At: metav1.NewTime(now)}
		}), status: metav1.ConditionTrue, reason: hostfleetv1alpha1.ReasonReplacing, mentioning: "host hosts/h1 takes the place of host hosts/h0"},
		{name: "the new host Ready: healthy, saying what it replaced", in: base(func(in *Input) {
			in.Current, in.Verdict, in.Ready = cond(metav1.ConditionTrue, hostfleetv1alpha1.ReasonReplacing, time.Minute), Verdict{}, true
		}), status: metav1.ConditionTrue, reason: hostfleetv1alpha1.ReasonHealthy, mentioning: "took the place of a failed host"},
		{name: "the new host failed before it was Ready: its own grace, from now", in: base(func(in *Input) {
			in.Current = cond(metav1.ConditionFalse, hostfleetv1alpha1.ReasonReplacing, time.Hour)
		}), status: metav1.ConditionFalse, reason: hostfleetv1alpha1.ReasonHostFailed, after: time.Minute, restart: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := Next(tt.in)
			g.Expect(d.Step).To(Equal(tt.step), d.Message)
			g.Expect(d.Status).To(Equal(tt.status))
			g.Expect(d.Reason).To(Equal(tt.reason))
			g.Expect(d.After).To(Equal(tt.after))
			g.Expect(d.Restart).To(Equal(tt.restart))
			g.Expect(d.Message).To(ContainSubstring(tt.mentioning))
		})
	}
}
