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
)

// Process is a program the fleet started against a plane; its output goes to
// a log file in the fleet's directory.
type Process struct {
	Name string
	Log  string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Run starts a program with KUBECONFIG pointing at the named plane. It is
// stopped by Fleet.Stop (or Process.Stop), and killed if the test process dies.
func (f *Fleet) Run(name, plane, bin string, args []string, env ...string) (*Process, error) {
	p := f.planes[plane]
	if p == nil {
		return nil, fmt.Errorf("run %s: no plane %q", name, plane)
	}
	logPath := filepath.Join(f.Dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.Kubeconfig)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("run %s: start %s: %w", name, bin, err)
	}
	proc := &Process{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		proc.err = cmd.Wait()
		_ = logFile.Close()
		close(proc.done)
	}()
	f.mu.Lock()
	f.procs = append(f.procs, proc)
	f.mu.Unlock()
	return proc, nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, waits up to ten seconds, then kills. A process that
// was stopped is not an error.
func (p *Process) Stop() error {
	if p.Exited() {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	return nil
}

// Kill kills the process (and its group) with SIGKILL, as a crash would, and
// waits for it to end.
func (p *Process) Kill() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Wait blocks until the process ends or ctx is done.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		var exitErr *exec.ExitError
		if errors.As(p.err, &exitErr) {
			return fmt.Errorf("%s: %w", p.Name, p.err)
		}
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BMOPath is the baremetal-operator binary: $HOSTFLEET_BMO, else the one in
// the tool cache.
func BMOPath() (string, error) {
	bin := envOrTool("HOSTFLEET_BMO", "--print-bmo")
	if bin == "" {
		return "", errors.New("HOSTFLEET_BMO is not set and the tool cache was not found; run `make test`, or " +
			"`hack/tools.sh baremetal-operator` first")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("baremetal-operator: %w (build it with `hack/tools.sh baremetal-operator`)", err)
	}
	return bin, nil
}

// StartBMO runs the real baremetal-operator in test mode (its fixture
// provisioner, no Ironic) against the named plane. It moves BareMetalHosts
// through registering, inspecting, available (with HardwareData),
// provisioning and provisioned in seconds. With namespaces, it watches only
// those (its -namespace), leaving hosts elsewhere to the agent's driver.
func (f *Fleet) StartBMO(plane string, namespaces ...string) (*Process, error) {
	bin, err := BMOPath()
	if err != nil {
		return nil, err
	}
	args := []string{
		"-test-mode",
		"-webhook-port", "0",
		"-metrics-addr", "0",
		"-health-addr", "127.0.0.1:0",
	}
	name := "baremetal-operator-" + plane
	if len(namespaces) > 0 {
		// One per namespace may run on a plane: in test mode each has its
		// own fixture provisioner (one power flag).
		args = append(args, "-namespace", strings.Join(namespaces, ","))
		name += "-" + strings.Join(namespaces, "-")
	}
	return f.Run(name, plane, bin, args)
}

// StartControllerManager runs kube-controller-manager (from the assets
// directory, beside kube-apiserver) against the plane, with the controllers
// the planes otherwise lack: garbage collection, namespace deletion,
// service accounts and their tokens, quota status, ClusterRole aggregation,
// kube-root-ca.crt in every namespace, and the signing of approved
// kubernetes.io/kube-apiserver-client CSRs with the plane's client CA (what
// OCM registration needs).
func (f *Fleet) StartControllerManager(plane string) (*Process, error) {
	p := f.planes[plane]
	if p == nil {
		return nil, fmt.Errorf("kube-controller-manager: no plane %q", plane)
	}
	bin := filepath.Join(p.assets, "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("kube-controller-manager missing from %s (build it with `hack/tools.sh kube-controller-manager`): %w", p.assets, err)
	}
	certDir := p.env.ControlPlane.APIServer.CertDir
	ca := filepath.Join(f.Dir, plane+"-ca.crt")
	if err := os.WriteFile(ca, p.Config.CAData, 0o644); err != nil {
		return nil, err
	}
	controllers := "garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller,resourcequota-controller,certificatesigningrequest-signing-controller,clusterrole-aggregation-controller,root-ca-certificate-publisher-controller"
	if p.nodes {
		// Pods on nodes: Deployments make ReplicaSets, which make pods;
		// Services get their endpoints; pods of deleted nodes go; a new
		// node loses its not-ready taint once Ready.
		controllers += ",deployment-controller,replicaset-controller,endpoints-controller,endpointslice-controller,pod-garbage-collector-controller,node-lifecycle-controller"
	}
	return f.Run("kube-controller-manager-"+plane, plane, bin, []string{
		"--kubeconfig=" + p.Kubeconfig,
		"--controllers=" + controllers,
		"--cluster-signing-kube-apiserver-client-cert-file=" + p.clientCA.certFile(),
		"--cluster-signing-kube-apiserver-client-key-file=" + p.clientCA.keyFile(),
		"--service-account-private-key-file=" + filepath.Join(certDir, "sa-signer.key"),
		"--root-ca-file=" + ca,
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--secure-port=0",
	})
}

// KubectlPath is the kubectl binary: $HOSTFLEET_KUBECTL, else the one the
// tool cache builds (`hack/tools.sh kubectl`).
func KubectlPath() (string, error) {
	bin := os.Getenv("HOSTFLEET_KUBECTL")
	if bin == "" {
		bin = toolPath("--print-bin", "kubectl")
	}
	if bin == "" {
		return "", errors.New("HOSTFLEET_KUBECTL is not set and the tool cache was not found; run `make test`, or `hack/tools.sh kubectl` first")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("kubectl: %w (build it with `hack/tools.sh kubectl`)", err)
	}
	return bin, nil
}
