// Package rollout decides a firmware rollout's next step: which hosts start
// their update now and when the rollout halts (Next, pure). A rollout
// follows a change of a FirmwareBaseline across the fleet in waves: a
// canary, a soak, then growing shares of the hosts, never more than a set
// number per cluster at once; free hosts first; a bound host only as its
// tenant chose (in place within its window, moved to an updated host, or
// held until approved).
package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// State is where a host stands in a rollout.
type State int

const (
	// Behind: the host runs another version and has not started.
	Behind State = iota
	// Updating: started, not yet verified.
	Updating
	// Current: verified at the rollout's version.
	Current
	// Failed: its update failed; it is held with its reason, never offered.
	Failed
)

func (s State) String() string { return [...]string{"Behind", "Updating", "Current", "Failed"}[s] }

// Mode is how a bound host's tenant takes an update.
type Mode int

const (
	// InPlace: staged and applied at a reboot in the tenant's window; the
	// host keeps its claim.
	InPlace Mode = iota
	// Move: the claim moves to an updated free host; this one is updated
	// once free.
	Move
	// Hold: the host waits for the tenant's approval.
	Hold
)

func (m Mode) String() string { return [...]string{"InPlace", "Move", "Hold"}[m] }

// Host is one host of the rollout, as last reported by its cluster's agent.
type Host struct {
	Cluster, Name string
	State         State
	// Bound: a claim holds the host; Mode is its tenant's choice.
	Bound bool
	Mode  Mode
	// Window: a bound host's update may start now (the tenant approved, its
	// window is open, or its deadline passed).
	Window bool
	// Wave is the wave the host started in (for Updating, Current, Failed).
	Wave int
	// Finished is when the host became Current or Failed.
	Finished time.Time
}

// Strategy is how the administrator rolls a version out.
type Strategy struct {
	// Canary is how many hosts go first, fleet-wide.
	Canary int
	// Soak is how long a wave's last host is watched before the next wave.
	Soak time.Duration
	// Waves are the growing shares of the hosts, in percent, after the
	// canary; the last is 100.
	Waves []int
	// MaxPerCluster is how many hosts of one cluster update at once.
	MaxPerCluster int
	// MaxFailedPercent is the share of a wave's hosts that may fail before
	// the rollout halts.
	MaxFailedPercent int
}

// Input is what Next decides from.
type Input struct {
	Strategy Strategy
	Hosts    []Host
	// Wave is the wave under way: 0 the canary, i the strategy's Waves[i-1].
	Wave int
	// Halted: the rollout halted and the administrator has not resumed it.
	Halted bool
	// Accepted is how many failures of the wave under way the
	// administrator accepted by resuming: they no longer halt it.
	Accepted int
	// Away are the clusters whose agent is not available: none of their
	// hosts starts.
	Away map[string]bool
	Now  time.Time
}

// Decision is Next's answer.
type Decision struct {
	// Start are the hosts (indexes into Input.Hosts) to start now.
	Start []int
	// Wave is the wave under way after this step.
	Wave int
	// Halt: the rollout halts now (Reason says why); hosts mid-update
	// finish, none starts.
	Halt   bool
	Reason string
	// Complete: no host is behind or updating.
	Complete bool
	// After is when to look again for the soak to end (0: on the next
	// change).
	After time.Duration
}

// Next decides a rollout's next step: it halts if the wave under way
// failed past its share; it starts the hosts the wave still allows (free
// hosts first, then bound ones whose tenant's window is open or whose claim
// moves; never more than MaxPerCluster updating per cluster; none in a
// cluster whose agent is away); once nothing more of the wave can start
// and none of its hosts is updating, it soaks, then moves to the next wave.
// The rollout is complete when no host is behind or updating.
func Next(in Input) Decision {
	d := Decision{Wave: in.Wave}
	if in.Halted {
		d.Halt, d.Reason = true, "halted: resume, or roll back by setting the previous version"
		return d
	}
	if failed, started := waveCount(in.Hosts, in.Wave); failed > in.Accepted && (failed-in.Accepted)*100 > in.Strategy.MaxFailedPercent*started {
		d.Halt, d.Reason = true, fmt.Sprintf("%d of the %d hosts of wave %d failed, more than %d%%", failed, started, in.Wave, in.Strategy.MaxFailedPercent)
		return d
	}
	if d.Complete = finished(in.Hosts); d.Complete {
		return d
	}
	if d.Start = pick(in, targetOf(in.Strategy, in.Wave, len(in.Hosts))-started(in.Hosts)); len(d.Start) > 0 {
		return d
	}
	done, last := waveDone(in.Hosts, in.Wave)
	if !done || in.Wave >= len(in.Strategy.Waves) {
		return d // hosts updating, or the last wave waiting for windows and approvals
	}
	if soaked := last.Add(in.Strategy.Soak); in.Now.Before(soaked) {
		d.After = soaked.Sub(in.Now)
		return d
	}
	d.Wave = in.Wave + 1
	d.Start = pick(in, targetOf(in.Strategy, d.Wave, len(in.Hosts))-started(in.Hosts))
	return d
}

// targetOf is how many hosts have started once wave w is under way: the
// canary's count, then each wave's share of n (at least the canary's).
func targetOf(s Strategy, w, n int) int {
	t := min(s.Canary, n)
	if w > 0 && w <= len(s.Waves) {
		t = max(t, (n*s.Waves[w-1]+99)/100)
	}
	return min(t, n)
}

// pick chooses up to n hosts to start, free ones first, within each
// cluster's limit.
func pick(in Input, n int) []int {
	if n <= 0 {
		return nil
	}
	updating := map[string]int{}
	var ready []int
	for i, h := range in.Hosts {
		switch {
		case h.State == Updating:
			updating[h.Cluster]++
		case h.State == Behind && !in.Away[h.Cluster] && startable(h):
			ready = append(ready, i)
		}
	}
	slices.SortStableFunc(ready, func(a, b int) int {
		x, y := in.Hosts[a], in.Hosts[b]
		return cmp.Or(cmp.Compare(boolInt(x.Bound), boolInt(y.Bound)), cmp.Compare(x.Cluster, y.Cluster), cmp.Compare(x.Name, y.Name))
	})
	var out []int
	for _, i := range ready {
		if len(out) == n {
			break
		}
		c := in.Hosts[i].Cluster
		if updating[c] >= in.Strategy.MaxPerCluster {
			continue
		}
		updating[c]++
		out = append(out, i)
	}
	return out
}

// startable says whether a host behind may start when its wave comes: a
// free host always, a bound one in place within its window, one whose
// claim moves, and one held only once approved (its window).
func startable(h Host) bool {
	if !h.Bound {
		return true
	}
	return h.Mode == Move || h.Window
}

// waveCount counts the hosts that started in wave w and those of them that
// failed.
func waveCount(hosts []Host, w int) (failed, started int) {
	for _, h := range hosts {
		if h.State != Behind && h.Wave == w {
			started++
			if h.State == Failed {
				failed++
			}
		}
	}
	return failed, started
}

// waveDone says whether every host that started is done (none updating),
// and when the last finished.
func waveDone(hosts []Host, w int) (bool, time.Time) {
	var last time.Time
	for _, h := range hosts {
		if h.State == Updating {
			return false, time.Time{}
		}
		if h.State != Behind && h.Wave == w && h.Finished.After(last) {
			last = h.Finished
		}
	}
	return true, last
}

// started counts the hosts that have started, in any wave.
func started(hosts []Host) int {
	n := 0
	for _, h := range hosts {
		if h.State != Behind {
			n++
		}
	}
	return n
}

// finished says whether no host is behind or updating: the rollout is
// complete (a failed host stays held, with its reason).
func finished(hosts []Host) bool {
	for _, h := range hosts {
		if h.State == Behind || h.State == Updating {
			return false
		}
	}
	return true
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
