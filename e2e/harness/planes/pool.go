package planes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A package's tests share its planes: a fleet a test is done with is reset
// to how it was when it started (reset.go) and handed to the next test that
// asks for the same planes, instead of starting new API servers and etcds
// each time (several seconds per plane on two cores). Each test still sees
// planes with nothing of another test's: no object, no process. Main
// enables the pool and stops its fleets when the package's tests are done.
var pool = struct {
	sync.Mutex
	enabled bool
	dir     string
	idle    map[string][]*Fleet
	all     []*Fleet
}{idle: map[string][]*Fleet{}}

// poolKey is what makes two fleets' planes interchangeable.
func poolKey(opts Options) string {
	return fmt.Sprintf("%v|%s", opts.CRDSets, opts.Assets)
}

// takeIdle takes, from the idle fleets of key, the one that already holds
// most of names (the pool locked), or nil.
func takeIdle(key string, names []string) *Fleet {
	idle := pool.idle[key]
	best, most := -1, -1
	for i, f := range idle {
		n := 0
		for _, name := range names {
			if f.planes[name] != nil {
				n++
			}
		}
		if n > most {
			best, most = i, n
		}
	}
	if best < 0 {
		return nil
	}
	f := idle[best]
	pool.idle[key] = slices.Delete(idle, best, best+1)
	return f
}

// pooled says whether a fleet for opts can come from the pool: Main ran,
// and the caller asked for nothing of its own (a directory, logs kept, the
// planes with nodes).
func pooled(opts Options) bool {
	pool.Lock()
	defer pool.Unlock()
	return pool.enabled && opts.Dir == "" && !opts.Logs && !opts.ForNodes
}

// acquire hands the test a fleet of the pool, started if none is idle,
// and gives it back, reset, when the test ends.
func acquire(t testing.TB, opts Options, names []string) *Fleet {
	t.Helper()
	key := poolKey(opts)
	pool.Lock()
	f := takeIdle(key, names)
	pool.Unlock()
	var err error
	if f == nil {
		f, err = startPooled(opts, names)
	} else {
		err = f.extend(opts, names)
	}
	if err != nil {
		t.Fatalf("start planes %v: %v", names, err)
	}
	f.asked = slices.Clone(names)
	f.mu.Lock()
	procs, closers := len(f.procs), len(f.closers)
	f.mu.Unlock()
	t.Cleanup(func() {
		if t.Failed() {
			f.dumpLogsSince(t, procs)
			f.dumpInProcess(t)
		}
		if err := f.release(procs, closers); err != nil {
			if !errors.Is(err, errStopped) {
				t.Errorf("give planes %v back: %v", names, err)
			}
			return
		}
		pool.Lock()
		pool.idle[key] = append(pool.idle[key], f)
		pool.Unlock()
	})
	return f
}

// startPooled starts a fleet for the pool, in the pool's directory, and
// records each plane's etcd as started.
func startPooled(opts Options, names []string) (*Fleet, error) {
	pool.Lock()
	if pool.dir == "" {
		dir, err := os.MkdirTemp("", "hostfleet-planes-")
		if err != nil {
			pool.Unlock()
			return nil, err
		}
		pool.dir = dir
	}
	dir, err := os.MkdirTemp(pool.dir, strings.Join(names, "-")+"-")
	pool.Unlock()
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	// Long enough to wait for a start slot behind every other test
	// process's planes (startSlot), not only to start.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	f, err := Start(ctx, opts, names...)
	if err != nil {
		return nil, err
	}
	if err := f.snapshot(ctx, names); err != nil {
		return nil, errors.Join(err, f.Stop())
	}
	pool.Lock()
	pool.all = append(pool.all, f)
	pool.Unlock()
	return f, nil
}

// extend starts the planes of names an idle fleet lacks, into it: a
// package's tests start each plane name once, whatever sets of them they
// ask for (a reset of a plane a test did not touch costs one etcd read).
func (f *Fleet) extend(opts Options, names []string) error {
	var missing []string
	for _, name := range names {
		if f.planes[name] == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	opts.Dir = f.Dir
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	err := f.startPlanes(ctx, opts, missing)
	if err == nil {
		err = f.snapshot(ctx, missing)
	}
	if err != nil {
		// Its planes are in no known state: the fleet goes.
		return errors.Join(err, f.Stop())
	}
	return nil
}

// snapshot waits for each named plane's own namespaces, then records its
// etcd as started: what a reset brings it back to.
func (f *Fleet) snapshot(ctx context.Context, names []string) error {
	for _, name := range names {
		p := f.planes[name]
		// The API server's own namespaces are there before the snapshot.
		for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
			if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				return p.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}) == nil, nil
			}); err != nil {
				return fmt.Errorf("plane %s: namespace %s: %w", name, ns, err)
			}
		}
		if err := p.takeSnapshot(ctx); err != nil {
			return err
		}
	}
	return nil
}

// errStopped: the test stopped the fleet itself; it goes, not back.
var errStopped = errors.New("the fleet was stopped")

// release stops the processes and closes what the test started (those
// after the marks), then resets every plane.
func (f *Fleet) release(procs, closers int) error {
	if len(f.planes) == 0 {
		return errStopped
	}
	f.mu.Lock()
	started, opened := slices.Clone(f.procs[procs:]), slices.Clone(f.closers[closers:])
	f.procs, f.closers = f.procs[:procs], f.closers[:closers]
	f.mu.Unlock()
	var errs []error
	for i := len(started) - 1; i >= 0; i-- {
		errs = append(errs, started[i].Stop())
	}
	for _, c := range opened {
		errs = append(errs, c())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range f.order {
		if err := f.planes[name].reset(ctx); err != nil {
			return errors.Join(append(errs, err)...)
		}
		if err := f.planes[name].settle(ctx); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	return errors.Join(errs...)
}

// stopPool stops every fleet of the pool and removes its directory.
func stopPool() {
	pool.Lock()
	defer pool.Unlock()
	for _, f := range pool.all {
		_ = f.Stop()
	}
	pool.all, pool.idle = nil, map[string][]*Fleet{}
	if pool.dir != "" {
		_ = os.RemoveAll(pool.dir)
		pool.dir = ""
	}
}
