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

// poolKey is what makes two fleets interchangeable.
func poolKey(opts Options, names []string) string {
	return fmt.Sprintf("%v|%v|%s", names, opts.CRDSets, opts.Assets)
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
	key := poolKey(opts, names)
	pool.Lock()
	var f *Fleet
	if idle := pool.idle[key]; len(idle) > 0 {
		f, pool.idle[key] = idle[len(idle)-1], idle[:len(idle)-1]
	}
	pool.Unlock()
	if f == nil {
		var err error
		if f, err = startPooled(opts, names); err != nil {
			t.Fatalf("start planes %v: %v", names, err)
		}
	}
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
	for _, name := range f.order {
		p := f.planes[name]
		// The API server's own namespaces are there before the snapshot.
		for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
			if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				return p.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}) == nil, nil
			}); err != nil {
				return nil, errors.Join(fmt.Errorf("plane %s: namespace %s: %w", name, ns, err), f.Stop())
			}
		}
		if err := p.takeSnapshot(ctx); err != nil {
			return nil, errors.Join(err, f.Stop())
		}
	}
	pool.Lock()
	pool.all = append(pool.all, f)
	pool.Unlock()
	return f, nil
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
