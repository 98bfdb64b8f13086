//go:build linux

package local_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/ipmisim"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/e2e/harness/pods"
	"github.com/hostfleet/hostfleet/e2e/harness/registry"
	"github.com/hostfleet/hostfleet/e2e/scenarios"
	"github.com/hostfleet/hostfleet/manifests"
)

// env is the fleet the scenarios share: four planes, each with
// kube-controller-manager and a pod runner.
type env struct {
	fleet      *planes.Fleet
	runners    map[string]*pods.Runner
	registry   *registry.Registry
	images     map[string]string // hostfleet-operator, -hub and -agent: their references
	ocmVersion string
	ipmi       *ipmisim.BMC // an IPMI BMC every pod reaches at its address
	hubCA      string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the local end-to-end tests run OCM's pods in mount and network namespaces: run them as root")
	}
	e := &env{runners: map[string]*pods.Runner{}}
	e.registry = registry.Start()
	t.Cleanup(e.registry.Close)
	start := time.Now()
	// Hostfleet's images, as `make images` built them.
	e.images = e.LoadImages(t, filepath.Join(scenarios.Root(), "bin", "images"))
	// OCM's, at the references clusteradm names for the bundle the tool
	// cache built: each binary where upstream's image keeps it, user 10001
	// as upstream's, no entrypoint (the Deployments' args name the binary).
	e.ocmVersion = scenarios.OCMToolVersion(t)
	for image, binary := range map[string]string{
		"registration-operator": "registration-operator", "registration": "registration", "work": "work",
		"placement": "placement", "addon-manager": "addon",
	} {
		img, err := registry.Binary(scenarios.Tool(t, "ocm", binary), "/"+binary, "10001")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.registry.Push("quay.io/open-cluster-management/"+image+":"+e.ocmVersion, img); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("registry %s serves %v and OCM %s's images (%s)", e.registry.Host, e.images, e.ocmVersion, time.Since(start).Round(time.Second))

	// OCM's own CRDs come from `clusteradm init` and `join`, as for a user.
	e.fleet = planes.ForTestWith(t, planes.Options{ForPods: true, CRDSets: []string{manifests.Hostfleet, manifests.Metal3}},
		scenarios.Clusters...)
	var ports []int
	for _, name := range e.fleet.Names() {
		u, err := url.Parse(e.fleet.Plane(name).Config.Host)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(u.Port())
		ports = append(ports, port)
	}
	// A BMC on the host's loopback, reachable from every pod (UDP forwarded
	// as the API servers' ports are): the agent drives it from its image.
	sim, err := ipmisim.Start(filepath.Join(e.fleet.Dir, "ipmi_sim"), scenarios.BMCUsername, scenarios.BMCPassword)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	e.ipmi = sim
	for _, name := range e.fleet.Names() {
		e.fleet.StartControllerManagerForTest(t, name)
		r, err := pods.Start(context.Background(), pods.Options{
			Name: name, Config: e.fleet.Plane(name).Config, Registry: e.registry.Host, ForwardPorts: ports, ForwardUDPPorts: []int{sim.Port},
			Dir: filepath.Join(e.fleet.Dir, "pods-"+name), ImageCache: filepath.Join(e.fleet.Dir, "images"),
		})
		if err != nil {
			t.Fatalf("pod runner on %s: %v", name, err)
		}
		e.runners[name] = r
	}
	t.Cleanup(func() {
		for name, r := range e.runners {
			r.Stop()
			if t.Failed() {
				for _, l := range r.Logs() {
					tail(t, name, l)
				}
			}
		}
	})
	e.hubCA = filepath.Join(e.fleet.Dir, "hub-ca.crt")
	if err := os.WriteFile(e.hubCA, e.fleet.Plane("hub").Config.CAData, 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// tail logs the last lines of a pod's log.
func tail(t *testing.T, plane, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	t.Logf("--- %s: last lines of %s ---\n%s", plane, filepath.Base(path), strings.Join(lines, "\n"))
}

// TestOCM runs the shared scenarios (e2e/scenarios) on the local fleet.
func TestOCM(t *testing.T) {
	scenarios.Run(t, newEnv(t))
}

func (e *env) Client(cluster string) client.Client { return e.fleet.Plane(cluster).Client }
func (e *env) Kubeconfig(cluster string) string    { return e.fleet.Plane(cluster).Kubeconfig }
func (e *env) InClusterKubeconfig(c string) string { return e.fleet.Plane(c).Kubeconfig } // pods reach 127.0.0.1 ports
func (e *env) HubAPIServer() string                { return "" }
func (e *env) HubCAFile() string                   { return e.hubCA }
func (e *env) OCMVersion() string                  { return e.ocmVersion }
func (e *env) Image(name string) string            { return e.images[name] }

// LoadImages pushes hack/images' layouts in dir to the registry the pod
// runners pull from.
func (e *env) LoadImages(t *testing.T, dir string) map[string]string {
	refs := map[string]string{}
	for _, name := range scenarios.Images {
		ref, err := e.registry.PushLayout(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%v: the local end-to-end tests run the images hack/images builds (make images)", err)
		}
		refs[name] = ref
	}
	return refs
}
func (e *env) BMC() scenarios.BMC                     { return e.ipmi }
func (e *env) Dir() string                            { return e.fleet.Dir }
func (e *env) Running(cluster, ns, d string) []string { return e.runners[cluster].Running(ns, d) }

// PodAddress: the pod runner's pod IPs are reachable from the test.
func (e *env) PodAddress(cluster, namespace, name string, port int) (string, func(), error) {
	p := &corev1.Pod{}
	if err := e.Client(cluster).Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
		return "", nil, err
	}
	return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)), func() {}, nil
}

func (e *env) StartBMO(t *testing.T, cluster string, namespaces ...string) {
	e.fleet.StartBMOForTest(t, cluster, namespaces...)
}
