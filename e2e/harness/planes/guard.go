package planes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// guard makes the plane's kube-apiserver and etcd die with the process
// that started them: each runs through util-linux's setpriv with the
// parent-death signal set. A test binary that ends on its -timeout, or is
// killed, no longer leaves its control planes running to load the machine
// for every run after it. Without setpriv, they run unguarded.
func guard(env *envtest.Environment, assets, dir, name string) error {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return nil // not Debian (util-linux has it): unguarded
	}
	wrap := func(bin string) (string, error) {
		path := filepath.Join(dir, name+"-"+bin)
		script := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL -- %s \"$@\"\n", setpriv, filepath.Join(assets, bin))
		return path, os.WriteFile(path, []byte(script), 0o755)
	}
	if env.ControlPlane.Etcd == nil {
		env.ControlPlane.Etcd = &envtest.Etcd{}
	}
	if env.ControlPlane.Etcd.Path, err = wrap("etcd"); err != nil {
		return err
	}
	env.ControlPlane.GetAPIServer().Path, err = wrap("kube-apiserver")
	return err
}

// startSlot waits for one of the machine's control-plane start slots, one
// per CPU, shared by every process through file locks in the temporary
// directory, and returns its release. Starting a plane (kube-apiserver's
// boot, every CRD installed) is the heaviest minute of a test: when make
// test's packages all start theirs at once on a loaded machine, every
// start runs past its timeout. The wait is not counted against a start's
// timeout; ctx bounds it.
func startSlot(ctx context.Context) (func(), error) {
	dir := filepath.Join(os.TempDir(), "hostfleet-plane-starts")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	slots := runtime.NumCPU()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		for i := range slots {
			file, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("slot-%d", i)), os.O_CREATE|os.O_RDWR, 0o666)
			if err != nil {
				return nil, err
			}
			if syscall.Flock(int(file.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
				return func() { _ = file.Close() }, nil
			}
			_ = file.Close()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for a control-plane start slot: %w", ctx.Err())
		case <-tick.C:
		}
	}
}
