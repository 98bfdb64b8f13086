package rollout

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestNext(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	strategy := Strategy{Canary: 1, Soak: 10 * time.Minute, Waves: []int{50, 100}, MaxPerCluster: 1, MaxFailedPercent: 20}
	// fleet is two clusters of three hosts: a free, a free, a bound one
	// (in place, no window yet).
	fleet := func(mut ...func([]Host)) []Host {
		var hs []Host
		for _, c := range []string{"infra-1", "infra-2"} {
			hs = append(hs, Host{Cluster: c, Name: "h0"}, Host{Cluster: c, Name: "h1"}, Host{Cluster: c, Name: "h2", Bound: true})
		}
		for _, m := range mut {
			m(hs)
		}
		return hs
	}
	done := func(state State, wave int, ago time.Duration) func(*Host) {
		return func(h *Host) { h.State, h.Wave, h.Finished = state, wave, now.Add(-ago) }
	}
	set := func(i int, m func(*Host)) func([]Host) { return func(hs []Host) { m(&hs[i]) } }
	tests := []struct {
		name string
		in   Input
		want Decision
	}{
		{name: "the canary: one free host, the first by cluster and name",
			in: Input{Hosts: fleet()}, want: Decision{Start: []int{0}}},
		{name: "the canary updating: nothing more",
			in: Input{Hosts: fleet(set(0, func(h *Host) { h.State = Updating }))}, want: Decision{}},
		{name: "the canary current, soaking: look again when the soak ends",
			in: Input{Hosts: fleet(set(0, done(Current, 0, 4*time.Minute)))}, want: Decision{After: 6 * time.Minute}},
		{name: "soaked: the next wave, half the hosts, free first, one per cluster at once",
			in: Input{Hosts: fleet(set(0, done(Current, 0, 11*time.Minute)))}, want: Decision{Wave: 1, Start: []int{1, 3}}},
		{name: "a cluster's limit reached: its next host waits",
			in:   Input{Wave: 1, Hosts: fleet(set(0, done(Current, 0, time.Hour)), set(3, func(h *Host) { h.State, h.Wave = Updating, 1 }))},
			want: Decision{Wave: 1, Start: []int{1}}},
		{name: "the canary failed: halted before the second wave",
			in:   Input{Hosts: fleet(set(0, done(Failed, 0, time.Minute)))},
			want: Decision{Halt: true, Reason: "1 of the 1 hosts of wave 0 failed, more than 20%"}},
		{name: "halted: nothing starts",
			in: Input{Halted: true, Hosts: fleet()}, want: Decision{Halt: true, Reason: "halted: resume, or roll back by setting the previous version"}},
		{name: "resumed, the failure accepted: the rollout goes on",
			in:   Input{Accepted: 1, Hosts: fleet(set(0, done(Failed, 0, time.Hour)))},
			want: Decision{Wave: 1, Start: []int{1, 3}}},
		{name: "a cluster's agent away: its hosts wait",
			in:   Input{Wave: 1, Away: map[string]bool{"infra-2": true}, Hosts: fleet(set(0, done(Current, 0, time.Hour)))},
			want: Decision{Wave: 1, Start: []int{1}}},
		{name: "the last wave, only bound hosts left without a window: waiting, not failed",
			in: Input{Wave: 2, Hosts: fleet(func(hs []Host) {
				for _, i := range []int{0, 1, 3, 4} {
					done(Current, 1, time.Hour)(&hs[i])
				}
			})}, want: Decision{Wave: 2}},
		{name: "a tenant's window opens: its host starts in place",
			in: Input{Wave: 2, Hosts: fleet(func(hs []Host) {
				for _, i := range []int{0, 1, 3, 4} {
					done(Current, 1, time.Hour)(&hs[i])
				}
				hs[5].Window = true
			})}, want: Decision{Wave: 2, Start: []int{5}}},
		{name: "a claim that moves: its host starts without a window",
			in: Input{Wave: 2, Hosts: fleet(func(hs []Host) {
				for _, i := range []int{0, 1, 3, 4} {
					done(Current, 1, time.Hour)(&hs[i])
				}
				hs[2].Mode = Move
			})}, want: Decision{Wave: 2, Start: []int{2}}},
		{name: "held for approval: waits even with its deadline's window unset",
			in: Input{Wave: 2, Hosts: fleet(func(hs []Host) {
				for _, i := range []int{0, 1, 3, 4} {
					done(Current, 1, time.Hour)(&hs[i])
				}
				hs[2].Mode, hs[5].Mode = Hold, Hold
			})}, want: Decision{Wave: 2}},
		{name: "every host current or failed and held: complete",
			in: Input{Wave: 2, Accepted: 1, Hosts: fleet(func(hs []Host) {
				for i := range hs {
					done(Current, 2, time.Hour)(&hs[i])
				}
				hs[5].State = Failed
			}), Strategy: Strategy{MaxFailedPercent: 50}}, want: Decision{Wave: 2, Complete: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			if tt.in.Strategy.Waves == nil {
				tt.in.Strategy = strategy
			}
			tt.in.Now = now
			g.Expect(Next(tt.in)).To(Equal(tt.want))
		})
	}
}

// FuzzNext: whatever the hosts and the strategy, Next never starts more
// than MaxPerCluster updating hosts in a cluster, a bound host without its
// window (unless its claim moves), a host not behind or twice, a host of a
// cluster whose agent is away, or anything once halted.
func FuzzNext(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(1), uint8(2), uint8(20), uint8(0), false)
	f.Add([]byte{3, 3, 3, 3, 0, 0, 0, 0}, uint8(0), uint8(1), uint8(0), uint8(1), true)
	f.Fuzz(func(t *testing.T, hosts []byte, canary, perCluster, failPct, wave uint8, halted bool) {
		now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
		in := Input{Strategy: Strategy{Canary: int(canary % 8), Soak: time.Minute, Waves: []int{10, 50, 100}, MaxPerCluster: int(perCluster % 4),
			MaxFailedPercent: int(failPct % 101)}, Wave: int(wave % 4), Halted: halted, Away: map[string]bool{"c3": true}, Now: now}
		for i, b := range hosts {
			in.Hosts = append(in.Hosts, Host{Cluster: fmt.Sprintf("c%d", b%4), Name: fmt.Sprintf("h%d", i), State: State(b >> 2 % 4),
				Bound: b&16 != 0, Mode: Mode(b >> 5 % 3), Window: b&128 != 0, Wave: int(b % 4), Finished: now.Add(-time.Duration(b) * time.Second)})
		}
		d := Next(in)
		if (in.Halted || d.Halt) && len(d.Start) > 0 {
			t.Fatalf("started %v while halted", d.Start)
		}
		updating := map[string]int{}
		for _, h := range in.Hosts {
			if h.State == Updating {
				updating[h.Cluster]++
			}
		}
		seen := map[int]bool{}
		for _, i := range d.Start {
			h := in.Hosts[i]
			switch {
			case seen[i]:
				t.Fatalf("host %d started twice", i)
			case h.State != Behind:
				t.Fatalf("host %d started from %s", i, h.State)
			case h.Bound && !h.Window && h.Mode != Move:
				t.Fatalf("bound host %d (%s) started without its window", i, h.Mode)
			case in.Away[h.Cluster]:
				t.Fatalf("host %d of %s started with its agent away", i, h.Cluster)
			}
			seen[i] = true
			if updating[h.Cluster]++; updating[h.Cluster] > in.Strategy.MaxPerCluster {
				t.Fatalf("%d hosts of %s updating at once, limit %d", updating[h.Cluster], h.Cluster, in.Strategy.MaxPerCluster)
			}
		}
		if d.Wave < in.Wave || d.Wave > in.Wave+1 {
			t.Fatalf("wave %d after %d", d.Wave, in.Wave)
		}
	})
}
