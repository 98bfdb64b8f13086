package bmcdriver

import (
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/agent/bmc"
)

var (
	powerStates = []bmc.PowerState{bmc.PowerOn, bmc.PowerOff, bmc.PoweringOn, bmc.PoweringOff}
	commands    = []bmc.Command{bmc.CommandOn, bmc.CommandForceOff, bmc.CommandGracefulShutdown, bmc.CommandForceRestart}
	targets     = []Target{TargetOn, TargetOff, TargetReboot}
)

// FuzzPowerDecide: whatever the BMC reports and whatever change is under
// way, Decide sends at most the change's own command, never into a
// transition the BMC reports, never again before the last send's wait
// (but to force off a soft power-off past its time, or to power on after
// a reboot's power-off), and a step with a change always reads again.
func FuzzPowerDecide(f *testing.F) {
	f.Add(uint8(0), uint8(1), false, false, true, uint8(0), uint8(0), uint8(1), int64(5000), false)
	f.Add(uint8(2), uint8(3), true, true, false, uint8(3), uint8(2), uint8(4), int64(400000), true)
	f.Fuzz(func(t *testing.T, state, target uint8, wantOn, reboot, hard bool, command, sent, since uint8, elapsedMS int64, hasChange bool) {
		now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		s := powerStates[int(state)%len(powerStates)]
		timing := Timing{Wait: 2 * time.Second, SoftOff: 10 * time.Second, Settle: 3 * time.Second, Poll: time.Second}
		var pc *Change
		if hasChange {
			at := metav1.NewMicroTime(now.Add(-time.Duration(elapsedMS%600_000) * time.Millisecond))
			pc = &Change{Target: targets[int(target)%len(targets)], Command: commands[int(command)%len(commands)], Sent: 1 + int(sent%6),
				SentAt: at, Since: metav1.NewMicroTime(at.Add(-time.Duration(since) * time.Second))}
		}
		var before Change
		if pc != nil {
			before = *pc
		}
		st := Decide(now, s, Want{On: wantOn, Reboot: reboot, Hard: hard}, pc, timing)
		if st.Send == "" {
			return
		}
		switch {
		case st.Change == nil || st.Change.Command != st.Send:
			t.Fatalf("sent %s outside the change it remembers: %+v", st.Send, st.Change)
		case !s.Settled() && !st.Started && pc == nil:
			t.Fatalf("sent %s while the BMC reports %s", st.Send, s)
		case st.Requeue <= 0:
			t.Fatalf("sent %s without reading the power again", st.Send)
		}
		if pc != nil && st.Landed == nil && !st.Started && !st.Escalated && before.Command == st.Send &&
			now.Sub(before.SentAt.Time) < timing.wait(before.Sent) {
			t.Fatalf("sent %s again %s after the last, before its wait %s", st.Send, now.Sub(before.SentAt.Time), timing.wait(before.Sent))
		}
	})
}

// FuzzChangeOf: a PowerChanging condition anyone may have written is read
// back as a change the agent wrote or refused, never a panic; a change the
// agent writes is read back as itself.
func FuzzChangeOf(f *testing.F) {
	f.Add("powering on since 2026-11-22T09:58:00.123Z: On sent 2 times, last at 2026-11-22T10:00:00.456Z, to erase; the BMC reports Off")
	f.Add("rebooting since x: ForceRestart sent 0 times, last at y; the BMC reports On")
	f.Fuzz(func(t *testing.T, msg string) {
		c, err := ChangeOf([]metav1.Condition{{Type: "PowerChanging", Status: metav1.ConditionTrue, Message: msg}})
		if err != nil || c == nil {
			return
		}
		if c.Sent < 1 || c.Target == "" {
			t.Fatalf("read a change the agent cannot have written: %+v", c)
		}
		back, err := ChangeOf([]metav1.Condition{PowerCondition(c, bmc.PowerOn, 1)})
		if err != nil || back.Command != c.Command || back.Sent != c.Sent || back.For != c.For || back.Target != c.Target {
			t.Fatalf("%+v written and read back as %+v (%v)", c, back, err)
		}
	})
}

// FuzzRebootRequest: any annotations read as a reboot request that names
// only reboot annotations for removal.
func FuzzRebootRequest(f *testing.F) {
	f.Add("reboot.metal3.io", `{"mode":"hard"}`, "reboot.metal3.io/x", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		r := RebootRequest(map[string]string{k1: v1, k2: v2})
		for _, k := range r.Keys {
			if k != metal3api.RebootAnnotationPrefix {
				t.Fatalf("would remove %q, not the one-shot reboot annotation", k)
			}
		}
		if r.HoldOff && !r.Requested {
			t.Fatalf("hold off without a request: %+v", r)
		}
	})
}
