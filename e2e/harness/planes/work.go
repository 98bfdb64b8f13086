package planes

import (
	"fmt"
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
	}, "POD_NAMESPACE=open-cluster-management-agent")
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
