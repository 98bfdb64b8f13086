package bmcdriver

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
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

// ForProvision marks the change that boots a host into its image;
// ForErase the one that boots a released host into the erase image.
const (
	ForProvision = "provision"
	ForErase     = "erase"
)

// Change is a power change under way: what the driver sent, how often and
// when. It is kept in the host's PowerChanging condition and written before
// each command, so that an agent restarted mid-change waits for the BMC
// instead of sending again.
type Change struct {
	Target  Target
	Command bmc.Command
	// Sent is how many times Command was sent, last at SentAt.
	Sent   int
	SentAt metav1.MicroTime
	// Since is when the change began.
	Since metav1.MicroTime
	// Left: since the restart was sent, the BMC reported the host not On.
	Left bool
	// For names the step the change belongs to (ForProvision), if any.
	For string
	// Unsent: the change was remembered and its command not sent, as the
	// write's answer was lost (it landed, the agent could not know). Only
	// the agent that wrote it knows; it is never stored.
	Unsent bool
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

// firstRead is how soon after a command the power is read again: a BMC
// that answers at once is seen done at once; each later read waits as long
// as the command has already taken, at most Timing.Poll.
const firstRead = 250 * time.Millisecond

// readAgain is when to read the power again, elapsed after the last send.
func (t Timing) readAgain(elapsed time.Duration) time.Duration {
	return max(min(firstRead, t.Poll), min(t.Poll, elapsed))
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
			if c.Target == TargetReboot {
				want.Reboot = false // the reboot asked for is this one
			}
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
	return Step{Send: cmd, Change: c, Started: true, Requeue: t.readAgain(0)}
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
	elapsed := now.Sub(c.SentAt.Time)
	st := Step{Change: c, Requeue: t.readAgain(elapsed)}
	if c.Unsent {
		// Its record stands and nothing was sent: send it now, as it
		// would have been.
		c.Unsent, c.SentAt = false, metav1.NewMicroTime(now)
		st.Send, st.Requeue = c.Command, t.readAgain(0)
		return st
	}
	if c.Command == bmc.CommandForceRestart && s != bmc.PowerOn {
		c.Left = true
	}
	if c.Target == TargetReboot && c.Command != bmc.CommandOn && c.Command != bmc.CommandForceRestart && s == bmc.PowerOff {
		// The reboot's power-off landed: power on.
		c.Command, c.Sent, c.SentAt = bmc.CommandOn, 1, metav1.NewMicroTime(now)
		st.Send, st.Requeue = c.Command, t.readAgain(0)
		return st
	}
	switch {
	case c.Command == bmc.CommandGracefulShutdown:
		// The operating system may ignore it: never sent again, forced
		// off once its time is up.
		if elapsed >= t.SoftOff {
			c.Command, c.Sent, c.SentAt = bmc.CommandForceOff, 1, metav1.NewMicroTime(now)
			st.Send, st.Escalated, st.Requeue = c.Command, true, t.readAgain(0)
		} else {
			st.Requeue = min(st.Requeue, t.SoftOff-elapsed)
		}
	case elapsed >= t.wait(c.Sent):
		c.Sent++
		c.SentAt = metav1.NewMicroTime(now)
		st.Send, st.Requeue = c.Command, t.readAgain(0)
	default:
		st.Requeue = min(st.Requeue, t.wait(c.Sent)-elapsed)
	}
	if c.Sent > maxSends {
		st.Stuck = fmt.Sprintf("%s since %s: the BMC still reports %s after %d × %s; check the BMC's event log, "+
			"the server's power supply and whether something else changes its power (sent again every %s)",
			c.words(), c.Since.UTC().Format(time.RFC3339), s, c.Sent, c.Command, t.wait(c.Sent))
	}
	return st
}

// same: o is c as its record reads back (times to the millisecond).
func (c Change) same(o *Change) bool {
	return c.Target == o.Target && c.Command == o.Command && c.Sent == o.Sent &&
		c.SentAt.Truncate(time.Millisecond).Equal(o.SentAt.Truncate(time.Millisecond))
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
// was sent and what the BMC reports, while a change is under way. It is
// the driver's record of the change too (ChangeOf reads it back).
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
	var extra string
	if pc.For != "" {
		extra += ", to " + pc.For
	}
	if pc.Left {
		extra += ", the host has left On"
	}
	return metav1.Condition{Type: hostfleetv1alpha1.ConditionPowerChanging, Status: metav1.ConditionTrue,
		Reason: pc.reason(), ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(pc.Since.Time).Rfc3339Copy(),
		Message: fmt.Sprintf("%s since %s: %s sent %s, last at %s%s%s%s", pc.words(),
			pc.Since.UTC().Format(changeTime), pc.Command, times, pc.SentAt.UTC().Format(changeTime), extra, readSuffix, s)}
}

// SetHealth writes the health the BMC reported with its power into the
// host's HardwareHealthy condition, or removes it when the BMC says nothing
// of it.
func SetHealth(conditions *[]metav1.Condition, generation int64, hr bmc.HealthReader) {
	h, what := hr.Health()
	c := metav1.Condition{Type: hostfleetv1alpha1.ConditionHardwareHealthy, ObservedGeneration: generation,
		Status: metav1.ConditionFalse, Message: "the BMC reports " + what}
	switch h {
	case bmc.HealthUnknown:
		meta.RemoveStatusCondition(conditions, hostfleetv1alpha1.ConditionHardwareHealthy)
		return
	case bmc.HealthOK:
		c.Status, c.Reason = metav1.ConditionTrue, hostfleetv1alpha1.ReasonHealthOK
	case bmc.HealthWarning:
		c.Reason = hostfleetv1alpha1.ReasonHealthWarning
	default:
		c.Reason = hostfleetv1alpha1.ReasonHealthCritical
	}
	if what == "" {
		c.Message = "the BMC reports no fault"
	}
	meta.SetStatusCondition(conditions, c)
}

// readSuffix ends a change's message with what the BMC reported when it
// was written.
const readSuffix = "; the BMC reports "

// changeTime is how a change's times are written: to the millisecond, which
// its timing needs (a restart settles within seconds).
const changeTime = "2006-01-02T15:04:05.000Z07:00"

var changeMessage = regexp.MustCompile(`^(powering on|powering off|rebooting) since (\S+): (\w+) sent (once|\d+ times), last at ([^,;]+)(, to (?:provision|erase))?(, the host has left On)?; the BMC reports \w+$`)

// ChangeOf reads the change under way from the host's PowerChanging
// condition; one the agent did not write is reported and counts as none.
func ChangeOf(conditions []metav1.Condition) (*Change, error) {
	cond := meta.FindStatusCondition(conditions, hostfleetv1alpha1.ConditionPowerChanging)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return nil, nil
	}
	bad := fmt.Errorf("condition %s %q is not a power change the agent wrote: ignored", hostfleetv1alpha1.ConditionPowerChanging, cond.Message)
	m := changeMessage.FindStringSubmatch(cond.Message)
	if m == nil {
		return nil, bad
	}
	c := &Change{Target: map[string]Target{"powering on": TargetOn, "powering off": TargetOff, "rebooting": TargetReboot}[m[1]],
		Command: bmc.Command(m[3]), Sent: 1, Left: m[7] != ""}
	if m[4] != "once" {
		n, err := strconv.Atoi(strings.TrimSuffix(m[4], " times"))
		if err != nil || n < 1 {
			return nil, bad
		}
		c.Sent = n
	}
	for _, t := range []struct {
		v   string
		out *metav1.MicroTime
	}{{m[2], &c.Since}, {m[5], &c.SentAt}} {
		at, err := time.Parse(changeTime, t.v)
		if err != nil {
			return nil, bad
		}
		*t.out = metav1.NewMicroTime(at)
	}
	if m[6] != "" {
		c.For = strings.TrimPrefix(m[6], ", to ")
	}
	return c, nil
}
