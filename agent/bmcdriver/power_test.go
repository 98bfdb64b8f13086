package bmcdriver_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

var timing = bmcdriver.Timing{Wait: time.Minute, SoftOff: 3 * time.Minute, Settle: 10 * time.Second, Poll: 2 * time.Second}

// clock walks a change through Decide as the reconciler does: one read at
// a time, keeping the change each step returns.
type clock struct {
	g   *WithT
	now time.Time
	pc  *bmcdriver.Change
}

func (c *clock) read(after time.Duration, s bmc.PowerState, want bmcdriver.Want) bmcdriver.Step {
	c.now = c.now.Add(after)
	st := bmcdriver.Decide(c.now, s, want, c.pc, timing)
	c.pc = st.Change
	return st
}

func TestDecideSoftThenHardPowerOff(t *testing.T) {
	g := NewWithT(t)
	c := &clock{g: g, now: time.Unix(1e9, 0)}
	off := bmcdriver.Want{On: false}

	st := c.read(0, bmc.PowerOn, off)
	g.Expect(st.Send).To(Equal(bmc.CommandGracefulShutdown), "soft first")
	g.Expect(st.Started).To(BeTrue())
	g.Expect(st.Requeue).To(Equal(250*time.Millisecond), "read again soon after a command")
	st = c.read(250*time.Millisecond, bmc.PowerOn, off)
	g.Expect(st.Requeue).To(Equal(250 * time.Millisecond))
	st = c.read(250*time.Millisecond, bmc.PowerOn, off)
	g.Expect(st.Requeue).To(Equal(500*time.Millisecond), "then as long as the command has taken")
	st = c.read(2*time.Second, bmc.PowerOn, off)
	g.Expect(st.Requeue).To(Equal(timing.Poll), "at most every Poll")
	for i := 0; i < 80; i++ {
		st = c.read(2*time.Second, bmc.PowerOn, off)
		g.Expect(st.Send).To(BeEmpty(), "a soft power-off is never sent again, however long the OS takes (%d)", i)
	}
	st = c.read(30*time.Second, bmc.PowerOn, off)
	g.Expect(st.Send).To(Equal(bmc.CommandForceOff), "3 minutes on: forced")
	g.Expect(st.Escalated).To(BeTrue())
	st = c.read(2*time.Second, bmc.PoweringOff, off)
	g.Expect(st.Send).To(BeEmpty())
	g.Expect(st.Change).NotTo(BeNil())
	st = c.read(2*time.Second, bmc.PowerOff, off)
	g.Expect(st.Landed).NotTo(BeNil())
	g.Expect(st.Landed.Command).To(Equal(bmc.CommandForceOff))
	g.Expect(st.Change).To(BeNil())
	g.Expect(st.Send).To(BeEmpty())
	g.Expect(c.read(time.Minute, bmc.PowerOff, off)).To(Equal(bmcdriver.Step{}), "settled: nothing to do")

	t.Log("hard: ForceOff at once")
	c.pc = nil
	st = c.read(0, bmc.PowerOn, bmcdriver.Want{On: false, Hard: true})
	g.Expect(st.Send).To(Equal(bmc.CommandForceOff))
}

func TestDecideResendsWithBackoffThenStuck(t *testing.T) {
	g := NewWithT(t)
	c := &clock{g: g, now: time.Unix(1e9, 0)}
	on := bmcdriver.Want{On: true}
	g.Expect(c.read(0, bmc.PowerOff, on).Send).To(Equal(bmc.CommandOn))
	var sends []time.Duration
	start := c.now
	for i := 0; i < 1000 && len(sends) < 4; i++ {
		st := c.read(time.Second, bmc.PowerOff, on)
		if st.Send != "" {
			g.Expect(st.Send).To(Equal(bmc.CommandOn))
			sends = append(sends, c.now.Sub(start))
		}
		if len(sends) < 3 {
			g.Expect(st.Stuck).To(BeEmpty())
		}
		if len(sends) == 3 {
			g.Expect(st.Stuck).To(HavePrefix("powering on since 2001-09-09T01:46:40Z: the BMC still reports Off after 4 × On; check the BMC's event log"))
		}
	}
	g.Expect(sends).To(Equal([]time.Duration{time.Minute, 3 * time.Minute, 7 * time.Minute, 12 * time.Minute}),
		"re-sent after 1, 2, 4 minutes, then at most every 5")
	st := c.read(time.Second, bmc.PowerOn, on)
	g.Expect(st.Landed).NotTo(BeNil())
	g.Expect(st.Stuck).To(BeEmpty())
}

// TestDecideUnsent: a change whose record was written but whose command
// was not sent (the write's answer lost) is sent at the next read, once,
// not after Timing.Wait; read back as stored, it waits.
func TestDecideUnsent(t *testing.T) {
	g := NewWithT(t)
	c := &clock{g: g, now: time.Unix(1e9, 0)}
	on := bmcdriver.Want{On: true}
	first := c.read(0, bmc.PowerOff, on)
	g.Expect(first.Send).To(Equal(bmc.CommandOn))

	stored := *c.pc
	st := c.read(time.Second, bmc.PowerOff, on)
	g.Expect(st.Send).To(BeEmpty(), "a command that was sent has a minute to land")

	unsent := stored
	unsent.Unsent = true
	c.pc = &unsent
	st = c.read(time.Second, bmc.PowerOff, on)
	g.Expect(st.Send).To(Equal(bmc.CommandOn), "never sent: sent now")
	g.Expect(st.Change.Sent).To(Equal(1), "the first time")
	g.Expect(st.Change.Unsent).To(BeFalse())
	g.Expect(st.Change.SentAt.Time).To(Equal(c.now))
	g.Expect(c.read(time.Second, bmc.PowerOff, on).Send).To(BeEmpty(), "then it has its minute")
}

func TestDecideReboot(t *testing.T) {
	g := NewWithT(t)
	hard := bmcdriver.Want{On: true, Reboot: true, Hard: true}
	on := bmcdriver.Want{On: true}

	t.Log("hard: one ForceRestart; landed once the BMC left On and came back")
	c := &clock{g: g, now: time.Unix(1e9, 0)}
	st := c.read(0, bmc.PowerOn, hard)
	g.Expect(st.Send).To(Equal(bmc.CommandForceRestart))
	g.Expect(st.Change.Target).To(Equal(bmcdriver.TargetReboot))
	g.Expect(c.read(time.Second, bmc.PowerOn, on).Landed).To(BeNil(), "On right after the reset proves nothing")
	g.Expect(c.read(time.Second, bmc.PoweringOn, on).Send).To(BeEmpty())
	st = c.read(time.Second, bmc.PowerOn, on)
	g.Expect(st.Landed).NotTo(BeNil())
	g.Expect(st.Send).To(BeEmpty(), "no On after a restart")

	t.Log("hard, on a BMC that never shows it: landed after Settle")
	c = &clock{g: g, now: time.Unix(1e9, 0)}
	c.read(0, bmc.PowerOn, hard)
	g.Expect(c.read(5*time.Second, bmc.PowerOn, on).Landed).To(BeNil())
	g.Expect(c.read(5*time.Second, bmc.PowerOn, on).Landed).NotTo(BeNil())

	t.Log("soft: a soft power-off, then On")
	c = &clock{g: g, now: time.Unix(1e9, 0)}
	st = c.read(0, bmc.PowerOn, bmcdriver.Want{On: true, Reboot: true})
	g.Expect(st.Send).To(Equal(bmc.CommandGracefulShutdown))
	g.Expect(c.read(2*time.Second, bmc.PoweringOff, on).Send).To(BeEmpty())
	st = c.read(2*time.Second, bmc.PowerOff, on)
	g.Expect(st.Send).To(Equal(bmc.CommandOn))
	g.Expect(st.Landed).To(BeNil())
	g.Expect(c.read(2*time.Second, bmc.PoweringOn, on).Send).To(BeEmpty())
	st = c.read(2*time.Second, bmc.PowerOn, on)
	g.Expect(st.Landed).NotTo(BeNil())
	g.Expect(st.Landed.Target).To(Equal(bmcdriver.TargetReboot))

	t.Log("a host that is off is powered on: that is its reboot")
	c = &clock{g: g, now: time.Unix(1e9, 0)}
	g.Expect(c.read(0, bmc.PowerOff, hard).Send).To(Equal(bmc.CommandOn))
}

func TestDecideChangeOfMind(t *testing.T) {
	g := NewWithT(t)
	c := &clock{g: g, now: time.Unix(1e9, 0)}
	c.read(0, bmc.PowerOn, bmcdriver.Want{On: false, Hard: true})
	t.Log("spec.online flips back while the BMC is powering off: wait, a command now would be refused")
	st := c.read(time.Second, bmc.PoweringOff, bmcdriver.Want{On: true})
	g.Expect(st.Send).To(BeEmpty())
	g.Expect(st.Change.Target).To(Equal(bmcdriver.TargetOff))
	st = c.read(time.Second, bmc.PowerOff, bmcdriver.Want{On: true})
	g.Expect(st.Landed).NotTo(BeNil())
	g.Expect(st.Send).To(Equal(bmc.CommandOn), "then the new change")
	g.Expect(st.Change.Target).To(Equal(bmcdriver.TargetOn))

	t.Log("a change someone else started at the console: waited for, nothing sent")
	c = &clock{g: g, now: time.Unix(1e9, 0)}
	st = c.read(0, bmc.PoweringOn, bmcdriver.Want{On: false})
	g.Expect(st).To(Equal(bmcdriver.Step{Requeue: timing.Poll}))
}

// TestChangeCondition: the change under way is read back from the
// PowerChanging condition the driver wrote; anything else is none.
func TestChangeCondition(t *testing.T) {
	g := NewWithT(t)
	c, err := bmcdriver.ChangeOf(nil)
	g.Expect(c).To(BeNil())
	g.Expect(err).NotTo(HaveOccurred())
	settled := bmcdriver.PowerCondition(nil, bmc.PowerOn, 3)
	c, err = bmcdriver.ChangeOf([]metav1.Condition{settled})
	g.Expect(c).To(BeNil())
	g.Expect(err).NotTo(HaveOccurred())
	edited := metav1.Condition{Type: hostfleetv1alpha1.ConditionPowerChanging, Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonPoweringOff, Message: "off soon"}
	c, err = bmcdriver.ChangeOf([]metav1.Condition{edited})
	g.Expect(c).To(BeNil())
	g.Expect(err).To(MatchError(ContainSubstring("is not a power change the agent wrote: ignored")))

	since := metav1.NewMicroTime(time.Date(2026, 11, 22, 9, 58, 0, 123_000_000, time.UTC))
	sent := metav1.NewMicroTime(time.Date(2026, 11, 22, 10, 0, 0, 456_000_000, time.UTC))
	for _, want := range []bmcdriver.Change{
		{Target: bmcdriver.TargetOff, Command: bmc.CommandForceOff, Sent: 2, SentAt: sent, Since: since},
		{Target: bmcdriver.TargetOn, Command: bmc.CommandOn, Sent: 1, SentAt: sent, Since: since, For: bmcdriver.ForProvision},
		{Target: bmcdriver.TargetReboot, Command: bmc.CommandForceRestart, Sent: 12, SentAt: sent, Since: since, Left: true, For: bmcdriver.ForProvision},
		{Target: bmcdriver.TargetOn, Command: bmc.CommandOn, Sent: 2, SentAt: sent, Since: since, For: bmcdriver.ForErase},
		{Target: bmcdriver.TargetReboot, Command: bmc.CommandGracefulShutdown, Sent: 1, SentAt: since, Since: since},
	} {
		cond := bmcdriver.PowerCondition(&want, bmc.PoweringOff, 3)
		g.Expect(cond.LastTransitionTime.Time).To(Equal(since.Truncate(time.Second)), "as stored")
		got, err := bmcdriver.ChangeOf([]metav1.Condition{cond})
		g.Expect(err).NotTo(HaveOccurred(), cond.Message)
		g.Expect(*got).To(Equal(want), cond.Message)
	}
	cond := bmcdriver.PowerCondition(&bmcdriver.Change{Target: bmcdriver.TargetOff, Command: bmc.CommandForceOff, Sent: 2, SentAt: sent, Since: since}, bmc.PoweringOff, 3)
	g.Expect(cond.Reason).To(Equal(hostfleetv1alpha1.ReasonPoweringOff))
	g.Expect(cond.Message).To(Equal("powering off since 2026-11-22T09:58:00.123Z: ForceOff sent 2 times, last at 2026-11-22T10:00:00.456Z; the BMC reports PoweringOff"))
}
