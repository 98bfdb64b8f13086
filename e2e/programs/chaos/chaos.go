// Package chaos churns claims over many BMC-driven hosts while it kills the
// hub and the agents (SIGKILL) and stops the hub's API server for a while,
// then checks from the API servers that nothing was lost: no host bound to
// a claim that is gone or does not name it back, no claim holding two
// hosts, no copy left behind, every claim Ready or saying why (make chaos;
// a smaller run with a fixed seed is part of make test).
//
// The hosts are driven by the agent's own BMC driver through emulated
// Redfish BMCs, never by baremetal-operator's test mode, whose one fixture
// provisioner makes hosts that change at once undo each other.
package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Options size a run.
type Options struct {
	// Bin holds hostfleet-hub and hostfleet-agent; Dir receives
	// kubeconfigs and logs.
	Bin, Dir string
	Out      io.Writer
	// Seed fixes every random choice.
	Seed uint64
	// Planes is the number of infrastructure planes; Hosts the BMC-driven
	// hosts spread over them.
	Planes, Hosts int
	// Claims is how many claims are created in all; Live bounds how many
	// exist at once (default: Hosts + Hosts/5, so some always wait).
	Claims, Live int
	// Rate is the churn's operations per second (create, update, delete).
	Rate float64
	// Kills is how many times the hub or an agent is killed; Outage how
	// long the hub's API server is stopped, once, mid-run.
	Kills  int
	Outage time.Duration
	// Partitions is how many times an agent is cut from an API server
	// (the hub's, its plane's, its plane's mid-release, in turn), each for
	// PartitionFor.
	Partitions   int
	PartitionFor time.Duration
	// HostFailures is how many bound hosts fail, one after another: the
	// BMC answers 500 until the host's claim says it is fenced, at most
	// FailFor. The tenant replaces failed hosts after 5 s.
	HostFailures int
	FailFor      time.Duration
	// Converge bounds the time the fleet may take to settle after the churn.
	Converge time.Duration
}

// Report is what a run did and found.
type Report struct {
	Created, Updated, Deleted int
	// Kills names what was killed, in order.
	Kills []string
	// Outage is how long the hub's API server was stopped.
	Outage time.Duration
	// Partitions say which agent was cut from what, and for how long;
	// LastHeal is when the last one healed.
	Partitions []string
	LastHeal   time.Time
	// Conflicts and Failures count the churn's writes retried after a
	// conflict (an agent or the hub wrote the claim first) or a failure
	// (the outage, a timeout).
	Conflicts, Failures int
	// Converged is the time from the end of the churn, the kills, the
	// outage and the partitions to every invariant holding; SinceHeal
	// from the last partition's heal.
	Converged, SinceHeal time.Duration
	// Exits are the processes that ended by themselves (and were started
	// again, as a Deployment's pods are), with the last line of their log.
	Exits []string
	// HostFailures say which hosts failed and what their claims did.
	HostFailures []string
	// Quarantined counts the hosts seen quarantined, Rebound the claims
	// seen bound to another host after one.
	Quarantined, Rebound int
	// Final is the last check, with what the watches of the hosts found
	// at any moment of the run.
	Final Check
}

// Run runs the chaos: planes, emulators, hub and agents, churn with kills
// and an outage, then waits for the invariants to hold.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Live == 0 {
		o.Live = o.Hosts + o.Hosts/5
	}
	say := func(format string, a ...any) { fmt.Fprintf(o.Out, format+"\n", a...) }
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed))
	infras := infraNames(o.Planes)
	start := time.Now()
	f, err := planes.Start(ctx, planes.Options{Dir: o.Dir}, append([]string{"hub"}, infras...)...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Stop() }()
	say("%d control planes up in %s", 1+o.Planes, time.Since(start).Round(100*time.Millisecond))

	images := redfish.ImageServer()
	defer images.Close()
	bmcs := startBMCs(o.Hosts)
	defer func() {
		for _, b := range bmcs {
			b.Close()
		}
	}()
	if err := setUp(ctx, f, infras, bmcs); err != nil {
		return nil, err
	}
	watches, err := watchAll(ctx, f, infras, bmcs, o)
	defer stopAll(watches)
	if err != nil {
		return nil, err
	}
	say("%d hosts on %s, each driven by its agent through an emulated Redfish BMC", o.Hosts, strings.Join(infras, ", "))

	fl := &fleet{f: f, bin: o.Bin, infras: infras, bmcs: bmcs}
	flCtx, stopFleet := context.WithCancel(ctx)
	defer stopFleet() // before the planes stop: nothing is restarted then
	if err := fl.startAll(flCtx); err != nil {
		return nil, err
	}
	if err := waitHostsAvailable(ctx, f, infras, o.Hosts, 5*time.Minute); err != nil {
		return nil, err
	}
	say("hostfleet-hub and %d agents running; every host registered and inspected (%s)", o.Planes, time.Since(start).Round(time.Second))

	rep := &Report{}
	hub := f.Plane("hub").Client
	ch := &churn{hub: hub, bmcs: bmcs, rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), o: o, liveISO: images.URL + "/live.iso"}
	ops := ch.plannedOps()
	duration := time.Duration(float64(ops) / o.Rate * float64(time.Second))
	say("churn: %d claims created, updated and deleted at random (about %d operations, %.0f/s), %d kills, the hub API server stopped for %s, %d agents cut from an API server for %s, %d hosts failing",
		o.Claims, ops, o.Rate, o.Kills, o.Outage, o.Partitions, o.PartitionFor, o.HostFailures)

	plan := planPartitions(o.Partitions, infras, duration+o.Outage, o.PartitionFor, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())))
	if err := chaos(ctx, f, fl, ch, o, duration, plan, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), rep, say); err != nil {
		return rep, err
	}
	over := time.Now()
	rep.Created, rep.Updated, rep.Deleted = ch.created, ch.updated, ch.deleted
	rep.Conflicts, rep.Failures = ch.conflicts, ch.failures
	say("churn done: %d created, %d updated, %d deleted; writes retried after %d conflicts and %d failures; %d kills; converging…",
		rep.Created, rep.Updated, rep.Deleted, rep.Conflicts, rep.Failures, len(rep.Kills))

	err = converge(ctx, f, infras, bmcs, o.Converge, over, rep)
	watched(watches, rep)
	if err != nil {
		return rep, err
	}
	if err := exits(fl, rep, say); err != nil {
		return rep, err
	}
	say("converged %s after the churn, the last kill, the outage and the last partition ended (%s after the last heal): %s",
		rep.Converged.Round(100*time.Millisecond), rep.SinceHeal.Round(100*time.Millisecond), rep.Final)
	say("%d hosts seen quarantined, %d claims seen bound to another host after one; the watches of the hosts found %d violations",
		rep.Quarantined, rep.Rebound, len(rep.Final.Violations))
	say("logs in %s", o.Dir)
	return rep, nil
}

// startBMCs starts n emulated Redfish BMCs, host-N's the Nth.
func startBMCs(n int) []*redfish.BMC {
	bmcs := make([]*redfish.BMC, n)
	for i := range bmcs {
		bmcs[i] = redfish.Start(redfish.Options{Hardware: redfish.DefaultHardware(fmt.Sprintf("CHAOS%04d", i))})
	}
	return bmcs
}

// watchAll gives the tenant a healing policy if hosts are to fail, and
// starts watching every plane's hosts.
func watchAll(ctx context.Context, f *planes.Fleet, infras []string, bmcs []*redfish.BMC, o Options) ([]*hostWatch, error) {
	if o.HostFailures > 0 {
		if err := replaceFailed(ctx, f.Plane("hub").Client); err != nil {
			return nil, err
		}
	}
	var watches []*hostWatch
	qs := newQuarantines()
	for _, name := range infras {
		w, err := watchHosts(ctx, name, f.Plane(name).Config, power(bmcs), qs, extraAccounts(bmcs))
		if err != nil {
			return watches, err
		}
		watches = append(watches, w)
	}
	return watches, nil
}

func stopAll(watches []*hostWatch) {
	for _, w := range watches {
		w.stop()
	}
}

// watched stops the watches of the hosts once they saw every quarantine
// the last check counted (at most 10 s: they follow the API servers a
// moment behind), and adds what they found to the report.
func watched(watches []*hostWatch, rep *Report) {
	seen := func() (q, b int) {
		for _, w := range watches {
			wq, wb := w.counts()
			q, b = q+wq, b+wb
		}
		return q, b
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if q, _ := seen(); q >= rep.Final.Quarantined {
			break
		}
	}
	for _, w := range watches {
		rep.Final.Violations = append(rep.Final.Violations, w.stop()...)
	}
	rep.Quarantined, rep.Rebound = seen()
}

// infraNames are the infrastructure planes' names: infra-1 … infra-n.
func infraNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("infra-%d", i+1)
	}
	return names
}

// chaos runs the churn while processes are killed, the hub API server
// stops and agents are cut off; every kill, the outage and every partition
// happen before it returns.
func chaos(ctx context.Context, f *planes.Fleet, fl *fleet, ch *churn, o Options, duration time.Duration, plan []partition, kr *rand.Rand, rep *Report, say func(string, ...any)) error {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); kill(runCtx, fl, o, duration+o.Outage, kr, rep, say) }()
	go func() {
		defer wg.Done()
		failures(runCtx, f, fl.infras, fl.bmcs, ch, o, duration+o.Outage, rand.New(rand.NewPCG(kr.Uint64(), kr.Uint64())), rep, say)
	}()
	go func() { defer wg.Done(); outage(runCtx, f.Plane("hub"), o.Outage, duration/2, rep, say) }()
	go func() { defer wg.Done(); partitions(runCtx, fl, ch, plan, o.PartitionFor, rep, say) }()
	err := ch.run(runCtx)
	if err != nil {
		stop()
	}
	wg.Wait()
	return err
}

// exits records the processes that ended by themselves (and were started
// again); a panic among them is an error.
func exits(fl *fleet, rep *Report, say func(string, ...any)) error {
	rep.Exits = fl.Exits()
	for _, e := range rep.Exits {
		say("  exited by itself, and started again: %s", e)
		if strings.Contains(e, ": panic: ") {
			return fmt.Errorf("a process panicked: %s", e)
		}
	}
	return nil
}

// kill kills random processes of the fleet, o.Kills times spread over
// span (the churn's expected duration and its outage) at random moments.
func kill(ctx context.Context, fl *fleet, o Options, span time.Duration, kr *rand.Rand, rep *Report, say func(string, ...any)) {
	for i := 0; i < o.Kills; i++ {
		wait := time.Duration(kr.Int64N(int64(2*span/time.Duration(o.Kills+1)))) + time.Second
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		name := fl.killRandom(kr)
		rep.Kills = append(rep.Kills, name)
		say("  killed %s (SIGKILL); started again a second later", name)
	}
}

// outage stops the hub's API server for d, after a delay.
func outage(ctx context.Context, hub *planes.Plane, d, after time.Duration, rep *Report, say func(string, ...any)) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(after):
	}
	say("  hub API server stopped (SIGSTOP) for %s", d)
	if err := hub.PauseAPIServer(); err != nil {
		say("  could not stop the hub API server: %v", err)
		return
	}
	time.Sleep(d)
	if err := hub.ResumeAPIServer(); err != nil {
		say("  could not resume the hub API server: %v", err)
		return
	}
	rep.Outage = d
	say("  hub API server running again")
}

// converge waits, at most timeout, for every invariant to hold, and
// records how long after over that took.
func converge(ctx context.Context, f *planes.Fleet, infras []string, bmcs []*redfish.BMC, timeout time.Duration, over time.Time, rep *Report) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := check(ctx, f, infras, bmcs)
		if err != nil {
			return err
		}
		rep.Final = c
		if len(c.Repeats) > 0 {
			return fmt.Errorf("BMCs got commands that found their system where they lead (sent twice): %s", strings.Join(c.Repeats, "; "))
		}
		if c.Converged() {
			rep.Converged = time.Since(over)
			if !rep.LastHeal.IsZero() {
				rep.SinceHeal = time.Since(rep.LastHeal)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not converged %s after the churn: %s", timeout, c)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitHostsAvailable waits until n hosts are available across the planes.
func waitHostsAvailable(ctx context.Context, f *planes.Fleet, infras []string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		avail := 0
		for _, name := range infras {
			hosts, err := listHosts(ctx, f.Plane(name).Client)
			if err != nil {
				return err
			}
			for _, h := range hosts {
				if h.Status.Provisioning.State == "available" {
					avail++
				}
			}
		}
		if avail == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d hosts available after %s (logs in %s)", avail, n, timeout, filepath.Dir(f.Plane("hub").Kubeconfig))
		}
		time.Sleep(time.Second)
	}
}

// ready says whether the claim's Ready condition is current and True, and
// otherwise why not.
func ready(conds []metav1.Condition, generation int64) (bool, string) {
	r := meta.FindStatusCondition(conds, hostfleetv1alpha1.ConditionReady)
	switch {
	case r == nil:
		return false, "no Ready condition"
	case r.ObservedGeneration != generation:
		return false, "Ready not current"
	case r.Status == metav1.ConditionTrue:
		return true, ""
	}
	return false, r.Reason
}

// create makes objects, in order.
func create(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}
