package chaos

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// RestoreOptions describe a restore run.
type RestoreOptions struct {
	// Bin holds hostfleet-hub and hostfleet-agent; Dir receives
	// kubeconfigs, logs and the snapshot.
	Bin, Dir string
	Out      io.Writer
	// Plane is the plane whose etcd is restored: "hub" or "infra-1".
	Plane string
	// Grace is the agent's --orphan-grace.
	Grace time.Duration
	// Converge bounds the time the fleet may take to settle after the
	// restore.
	Converge time.Duration
}

// RestoreReport is what a restore run measured and found.
type RestoreReport struct {
	// Restore is how long the restore itself took: etcd stopped,
	// restored and started, and its API server answering again.
	Restore time.Duration
	// Truthful is the time from the restore until no claim says Ready on
	// a host that does not name it back (a claim the restore brought back
	// says so until its agent looks at it).
	Truthful time.Duration
	// Converged is the time from the restore until every invariant of
	// make chaos holds and every claim the restored plane expects is
	// bound and Ready.
	Converged time.Duration
	// Handovers are hosts seen passing from one claim to another without
	// being free in between: none may be.
	Handovers []string
	// Touched are the claims bound before the snapshot whose BMC received
	// a command after it: none may be.
	Touched []string
	// Before, After and Final are the claims' hosts when the snapshot was
	// taken, just before the restore, and once converged.
	Before, After, Final map[string]string
	// Check is the last check of the invariants.
	Check Check
	// UsageSnapshot, UsageBefore and UsageAfter are the host-seconds the
	// hub's UsageLedger of infra-1 has counted when the snapshot is taken,
	// just before the restore, and once every interval infra-1 reports is
	// settled after it; UsageRefused how many it refused in all.
	UsageSnapshot, UsageBefore, UsageAfter, UsageRefused int64
}

// The claims of a restore run: kept throughout, deleted after the
// snapshot, made after it.
var (
	keptClaims    = []string{"keep-1", "keep-2"}
	deletedClaims = []string{"gone-after"}
	newClaims     = []string{"new-1", "new-2"}
)

// Restore saves the etcd of one plane, changes the fleet, restores the
// snapshot and checks that the fleet converges without a host serving two
// claims. One infrastructure plane holds four BMC-driven hosts. Before the
// snapshot, keep-1, keep-2 and gone-after are bound; after it, gone-after
// is deleted and new-1 and new-2 are bound (one on gone-after's host).
// Then the plane's etcd is restored and its process (the hub, or the
// agent) killed and started again.
//
// A restored hub has keep-1, keep-2 and gone-after again, and not new-1
// and new-2: their hosts are released after Grace, and gone-after is
// bound again. A restored infrastructure plane has gone-after's host held
// for it, and new-1 and new-2 unbound: gone-after's host is released after
// Grace, and new-1 and new-2 are bound again.
func Restore(ctx context.Context, o RestoreOptions) (*RestoreReport, error) {
	r := &restoreRun{o: o, rep: &RestoreReport{}, say: func(format string, a ...any) { fmt.Fprintf(o.Out, format+"\n", a...) }}
	f, err := planes.Start(ctx, planes.Options{Dir: o.Dir}, "hub", "infra-1")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Stop() }()
	images := redfish.ImageServer()
	defer images.Close()
	r.bmcs = make([]*redfish.BMC, 4)
	for i := range r.bmcs {
		r.bmcs[i] = redfish.Start(redfish.Options{Hardware: redfish.DefaultHardware(fmt.Sprintf("RESTORE%d", i))})
		defer r.bmcs[i].Close()
	}
	if err := setUp(ctx, f, []string{"infra-1"}, r.bmcs); err != nil {
		return nil, err
	}
	r.fl = &fleet{f: f, bin: o.Bin, infras: []string{"infra-1"}, grace: o.Grace}
	flCtx, stopFleet := context.WithCancel(ctx)
	defer stopFleet()
	if err := r.fl.startAll(flCtx); err != nil {
		return nil, err
	}
	if err := waitHostsAvailable(ctx, f, r.fl.infras, len(r.bmcs), 5*time.Minute); err != nil {
		return nil, err
	}
	r.f, r.hub, r.image = f, f.Plane("hub").Client, images.URL+"/live.iso"
	for _, phase := range []func(context.Context) error{r.save, r.change, r.restore, r.converge, r.usage} {
		if err := phase(ctx); err != nil {
			return r.rep, err
		}
	}
	return r.rep, nil
}

// restoreRun is one Restore under way.
type restoreRun struct {
	o     RestoreOptions
	rep   *RestoreReport
	say   func(string, ...any)
	f     *planes.Fleet
	fl    *fleet
	bmcs  []*redfish.BMC
	hub   client.Client
	image string
	// actions counts each host's BMC actions when the snapshot was taken.
	actions  map[string]int
	snapshot string
	hosts    *hostWatch
	start    time.Time
}

func (r *restoreRun) claim(name string) *metal3api.HostClaim {
	return &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name},
		Spec: metal3api.HostClaimSpec{PoweredOn: true, Image: &metal3api.Image{URL: r.image, DiskFormat: ptr.To("live-iso")}}}
}

// save binds keep-1, keep-2 and gone-after, and saves the plane's etcd.
func (r *restoreRun) save(ctx context.Context) error {
	names := append(slices.Clone(keptClaims), deletedClaims...)
	for _, name := range names {
		// The hub makes the tenant's namespace: the first claim waits for it.
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			err := r.hub.Create(ctx, r.claim(name))
			return err == nil, client.IgnoreNotFound(err)
		}); err != nil {
			return fmt.Errorf("create claim %s: %w", name, err)
		}
	}
	var err error
	if r.rep.Before, err = waitBound(ctx, r.hub, names, 2*time.Minute); err != nil {
		return err
	}
	r.actions = map[string]int{}
	for i, b := range r.bmcs {
		r.actions[hostName(i)] = len(b.Actions())
	}
	r.rep.UsageSnapshot = r.countedNow(ctx)
	r.snapshot = filepath.Join(r.o.Dir, r.o.Plane+".db")
	if err := r.f.Plane(r.o.Plane).SaveEtcd(ctx, r.snapshot); err != nil {
		return err
	}
	r.say("bound %v; %s's etcd saved (etcdctl snapshot save)", r.rep.Before, r.o.Plane)
	return nil
}

// change deletes gone-after, then binds new-1 and new-2.
func (r *restoreRun) change(ctx context.Context) error {
	for _, name := range deletedClaims {
		if err := r.hub.Delete(ctx, r.claim(name)); err != nil {
			return err
		}
	}
	if err := waitGone(ctx, r.hub, deletedClaims, 2*time.Minute); err != nil {
		return err
	}
	for _, name := range newClaims {
		if err := r.hub.Create(ctx, r.claim(name)); err != nil {
			return err
		}
	}
	var err error
	if r.rep.After, err = waitBound(ctx, r.hub, append(slices.Clone(keptClaims), newClaims...), 2*time.Minute); err != nil {
		return err
	}
	// gone-after's interval, counted by the hub before the restore.
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		r.rep.UsageBefore = r.countedNow(ctx)
		return r.rep.UsageBefore > r.rep.UsageSnapshot, nil
	}); err != nil {
		return fmt.Errorf("the hub's ledger of infra-1 does not count %v's interval: %w", deletedClaims, err)
	}
	r.say("after the snapshot: %v deleted, %v bound: %v; the ledger of infra-1 counts %d s", deletedClaims, newClaims, r.rep.After, r.rep.UsageBefore)
	return nil
}

// restore follows the hosts from now on, kills the restored plane's
// process (the hub, or the agent, which runs on its infrastructure cluster
// in Default mode), restores the plane's etcd; the process starts again.
func (r *restoreRun) restore(ctx context.Context) error {
	var err error
	if r.hosts, err = watchHosts(ctx, "infra-1", r.f.Plane("infra-1").Config, power(r.bmcs), newQuarantines(), nil); err != nil {
		return err
	}
	process, what := r.o.Plane, "hostfleet-hub"
	if process != "hub" {
		process, what = "infra-1", "the agent"
	}
	r.start = time.Now()
	r.fl.kill(process)
	if err := r.f.RestoreEtcd(ctx, r.o.Plane, r.snapshot); err != nil {
		return err
	}
	r.rep.Restore = time.Since(r.start)
	r.say("%s's etcd restored from the snapshot (etcdutl snapshot restore) and its API server answering in %s; %s killed and started again",
		r.o.Plane, r.rep.Restore.Round(10*time.Millisecond), what)
	return nil
}

// converge waits until the invariants hold and the claims the restored
// plane expects are bound and Ready, then reports the handovers seen and
// the kept claims whose BMC was touched.
func (r *restoreRun) converge(ctx context.Context) error {
	defer r.hosts.stop()
	want := append(slices.Clone(keptClaims), deletedClaims...)
	if r.o.Plane != "hub" {
		want = append(slices.Clone(keptClaims), newClaims...)
	}
	rep, deadline := r.rep, time.Now().Add(r.o.Converge)
	for {
		c, err := check(ctx, r.f, r.fl.infras, r.bmcs)
		if err != nil {
			return err
		}
		rep.Check = c
		truthful, err := truthful(ctx, r.hub, r.f.Plane("infra-1").Client)
		if err != nil {
			return err
		}
		if truthful && rep.Truthful == 0 {
			rep.Truthful = time.Since(r.start)
		}
		final, _ := bound(ctx, r.hub, want)
		if c.Converged() && len(final) == len(want) && c.Claims == len(want) {
			rep.Converged, rep.Final = time.Since(r.start), final
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not converged %s after the restore: %s; bound %v of %v", r.o.Converge, c, final, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
	rep.Handovers = r.hosts.stop()
	for _, name := range keptClaims {
		h := rep.Before[name]
		if actions := r.bmcs[hostIndex(h)].Actions(); len(actions) != r.actions[h] || rep.Final[name] != h {
			rep.Touched = append(rep.Touched, fmt.Sprintf("%s (on %s, then %s): %v", name, h, rep.Final[name], actions[r.actions[h]:]))
		}
	}
	r.say("converged %s after the restore (claims truthful after %s): %v; %s", rep.Converged.Round(100*time.Millisecond),
		rep.Truthful.Round(100*time.Millisecond), rep.Final, rep.Check)
	return nil
}

// hostName is the name setUp gives the host of BMC i; hostIndex its inverse.
func hostName(i int) string { return fmt.Sprintf("host-%04d", i) }

func hostIndex(name string) int {
	var i int
	_, _ = fmt.Sscanf(name, "host-%04d", &i)
	return i
}

// bound returns the named claims that are bound and Ready, with their hosts.
func bound(ctx context.Context, hub client.Client, names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range names {
		c := &metal3api.HostClaim{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: name}, c); err != nil {
			return out, client.IgnoreNotFound(err)
		}
		if ok, _ := ready(c.Status.Conditions, c.Generation); ok && c.Status.BareMetalHost != nil {
			out[name] = c.Status.BareMetalHost.Name
		}
	}
	return out, nil
}

// waitBound waits until the named claims are bound and Ready.
func waitBound(ctx context.Context, hub client.Client, names []string, timeout time.Duration) (map[string]string, error) {
	deadline := time.Now().Add(timeout)
	for {
		got, err := bound(ctx, hub, names)
		if err != nil {
			return nil, err
		}
		if len(got) == len(names) {
			return got, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("claims %v not bound and Ready after %s: bound %v", names, timeout, got)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitGone waits until the named claims are gone from the hub.
func waitGone(ctx context.Context, hub client.Client, names []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, name := range names {
		for {
			err := hub.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: name}, &metal3api.HostClaim{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("claim %s not gone after %s (%v)", name, timeout, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	return nil
}

// truthful says whether every claim that says Ready names a host that
// names it back.
func truthful(ctx context.Context, hub, infra client.Client) (bool, error) {
	var claims metal3api.HostClaimList
	if err := hub.List(ctx, &claims, client.InNamespace(tenantNS)); err != nil {
		return false, err
	}
	hosts, err := listHosts(ctx, infra)
	if err != nil {
		return false, err
	}
	holder := map[string]string{}
	for _, h := range hosts {
		holder[h.Name] = h.Annotations[hostfleetv1alpha1.AnnotationClaimUID]
	}
	for _, c := range claims.Items {
		if b := c.Status.BareMetalHost; b != nil && meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionReady) &&
			holder[b.Name] != string(c.UID) {
			return false, nil
		}
	}
	return true, nil
}

// usage waits until every interval infra-1 reports after the restore is
// settled, and says what the hub's ledger of infra-1 counts: never less
// than what it had counted before the restore of infra-1, nor less than
// what the restored hub's ledger had (a hub restored from an older
// snapshot has that snapshot's ledger: the agents drop what it settled).
func (r *restoreRun) usage(ctx context.Context) error {
	var l *hostfleetv1alpha1.UsageLedger
	var unsettled int
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		rep := &hostfleetv1alpha1.HostUsage{}
		if err := r.hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, rep); err != nil {
			return false, nil
		}
		if unsettled = len(rep.Status.Intervals); unsettled > 0 {
			return false, nil
		}
		var err error
		l, err = ledger(ctx, r.hub)
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("infra-1 still reports %d intervals the hub has not settled: %w", unsettled, err)
	}
	r.rep.UsageAfter, r.rep.UsageRefused = counted(l), l.Status.Refused
	had := r.rep.UsageBefore
	if r.o.Plane == "hub" {
		had = r.rep.UsageSnapshot
	}
	if r.rep.UsageAfter < had {
		return fmt.Errorf("the hub's ledger of infra-1 counts %d s after the restore, less than the %d s it had", r.rep.UsageAfter, had)
	}
	r.say("usage: the ledger of infra-1 counted %d s at the snapshot, %d s before the restore, %d s after it (%d intervals refused)",
		r.rep.UsageSnapshot, r.rep.UsageBefore, r.rep.UsageAfter, r.rep.UsageRefused)
	return nil
}

// ledger is the hub's UsageLedger of infra-1.
func ledger(ctx context.Context, hub client.Client) (*hostfleetv1alpha1.UsageLedger, error) {
	l := &hostfleetv1alpha1.UsageLedger{}
	return l, hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, l)
}

// counted is every second a ledger has counted.
func counted(l *hostfleetv1alpha1.UsageLedger) int64 {
	var n int64
	for _, e := range l.Status.Counted {
		n += e.Seconds
	}
	return n
}

// countedNow is what the hub's ledger of infra-1 counts now (0 before it
// has one).
func (r *restoreRun) countedNow(ctx context.Context) int64 {
	l, err := ledger(ctx, r.hub)
	if err != nil {
		return 0
	}
	return counted(l)
}
