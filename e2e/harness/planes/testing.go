package planes

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ForTest starts the named planes for a test and stops them, and every process
// started against them, when the test ends. When the test fails, the tail of
// every process log is printed.
func ForTest(t testing.TB, names ...string) *Fleet {
	t.Helper()
	return ForTestWith(t, Options{}, names...)
}

// ForTestWith is ForTest with options; Dir defaults to a test directory.
// In a package whose TestMain is Main, a test that sets no Dir, Logs or
// ForNodes gets the package's shared planes, reset to how they started
// (pool.go).
func ForTestWith(t testing.TB, opts Options, names ...string) *Fleet {
	t.Helper()
	if pooled(opts) {
		start := time.Now()
		f := acquire(t, opts, names)
		t.Logf("planes %v ready in %s", names, time.Since(start).Round(10*time.Millisecond))
		return f
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	// Long enough to wait for a start slot behind every other test
	// process's planes (startSlot), not only to start.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	f, err := Start(ctx, opts, names...)
	if err != nil {
		t.Fatalf("start planes %v: %v", names, err)
	}
	t.Logf("started planes %v in %s", names, time.Since(start).Round(10*time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			f.dumpLogs(t)
			f.dumpInProcess(t)
		}
		stop := time.Now()
		if err := f.Stop(); err != nil {
			t.Errorf("stop planes: %v", err)
		}
		t.Logf("stopped planes %v in %s", names, time.Since(stop).Round(10*time.Millisecond))
	})
	return f
}

// StartBMOForTest is StartBMO that fails the test on error.
func (f *Fleet) StartBMOForTest(t testing.TB, plane string, namespaces ...string) *Process {
	t.Helper()
	p, err := f.StartBMO(plane, namespaces...)
	if err != nil {
		t.Fatalf("start baremetal-operator on %s: %v", plane, err)
	}
	return p
}

func (f *Fleet) dumpLogs(t testing.TB) { f.dumpLogsSince(t, 0) }

// dumpLogsSince prints the tail of the logs of the processes started after
// the first n.
func (f *Fleet) dumpLogsSince(t testing.TB, n int) {
	f.mu.Lock()
	procs := append([]*Process(nil), f.procs[n:]...)
	f.mu.Unlock()
	for _, p := range procs {
		data, err := os.ReadFile(p.Log)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if n := logLines(); len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		t.Logf("--- last lines of %s (%s) ---\n%s", p.Name, p.Log, strings.Join(lines, "\n"))
	}
}

// logLines is how many lines of each process log a failed test prints:
// $HOSTFLEET_TEST_LOG_LINES, or 60.
func logLines() int {
	if n, err := strconv.Atoi(os.Getenv("HOSTFLEET_TEST_LOG_LINES")); err == nil && n > 0 {
		return n
	}
	return 60
}

// ManagerForTest runs a controller-runtime manager on the named plane, with
// the controllers that setup wires, until the test ends.
func (f *Fleet) ManagerForTest(t testing.TB, plane string, setup func(mgr ctrl.Manager) error) {
	t.Helper()
	stop, err := f.StartManager(plane, setup)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("manager on %s: %v", plane, err)
		}
	})
}

// StartManager runs a controller-runtime manager on the named plane, with
// the controllers that setup wires, until stop is called (a test that
// restarts its controllers calls it; stop waits for the manager to end).
func (f *Fleet) StartManager(plane string, setup func(mgr ctrl.Manager) error) (stop func() error, _ error) {
	skip := true
	// Caches without managedFields, as the hub's and the agent's.
	mgr, err := ctrl.NewManager(f.Plane(plane).Config, ctrl.Options{Scheme: f.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: &skip},
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()}})
	if err != nil {
		return nil, fmt.Errorf("manager on %s: %w", plane, err)
	}
	if err := setup(mgr); err != nil {
		return nil, fmt.Errorf("set up controllers on %s: %w", plane, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	var result error
	return func() error {
		once.Do(func() { cancel(); result = <-done })
		return result
	}, nil
}

// StartControllerManagerForTest runs kube-controller-manager against the
// plane until the test ends.
func (f *Fleet) StartControllerManagerForTest(t testing.TB, plane string) *Process {
	t.Helper()
	p, err := f.StartControllerManager(plane)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return p
}

// Main is a TestMain for packages whose tests run controllers in-process:
// their controller-runtime and klog logs are kept in memory, their tail
// printed when a test fails, or go to stderr when HOSTFLEET_TEST_AGENT_LOGS
// is set. It enables the
// package's shared planes (HOSTFLEET_FRESH_PLANES=1: a fresh fleet per
// test), and stops them when the tests are done.
func Main(m *testing.M) {
	if os.Getenv("HOSTFLEET_TEST_AGENT_LOGS") != "" {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	} else {
		log := zap.New(zap.WriteTo(inProcessLogs), zap.Level(zapcore.Level(-1)))
		ctrl.SetLogger(log)
		klog.SetLogger(log)
	}
	pool.Lock()
	pool.enabled = os.Getenv("HOSTFLEET_FRESH_PLANES") == ""
	pool.Unlock()
	code := m.Run()
	stopPool()
	os.Exit(code)
}
