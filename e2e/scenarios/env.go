// Package scenarios is the end-to-end flow a platform engineer follows, run
// against any fleet of four clusters (hub, infra-1, infra-2, hosting) that
// an Env describes: e2e/suites/local runs it on local control planes with
// real nodes, e2e/suites/kind (build tag e2ekind) on kind clusters. The
// scenarios are the same code in both; only the Env differs.
//
// The steps: clusteradm init and join (Default and Hosted), the operator
// from deploy/operator and a HostfleetHub, the add-on enabled and
// configured, IPMI driven from the agent's image, teardown, and a Hosted
// hub. See docs/e2e-local.md and docs/e2e-kind.md.
package scenarios

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Clusters are the fleet's clusters.
var Clusters = []string{"hub", "infra-1", "infra-2", "hosting"}

// WorkloadCluster is the cluster that becomes tenant acme's workload
// cluster, and WorkloadProviderID the providerID of its Node on the claimed
// host: Cluster API's for claim db-1 (Metal3Machine m3m-0).
const (
	WorkloadCluster    = "hosting"
	WorkloadProviderID = "metal3://tenant-acme/db-1/m3m-0"
)

// Images are the project's images, as hack/images names them.
var Images = []string{"hostfleet-operator", "hostfleet-hub", "hostfleet-agent"}

// BMCUsername and BMCPassword are the IPMI BMC's credentials.
const (
	BMCUsername = "admin"
	BMCPassword = "password"
)

// Env is a fleet the scenarios run on.
type Env interface {
	// Client reaches a cluster as its administrator, from the test.
	Client(cluster string) client.Client
	// Kubeconfig is a cluster's administrator kubeconfig file as the test
	// (and clusteradm run by it) reaches the cluster.
	Kubeconfig(cluster string) string
	// InClusterKubeconfig is the same as pods on the other clusters reach
	// it: the managed cluster kubeconfig of a Hosted join, the hub's
	// external-hub-kubeconfig.
	InClusterKubeconfig(cluster string) string
	// HubAPIServer is the hub's address for `clusteradm join` as the other
	// clusters reach it; empty: the one `clusteradm init` prints.
	HubAPIServer() string
	// HubCAFile is the hub's CA bundle, for `clusteradm join --ca-file`.
	HubCAFile() string
	// OCMVersion is the OCM bundle version clusteradm installs.
	OCMVersion() string
	// Image is the reference of hostfleet-operator, -hub or -agent.
	Image(name string) string
	// LoadImages makes the images hack/images wrote to dir (a release's)
	// available to every cluster, and returns their references by name.
	LoadImages(t *testing.T, dir string) map[string]string
	// StartBMO runs baremetal-operator in test mode for a cluster,
	// watching namespaces (all when none).
	StartBMO(t *testing.T, cluster string, namespaces ...string)
	// BMC is the IPMI BMC (credentials BMCUsername and BMCPassword), at an
	// address the agent's pods reach.
	BMC() BMC
	// Running lists what runs for a Deployment on a cluster: its pods.
	Running(cluster, namespace, deployment string) []string
	// PodAddress is host:port at which the test reaches a pod's port, until
	// stop is called.
	PodAddress(cluster, namespace, pod string, port int) (addr string, stop func(), err error)
	// Dir is a scratch directory.
	Dir() string
	// WorkloadNode is the name of the Node of the workload cluster (on
	// cluster) that runs on the claimed host, registered as its kubelet
	// would: spec.providerID WorkloadProviderID, label
	// hostfleet.io/labels-pending=true. It lasts at least until t ends.
	WorkloadNode(t *testing.T, cluster string) string
}

// BMC is an IPMI BMC whose chassis the test can read.
type BMC interface {
	// Address is host:port.
	Address() string
	// Power is the chassis power.
	Power() bool
	// Log is every chassis control set, in order ("power 1", "reset 1").
	Log() []string
}

// fleet is an Env while the scenarios run: the current (sub)test and what
// clusteradm init printed.
type fleet struct {
	Env
	t        *testing.T
	hubToken string
	hubURL   string
	// top is the test Run was given; last is the last release, once built.
	top  *testing.T
	last *release
}

// Root is the repository's root: the nearest directory holding go.mod
// above the working directory (a test's is its package's). Test binaries
// are built with -trimpath, so no source path is recorded to start from.
func Root() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("the working directory: %v", err))
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			panic(fmt.Sprintf("no go.mod above %s: run the tests from the repository", wd))
		}
	}
}

// Tool returns a binary from the tool cache (hack/tools.sh).
func Tool(t testing.TB, name, binary string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(Root(), "hack", "tools.sh"), "--print-bin", name).Output()
	if err != nil {
		t.Fatalf("hack/tools.sh --print-bin %s: %v", name, err)
	}
	path := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), binary)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is not built: run `hack/tools.sh %s` (make test and make e2e-local do): %v", path, name, err)
	}
	return path
}

// OCMToolVersion is the OCM version of the tool cache's binaries (and so
// the bundle version to ask clusteradm for).
func OCMToolVersion(t testing.TB) string {
	t.Helper()
	bin := Tool(t, "ocm", "registration")
	m := regexp.MustCompile(`/ocm-(v[0-9.]+)/`).FindStringSubmatch(bin)
	if m == nil {
		t.Fatalf("no OCM version in the tool cache path %s", bin)
	}
	return m[1]
}
