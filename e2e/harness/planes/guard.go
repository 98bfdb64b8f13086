package planes

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

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
