// Package heal decides, from evidence alone, what happens to a claim whose
// host may have failed: how the host is (Judge), whether the cluster's
// failures look like a rack or a switch rather than hosts (Breaker), and
// the claim's next step (Next): report, fence the host, wait for the fence,
// or quarantine the host so that the claim binds another. Every function
// is pure; agent/claim reads the inputs and carries the steps out.
package heal

import (
	"fmt"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// State is how a host is.
type State int

const (
	Healthy State = iota
	// Degraded: an error that does not stop the host serving its claim.
	Degraded
	// Failed: the host no longer serves its claim, or cannot be managed.
	Failed
)

// Verdict is a host's state and its evidence.
type Verdict struct {
	State State
	// Evidence names what was seen, in a word (an error type); Message
	// says it for the claim; Detail is the host's own errorMessage, for the
	// infrastructure cluster only.
	Evidence string
	Message  string
	Detail   string
}

// Judge is how a bound host is, from its status (baremetal-operator's, or
// the agent's BMC driver's, which writes the same fields):
//   - operationalStatus error with a power management error (its BMC does
//     not answer, or refuses or never carries out a power change) or a
//     provisioned-registration error (its BMC can no longer be managed):
//     failed;
//   - any other error (provisioning, registration, inspection,
//     preparation, servicing, detach): degraded, since the claim's image or
//     the administrator's settings may be at fault, not the host;
//   - else, on a host the BMC driver drives, its HardwareHealthy condition:
//     Critical (a power supply, a DIMM, a power fault) is failed, Warning
//     degraded;
//   - otherwise healthy.
func Judge(h *metal3api.BareMetalHost) Verdict {
	st := h.Status
	if st.OperationalStatus != metal3api.OperationalStatusError && st.ErrorType == "" {
		return hardware(h)
	}
	evidence := string(st.ErrorType)
	if evidence == "" {
		evidence = "error"
	}
	// Never the host's errorMessage: it may name the BMC's address, which
	// never reaches the hub; the infrastructure cluster's administrator
	// reads it on the host (Detail).
	msg := fmt.Sprintf("host %s/%s reports %s", h.Namespace, h.Name, evidence)
	switch st.ErrorType {
	case metal3api.PowerManagementError, metal3api.ProvisionedRegistrationError:
		return Verdict{State: Failed, Evidence: evidence, Message: msg, Detail: st.ErrorMessage}
	}
	return Verdict{State: Degraded, Evidence: evidence, Message: msg, Detail: st.ErrorMessage}
}

// hardware is how a host without an error is, from the health its BMC
// reports (the BMC driver's HardwareHealthy condition).
func hardware(h *metal3api.BareMetalHost) Verdict {
	c := meta.FindStatusCondition(h.Status.Conditions, hostfleetv1alpha1.ConditionHardwareHealthy)
	if c == nil || c.Status != metav1.ConditionFalse {
		return Verdict{State: Healthy}
	}
	v := Verdict{State: Degraded, Evidence: c.Reason, Message: fmt.Sprintf("host %s/%s reports %s", h.Namespace, h.Name, c.Reason), Detail: c.Message}
	if c.Reason == hostfleetv1alpha1.ReasonHealthCritical {
		v.State = Failed
	}
	return v
}

// EvidenceIn is the evidence a condition's message names, as Judge wrote
// it ("host <ns>/<name> reports <evidence>[; ...]"), or "".
func EvidenceIn(msg string) string {
	_, rest, ok := strings.Cut(msg, " reports ")
	if !ok {
		return ""
	}
	evidence, _, _ := strings.Cut(rest, ";")
	return strings.TrimSpace(evidence)
}

// Off reports whether a host being fenced is confirmed off: it is asked to
// be off, its status says off, its power is managed (no power management
// error: the BMC answered since), and no power change is under way (the
// BMC driver's PowerChanging: status.poweredOn is the read before a power
// on was sent, until it lands).
func Off(h *metal3api.BareMetalHost) bool {
	return !h.Spec.Online && !h.Status.PoweredOn && h.Status.ErrorType != metal3api.PowerManagementError &&
		h.Status.ErrorType != metal3api.ProvisionedRegistrationError &&
		!meta.IsStatusConditionTrue(h.Status.Conditions, hostfleetv1alpha1.ConditionPowerChanging)
}

// Breaker is the cluster's circuit breaker: open when more than MaxPercent
// of the hosts bound within Window failed in it (at least two: one failed
// host is always the host's own).
type Breaker struct {
	MaxPercent int
	Window     time.Duration
}

// Count is what the breaker counts on one cluster.
type Count struct {
	// Bound are the hosts bound to claims now; Failed those of them judged
	// failed.
	Bound, Failed int
	// Quarantined are the hosts quarantined within the window: failures
	// too, and bound when they failed.
	Quarantined int
}

// Open says whether replacement pauses, and why.
func (b Breaker) Open(c Count) (bool, string) {
	failed, of := c.Failed+c.Quarantined, c.Bound+c.Quarantined
	if failed < 2 || of == 0 || failed*100 <= b.MaxPercent*of {
		return false, ""
	}
	return true, fmt.Sprintf("%d of the %d hosts bound on the cluster within %s failed (more than %d%%): that looks like a rack, a switch or a power feed, not the hosts; "+
		"no host is replaced until fewer have failed, or the agent's --breaker-max-percent is raised", failed, of, b.Window, b.MaxPercent)
}

// Step is what the claim's agent does next.
type Step int

const (
	// Report: write the condition and serve the claim as usual.
	Report Step = iota
	// Fence: power the host off (spec.online false), then AwaitFence.
	Fence
	// AwaitFence: keep the host off and wait for it to be confirmed off.
	AwaitFence
	// Quarantine: mark the host quarantined, release it and bind the claim
	// to another host.
	Quarantine
)

func (s Step) String() string {
	return [...]string{"Report", "Fence", "AwaitFence", "Quarantine"}[s]
}

// Input is what Next decides from.
type Input struct {
	// Host names the claim's host, <namespace>/<name>.
	Host    string
	Verdict Verdict
	Policy  healing.Policy
	// PolicyErr says why the claim's hostfleet.io/healing was ignored.
	PolicyErr error
	// Current is the claim's HostHealthy condition, nil if none.
	Current *metav1.Condition
	// Off: the host is confirmed off (heal.Off).
	Off bool
	// BreakerOpen and BreakerWhy: the cluster's breaker.
	BreakerOpen bool
	BreakerWhy  string
	// Replaced: the claim's replacements in the last 24 hours.
	Replaced int
	// Ready and ReadyMessage are the claim's Ready condition as its host
	// now makes it; Last is its last replacement, if any.
	Ready        bool
	ReadyMessage string
	Last         *healing.Replacement
	// FenceTimeout is how long after the grace a fence may take before it
	// counts as unconfirmed.
	FenceTimeout time.Duration
	Now          time.Time
}

// Decision is Next's answer: the step, the HostHealthy condition to write
// (its type and generation are the caller's), and when to look again (0:
// on the next event).
type Decision struct {
	Step    Step
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	After   time.Duration
	// Restart: the condition's lastTransitionTime is now, though its
	// status stays False (a new host failed while it replaced another).
	Restart bool
}

// Poll is how often a fence under way is looked at again.
const Poll = 2 * time.Second

// Next decides a claim's next step. A fence, once begun under Replace,
// goes on whatever the host reports meanwhile: the tenant's host was
// powered off, and only another host serves the claim now.
func Next(in Input) Decision {
	since := in.Now
	if in.Current != nil && in.Current.Status == metav1.ConditionFalse {
		since = in.Current.LastTransitionTime.Time
	}
	replace := in.Policy.Action == hostfleetv1alpha1.HealingReplace
	if replace && in.Current != nil && fencing(in.Current.Reason) {
		return fence(in, since)
	}
	restart := false
	if resumes(in) {
		return Decision{Step: Quarantine, Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonReplacing, Message: fmt.Sprintf(
			"host %s is being quarantined; the claim is then bound to another host", in.Host)}
	}
	if in.Current != nil && in.Current.Reason == hostfleetv1alpha1.ReasonReplacing {
		if d, ok := replacing(in); ok {
			return d
		}
		// The claim's new host failed in turn: its failure counts from now.
		since, restart = in.Now, true
	}
	d := judged(in, since, replace)
	d.Restart = restart
	return d
}

// judged is the step of a claim whose host is judged anew.
func judged(in Input, since time.Time, replace bool) Decision {
	switch in.Verdict.State {
	case Healthy:
		if in.PolicyErr != nil {
			return Decision{Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonInvalidHealing,
				Message: fmt.Sprintf("host %s is healthy; %v: the tenant's policy (%s) applies", in.Host, in.PolicyErr, in.Policy.Action)}
		}
		return Decision{Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonHealthy, Message: fmt.Sprintf("host %s is healthy", in.Host)}
	case Degraded:
		return Decision{Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonDegraded, Message: in.Verdict.Message +
			"; it still serves the claim and is not replaced (the claim's image or settings may be at fault, not the host)" + ignored(in.PolicyErr)}
	}
	failed := in.Verdict.Message + ignored(in.PolicyErr)
	switch due := since.Add(in.Policy.Grace); {
	case !replace:
		return Decision{Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonHostFailed, Message: failed +
			"; the claim's healing policy is Notify: delete the claim for another host, or set hostfleet.io/healing: Replace"}
	case in.Now.Before(due):
		return Decision{Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonHostFailed, After: due.Sub(in.Now),
			Message: fmt.Sprintf("%s; replaced at %s (grace %s) unless it recovers", failed, due.UTC().Format(time.RFC3339), in.Policy.Grace)}
	case in.BreakerOpen:
		return Decision{Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonReplacementPaused, Message: failed + "; not replaced: " + in.BreakerWhy}
	case in.Replaced >= in.Policy.MaxPerDay:
		return Decision{Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonReplacementLimit, Message: fmt.Sprintf(
			"%s; not replaced: the claim's host was replaced %d times in 24 hours, its tenant's spec.healing.maxReplacementsPerDay", failed, in.Replaced)}
	}
	return Decision{Step: Fence, Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonFencing, After: Poll,
		Message: fmt.Sprintf("%s; powering host %s off before another host takes its place", failed, in.Host)}
}

// resumes reports whether the claim still holds the host its last
// replacement quarantines: a quarantine cut short (the agent restarted,
// a write failed) goes on.
func resumes(in Input) bool {
	return in.Current != nil && in.Current.Status == metav1.ConditionFalse && in.Current.Reason == hostfleetv1alpha1.ReasonReplacing &&
		in.Last != nil && in.Last.Failed == in.Host
}

// replacing is the condition of a claim bound to the host that takes a
// failed one's place, until that host is Ready (then, healthy, it says
// what it replaced).
func replacing(in Input) (Decision, bool) {
	if in.Verdict.State == Failed {
		return Decision{}, false
	}
	was := "a failed host"
	if in.Last != nil {
		was = fmt.Sprintf("host %s (%s, quarantined at %s)", in.Last.Failed, in.Last.Reason, in.Last.At.UTC().Format(time.RFC3339))
	}
	if !in.Ready {
		// True: the new host is sound so far; Ready says it is not there yet.
		return Decision{Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonReplacing, Message: fmt.Sprintf(
			"host %s takes the place of %s: %s", in.Host, was, in.ReadyMessage)}, true
	}
	return Decision{Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonHealthy, Message: fmt.Sprintf(
		"host %s is healthy; it took the place of %s", in.Host, was)}, true
}

func ignored(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" (%v: the tenant's policy applies)", err)
}

func fencing(reason string) bool {
	return reason == hostfleetv1alpha1.ReasonFencing || reason == hostfleetv1alpha1.ReasonFenceUnconfirmed
}

// fence is the step of a claim whose host is being fenced.
func fence(in Input, since time.Time) Decision {
	if in.Off {
		return Decision{Step: Quarantine, Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonReplacing,
			Message: fmt.Sprintf("host %s is off; it is quarantined and the claim is bound to another host", in.Host)}
	}
	deadline := since.Add(in.Policy.Grace + in.FenceTimeout)
	if in.Now.Before(deadline) {
		msg := in.Current.Message // the failure, as the fence began
		if in.Current.Reason != hostfleetv1alpha1.ReasonFencing || msg == "" {
			msg = fmt.Sprintf("powering host %s off before another host takes its place; waiting until %s for its BMC to confirm it", in.Host, deadline.UTC().Format(time.RFC3339))
		}
		return Decision{Step: AwaitFence, Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonFencing, After: Poll, Message: msg}
	}
	if in.Policy.Unfenced {
		return Decision{Step: Quarantine, Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonReplacing, Message: fmt.Sprintf(
			"host %s could not be confirmed off within %s; the claim's policy is unfenced: it is quarantined and the claim is bound to another host, at the tenant's risk (the failed host may still run the claim's image)",
			in.Host, in.FenceTimeout)}
	}
	seen := in.Verdict.Message
	if seen == "" {
		seen = "its status still says powered on"
		if e := EvidenceIn(in.Current.Message); e != "" {
			// The failure the fence began with stays said: the quarantine
			// that may follow records it.
			seen = fmt.Sprintf("host %s reports %s; %s", in.Host, e, seen)
		}
	}
	return Decision{Step: AwaitFence, Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonFenceUnconfirmed, After: 10 * Poll, Message: fmt.Sprintf(
		"host %s was asked to power off but its BMC has not confirmed it within %s (%s): it is not replaced, so that two machines never run the claim's image; "+
			"fix its BMC, or power it off by hand, and the replacement goes on", in.Host, in.FenceTimeout, seen)}
}
