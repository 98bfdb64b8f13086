package bmcdriver

import (
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/agent/bmc"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Target is what a power change is to reach.
type Target string

const (
	TargetOn  Target = "on"
	TargetOff Target = "off"
	// TargetReboot: on again, through a restart (hard: one ForceRestart) or
	// a power-off (soft first, as for TargetOff) and an On.
	TargetReboot Target = "reboot"
)

// ForProvision marks the change that boots a host into its image.
const ForProvision = "provision"

// Change is a power change under way: what the driver sent, how often and
// when. It is kept on the host (hostfleet.io/power-change) and written
// before each command, so that an agent restarted mid-change waits for the
// BMC instead of sending again.
type Change struct {
	Target  Target      `json:"target"`
	Command bmc.Command `json:"command"`
	// Sent is how many times Command was sent, last at SentAt.
	Sent   int              `json:"sent"`
	SentAt metav1.MicroTime `json:"sentAt"`
	// Since is when the change began.
	Since metav1.MicroTime `json:"since"`
	// Left: since the restart was sent, the BMC reported the host not On.
	Left bool `json:"left,omitempty"`
	// For names the step the change belongs to (ForProvision), if any.
	For string `json:"for,omitempty"`
}

// Want is the power a host should have.
type Want struct {
	On bool
	// Reboot: restart a host that is on (one that is off is powered on).
	Reboot bool
	// Hard: no soft power-off first (reboot: one ForceRestart).
	Hard bool
	// For marks a change this Want starts.
	For string
}

// Timing bounds a power change.
type Timing struct {
	// Wait is how long a command has to land before it is sent again;
	// each re-send waits twice as long as the one before, at most
	// maxWait.
	Wait time.Duration
	// SoftOff is how long a GracefulShutdown has before a ForceOff.
	SoftOff time.Duration
	// Settle: a restart has landed once the BMC reports On at least this
	// long after it, or On after it reported anything else.
	Settle time.Duration
	// Poll is how often the power is read while a change is under way.
	Poll time.Duration
}

// maxSends is how many times a command is sent before the change is
// reported stuck (it is still sent again, every maxWait at most).
const maxSends = 3

const maxWait = 5 * time.Minute

// wait is how long the n-th send of a command has to land.
func (t Timing) wait(n int) time.Duration {
	d := t.Wait
	for i := 1; i < n && d < maxWait; i++ {
		d *= 2
	}
	return min(d, max(maxWait, t.Wait))
}

// Step is what to do about a host's power after one read.
type Step struct {
	// Send, when set, is the one command to send, once Change is
	// remembered on the host.
	Send bmc.Command
	// Change is the change under way after this step (nil: none).
	Change *Change
	// Started: Change began at this step.
	Started bool
	// Landed is the change the BMC reported done at this read.
	Landed *Change
	// Escalated: a GracefulShutdown did not power the host off within
	// Timing.SoftOff; ForceOff is sent.
	Escalated bool
	// Stuck, when set, says that the change has not landed after
	// maxSends commands.
	Stuck string
	// Requeue is when to read the power again (0: the settled host's poll).
	Requeue time.Duration
}

// Decide moves a host's power one step towards want, given what the BMC
// reports (s) and the change under way (pc): at most one command, sent
// only when no change is under way or the last command timed out. The
// status follows the BMC's reads, never the commands.
func Decide(now time.Time, s bmc.PowerState, want Want, pc *Change, t Timing) Step {
	if pc != nil {
		c := *pc
		switch {
		case c.landed(s, now, t):
			st := fresh(now, s, want, t)
			st.Landed = &c
			return st
		case c.wanted(want):
			return c.follow(now, s, t)
		case !s.Settled() && now.Sub(c.SentAt.Time) < t.wait(c.Sent):
			// No longer wanted, but the BMC is busy with it: a command
			// now would be refused. Wait for it.
			return Step{Change: &c, Requeue: t.Poll}
		}
	}
	return fresh(now, s, want, t)
}

// fresh decides with no change under way.
func fresh(now time.Time, s bmc.PowerState, want Want, t Timing) Step {
	var target Target
	var cmd bmc.Command
	switch {
	case !s.Settled():
		// A change someone else started (or one the BMC does by itself):
		// wait for it to settle.
		return Step{Requeue: t.Poll}
	case want.On && want.Reboot && s == bmc.PowerOn:
		target, cmd = TargetReboot, bmc.CommandGracefulShutdown
		if want.Hard {
			cmd = bmc.CommandForceRestart
		}
	case want.On && s == bmc.PowerOff:
		target, cmd = TargetOn, bmc.CommandOn
	case !want.On && s == bmc.PowerOn:
		target, cmd = TargetOff, bmc.CommandGracefulShutdown
		if want.Hard {
			cmd = bmc.CommandForceOff
		}
	default:
		return Step{}
	}
	at := metav1.NewMicroTime(now)
	c := &Change{Target: target, Command: cmd, Sent: 1, SentAt: at, Since: at, For: want.For}
	return Step{Send: cmd, Change: c, Started: true, Requeue: t.Poll}
}

// wanted: the change still goes where want asks.
func (c *Change) wanted(want Want) bool {
	if c.Target == TargetOff {
		return !want.On
	}
	return want.On
}

// landed: the BMC reports what the change was for.
func (c *Change) landed(s bmc.PowerState, now time.Time, t Timing) bool {
	switch c.Target {
	case TargetOff:
		return s == bmc.PowerOff
	case TargetOn:
		return s == bmc.PowerOn
	}
	switch c.Command {
	case bmc.CommandOn:
		return s == bmc.PowerOn
	case bmc.CommandForceRestart:
		// A restart may never show the host off: On is trusted once it
		// left On, or once it had the time to.
		return s == bmc.PowerOn && (c.Left || now.Sub(c.SentAt.Time) >= t.Settle)
	}
	return false // a reboot's power-off is under way
}

// follow waits for the change under way, and sends its command again only
// when the last one timed out.
func (c *Change) follow(now time.Time, s bmc.PowerState, t Timing) Step {
	st := Step{Change: c, Requeue: t.Poll}
	if c.Command == bmc.CommandForceRestart && s != bmc.PowerOn {
		c.Left = true
	}
	if c.Target == TargetReboot && c.Command != bmc.CommandOn && c.Command != bmc.CommandForceRestart && s == bmc.PowerOff {
		// The reboot's power-off landed: power on.
		c.Command, c.Sent, c.SentAt = bmc.CommandOn, 1, metav1.NewMicroTime(now)
		st.Send = c.Command
		return st
	}
	elapsed := now.Sub(c.SentAt.Time)
	switch {
	case c.Command == bmc.CommandGracefulShutdown:
		// The operating system may ignore it: never sent again, forced
		// off once its time is up.
		if elapsed >= t.SoftOff {
			c.Command, c.Sent, c.SentAt = bmc.CommandForceOff, 1, metav1.NewMicroTime(now)
			st.Send, st.Escalated = c.Command, true
		} else {
			st.Requeue = min(t.Poll, t.SoftOff-elapsed)
		}
	case elapsed >= t.wait(c.Sent):
		c.Sent++
		c.SentAt = metav1.NewMicroTime(now)
		st.Send = c.Command
	default:
		st.Requeue = min(t.Poll, t.wait(c.Sent)-elapsed)
	}
	if c.Sent > maxSends {
		st.Stuck = fmt.Sprintf("%s since %s: the BMC still reports %s after %d × %s; check the BMC's event log, "+
			"the server's power supply and whether something else changes its power (sent again every %s)",
			c.words(), c.Since.UTC().Format(time.RFC3339), s, c.Sent, c.Command, t.wait(c.Sent))
	}
	return st
}

// words says what the change is doing.
func (c *Change) words() string {
	switch c.Target {
	case TargetOn:
		return "powering on"
	case TargetOff:
		return "powering off"
	}
	return "rebooting"
}

// reason is the PowerChanging reason for the change.
func (c *Change) reason() string {
	switch c.Target {
	case TargetOn:
		return hostfleetv1alpha1.ReasonPoweringOn
	case TargetOff:
		return hostfleetv1alpha1.ReasonPoweringOff
	}
	return hostfleetv1alpha1.ReasonRebooting
}

// PowerCondition is the host's PowerChanging condition: True, with what
// was sent and what the BMC reports, while a change is under way.
func PowerCondition(pc *Change, s bmc.PowerState, generation int64) metav1.Condition {
	if pc == nil {
		return metav1.Condition{Type: hostfleetv1alpha1.ConditionPowerChanging, Status: metav1.ConditionFalse,
			Reason: hostfleetv1alpha1.ReasonPowerSettled, ObservedGeneration: generation,
			Message: fmt.Sprintf("the BMC reports the host %s", s)}
	}
	times := "once"
	if pc.Sent > 1 {
		times = fmt.Sprintf("%d times", pc.Sent)
	}
	return metav1.Condition{Type: hostfleetv1alpha1.ConditionPowerChanging, Status: metav1.ConditionTrue,
		Reason: pc.reason(), ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(pc.Since.Time),
		Message: fmt.Sprintf("%s since %s: %s sent %s, the BMC reports %s", pc.words(),
			pc.Since.UTC().Format(time.RFC3339), pc.Command, times, s)}
}

// ChangeOf reads the change under way from the host's annotations; a
// malformed one is reported and counts as none.
func ChangeOf(annotations map[string]string) (*Change, error) {
	v, ok := annotations[hostfleetv1alpha1.AnnotationPowerChange]
	if !ok {
		return nil, nil
	}
	c := &Change{}
	if err := json.Unmarshal([]byte(v), c); err != nil || c.Command == "" || c.Sent < 1 {
		return nil, fmt.Errorf("annotation %s %q is not a power change the agent wrote: ignored", hostfleetv1alpha1.AnnotationPowerChange, v)
	}
	return c, nil
}

// setChange writes pc into annotations (nil removes it).
func setChange(annotations map[string]string, pc *Change) {
	if pc == nil {
		delete(annotations, hostfleetv1alpha1.AnnotationPowerChange)
		return
	}
	data, _ := json.Marshal(pc)
	annotations[hostfleetv1alpha1.AnnotationPowerChange] = string(data)
}
