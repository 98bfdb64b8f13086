package planes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SaveEtcd saves a snapshot of the plane's etcd to path, as an operator
// backs a cluster up: `etcdctl snapshot save`.
func (p *Plane) SaveEtcd(ctx context.Context, path string) error {
	out, err := exec.CommandContext(ctx, filepath.Join(p.assets, "etcdctl"), "--endpoints="+p.etcdURL(), "snapshot", "save", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: etcdctl snapshot save (build it with `hack/tools.sh etcd`): %w: %s", p.Name, err, out)
	}
	return nil
}

// RestoreBump is how far a restore moves etcd's revision past the
// snapshot's (etcdutl --bump-revision): beyond any resourceVersion a
// client saw before the restore, so that none is served again for other
// data.
const RestoreBump = 1_000_000_000

// RestoreEtcd restores the plane's etcd from a snapshot SaveEtcd took, the
// way Kubernetes' documentation says: stop the API server and etcd,
// `etcdutl snapshot restore` into a fresh data directory (the revision
// bumped and marked compacted, so that every watch started before the
// restore lists again), then start etcd and the API server again with
// the flags they had. It returns once the API server answers.
func (f *Fleet) RestoreEtcd(ctx context.Context, plane, snapshot string) error {
	p := f.planes[plane]
	if p == nil {
		return fmt.Errorf("restore etcd: no plane %q", plane)
	}
	apiPID, apiArgs, err := findProcess("kube-apiserver", "--secure-port="+p.port())
	if err != nil {
		return err
	}
	etcdPID, etcdArgs, err := findProcess("etcd", "--listen-client-urls="+p.etcdURL())
	if err != nil {
		return err
	}
	// Killed, not terminated: the API server's graceful shutdown waits
	// for its clients' watches to end, and what either would still write
	// is thrown away with the data directory.
	for bin, pid := range map[string]int{"kube-apiserver": apiPID, "etcd": etcdPID} {
		if err := kill(ctx, pid); err != nil {
			return fmt.Errorf("%s: stop %s: %w", plane, bin, err)
		}
	}
	dataDir := flagValue(etcdArgs, "--data-dir")
	if dataDir == "" {
		return fmt.Errorf("%s: etcd runs without --data-dir", plane)
	}
	if err := os.RemoveAll(dataDir); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, filepath.Join(p.assets, "etcdutl"), "snapshot", "restore", snapshot, "--data-dir="+dataDir,
		fmt.Sprintf("--bump-revision=%d", RestoreBump), "--mark-compacted").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: etcdutl snapshot restore: %w: %s", plane, err, out)
	}
	if _, err := f.Run(plane+"-etcd-restored", plane, etcdArgs[0], etcdArgs[1:]); err != nil {
		return err
	}
	if _, err := f.Run(plane+"-apiserver-restored", plane, apiArgs[0], apiArgs[1:]); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return p.Client.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{}) == nil, nil
	})
}

// RestartAPIServer kills the plane's kube-apiserver (SIGKILL, as a crash or
// an eviction does) and starts it again with the flags it had, on the same
// etcd. It returns once the API server answers, with how long it did not.
func (f *Fleet) RestartAPIServer(ctx context.Context, plane string) (time.Duration, error) {
	p := f.planes[plane]
	if p == nil {
		return 0, fmt.Errorf("restart the API server: no plane %q", plane)
	}
	pid, args, err := findProcess("kube-apiserver", "--secure-port="+p.port())
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := kill(ctx, pid); err != nil {
		return 0, fmt.Errorf("%s: stop kube-apiserver: %w", plane, err)
	}
	if _, err := f.Run(fmt.Sprintf("%s-apiserver-%d", plane, start.Unix()), plane, args[0], args[1:]); err != nil {
		return 0, err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return p.Client.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{}) == nil, nil
	})
	return time.Since(start), err
}

// port is the API server's secure port.
func (p *Plane) port() string {
	_, port, _ := strings.Cut(strings.TrimPrefix(p.Config.Host, "https://"), ":")
	return strings.TrimSuffix(port, "/")
}

// kill kills a process the planes started (SIGKILL) and waits until it
// is gone.
func kill(ctx context.Context, pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("stop process %d: %w", pid, err)
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), nil
	})
}

// findProcess finds the running program named bin that has the argument
// want, and returns its pid and command line.
func findProcess(bin, want string) (int, []string, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, nil, err
	}
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		args := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
		if filepath.Base(args[0]) != bin {
			continue
		}
		for _, a := range args[1:] {
			if a == want {
				var pid int
				_, err := fmt.Sscan(filepath.Base(d), &pid)
				return pid, args, err
			}
		}
	}
	return 0, nil, fmt.Errorf("no %s process with %s", bin, want)
}

// flagValue is the value of a --name=value argument, or "".
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}
