package planes

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// StartWorkAgent runs OCM's work agent (the tool cache's `work agent`, the
// one a klusterlet runs) for cluster: it takes the ManifestWorks in the
// cluster's namespace on the hub plane, applies them on the spoke plane and
// reports their status and feedback, every statusSync (OCM's default is
// 10 s; the klusterlet's 60 s; watched feedback comes at once). Both
// kubeconfigs are the planes' administrators'. The AppliedManifestWork CRD
// must be on the spoke (the ocm CRD set has it).
func (f *Fleet) StartWorkAgent(hub, cluster, spoke string, statusSync time.Duration) (*Process, error) {
	h, s := f.planes[hub], f.planes[spoke]
	if h == nil || s == nil {
		return nil, fmt.Errorf("work agent: no plane %q or %q", hub, spoke)
	}
	bin := filepath.Join(filepath.Dir(toolPath("--print-bin", "ocm")), "work")
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("work agent: %w", err)
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("OCM's work agent is not built (run `hack/tools.sh ocm`; make test does): %w", err)
	}
	return f.Run("work-agent-"+cluster, spoke, bin, []string{"agent",
		"--spoke-cluster-name=" + cluster,
		"--hub-kubeconfig=" + h.Kubeconfig,
		"--spoke-kubeconfig=" + s.Kubeconfig,
		"--kubeconfig=" + s.Kubeconfig,
		"--workload-source-driver=kube",
		"--workload-source-config=" + h.Kubeconfig,
		"--agent-id=" + cluster + "-work-agent",
		"--disable-leader-election",
		"--status-sync-interval=" + statusSync.String(),
		"--namespace=open-cluster-management-agent",
		// Its health server, on a port of its own: it defaults to
		// 0.0.0.0:8443, which another work agent (or anything) may hold,
		// and port 0 turns serving off, which it does not survive.
		fmt.Sprintf("--listen=127.0.0.1:%d", port),
	}, "POD_NAMESPACE=open-cluster-management-agent")
}

// FreePort is a loopback TCP port nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartWorkAgentForTest is StartWorkAgent that fails the test on error.
func (f *Fleet) StartWorkAgentForTest(t testing.TB, hub, cluster, spoke string, statusSync time.Duration) *Process {
	t.Helper()
	p, err := f.StartWorkAgent(hub, cluster, spoke, statusSync)
	if err != nil {
		t.Fatalf("start the work agent of %s: %v", cluster, err)
	}
	return p
}
