//go:build e2ekind

package kind_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/ipmisim"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/e2e/harness/registry"
	"github.com/hostfleet/hostfleet/e2e/scenarios"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/manifests"
)

// env is a fleet of kind clusters named <prefix>-<cluster>.
type env struct {
	t          *testing.T // the whole test: what starts lives until it ends
	prefix     string
	dir        string
	clients    map[string]client.Client
	kubeconfig map[string]string // at the control-plane node's address, for the test and for pods
	hubServer  string
	hubCA      string
	images     map[string]string
	ocmVersion string
	ipmi       *ipmisim.BMC
}

// TestOCM runs the shared scenarios on kind clusters.
func TestOCM(t *testing.T) {
	scenarios.Run(t, newEnv(t))
}

// kind runs the kind CLI and returns its standard output.
func kind(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kind", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	t.Logf("kind %s (%s)", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond))
	if err != nil {
		t.Fatalf("kind %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// kindOCMVersion is the OCM release the kind suite installs: clusteradm
// asks for this bundle, and the kind nodes pull its images from quay.io.
const kindOCMVersion = "v1.3.1"

func newEnv(t *testing.T) *env {
	t.Helper()
	for _, bin := range []string{"kind", "docker"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("the kind end-to-end tests need %s on PATH (see docs/e2e-kind.md): %v", bin, err)
		}
	}
	e := &env{t: t, prefix: "hostfleet", dir: t.TempDir(), clients: map[string]client.Client{}, kubeconfig: map[string]string{},
		ocmVersion: kindOCMVersion}
	if p := os.Getenv("HOSTFLEET_KIND_PREFIX"); p != "" {
		e.prefix = p
	}

	crds, err := manifests.CRDs(manifests.Hostfleet, manifests.Metal3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range scenarios.Clusters {
		name := e.prefix + "-" + c
		kind(t, "create", "cluster", "--name", name, "--kubeconfig", filepath.Join(e.dir, c+"-kind.kubeconfig"), "--wait", "3m")
		if os.Getenv("HOSTFLEET_KIND_KEEP") == "" {
			t.Cleanup(func() { kind(t, "delete", "cluster", "--name", name) })
		}
		// One address for the test, clusteradm and the other clusters'
		// pods: the control-plane node's on the kind network (in the API
		// server's certificate; routed from this machine on Linux).
		e.kubeconfig[c] = filepath.Join(e.dir, c+".kubeconfig")
		if err := nodeKubeconfig(filepath.Join(e.dir, c+"-kind.kubeconfig"), e.kubeconfig[c], name+"-control-plane"); err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig[c])
		if err != nil {
			t.Fatal(err)
		}
		if e.clients[c], err = client.New(cfg, client.Options{Scheme: planes.Scheme()}); err != nil {
			t.Fatal(err)
		}
		if c == "hub" {
			e.hubServer = cfg.Host
			e.hubCA = filepath.Join(e.dir, "hub-ca.crt")
			if err := os.WriteFile(e.hubCA, cfg.CAData, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// The CRDs the local planes start with: Hostfleet's and metal3's.
		for _, crd := range crds {
			if err := e.clients[c].Create(context.Background(), crd.DeepCopy()); err != nil {
				t.Fatalf("CRD %s on %s: %v", crd.Name, c, err)
			}
		}
		// Every node may run an agent the scenarios place on infra nodes.
		nodes := &corev1.NodeList{}
		if err := e.clients[c].List(context.Background(), nodes); err != nil {
			t.Fatal(err)
		}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"node-role.kubernetes.io/infra":""}}}`))
			if err := e.clients[c].Patch(context.Background(), n, patch); err != nil {
				t.Fatalf("label node %s on %s: %v", n.Name, c, err)
			}
		}
	}
	// The images `make images` built, for this machine's architecture.
	e.images = e.LoadImages(t, filepath.Join(scenarios.Root(), "bin", "images"))

	// ipmi_sim on the kind network's gateway: the agent's pods reach it there.
	out, err := exec.Command("docker", "network", "inspect", "kind", "-f", "{{json .IPAM.Config}}").Output()
	if err != nil {
		t.Fatalf("docker network inspect kind: %v", err)
	}
	var ipam []struct{ Gateway string }
	if err := json.Unmarshal(out, &ipam); err != nil {
		t.Fatalf("docker network inspect kind: %v", err)
	}
	gateway := ""
	for _, c := range ipam {
		if c.Gateway != "" && !strings.Contains(c.Gateway, ":") {
			gateway = c.Gateway
		}
	}
	if gateway == "" {
		t.Fatalf("the kind network has no IPv4 gateway: %s", out)
	}
	if e.ipmi, err = ipmisim.StartAt(filepath.Join(e.dir, "ipmi_sim"), gateway, scenarios.BMCUsername, scenarios.BMCPassword); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.ipmi.Close)
	return e
}

// nodeKubeconfig rewrites kind's kubeconfig (127.0.0.1 and a published
// port) to name the control-plane node's address on the kind network.
func nodeKubeconfig(from, to, node string) error {
	out, err := exec.Command("docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", node).Output()
	if err != nil {
		return fmt.Errorf("docker inspect %s: %w", node, err)
	}
	ips := strings.Fields(string(out))
	if len(ips) == 0 {
		return fmt.Errorf("%s has no address on a docker network", node)
	}
	cfg, err := clientcmd.LoadFromFile(from)
	if err != nil {
		return err
	}
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + net.JoinHostPort(ips[0], "6443")
	}
	return clientcmd.WriteToFile(*cfg, to)
}

func (e *env) Client(cluster string) client.Client       { return e.clients[cluster] }
func (e *env) Kubeconfig(cluster string) string          { return e.kubeconfig[cluster] }
func (e *env) InClusterKubeconfig(cluster string) string { return e.kubeconfig[cluster] }
func (e *env) HubAPIServer() string                      { return e.hubServer }
func (e *env) HubCAFile() string                         { return e.hubCA }
func (e *env) OCMVersion() string                        { return e.ocmVersion }
func (e *env) Image(name string) string                  { return e.images[name] }

// LoadImages loads hack/images' docker tarballs in dir into every kind
// cluster.
func (e *env) LoadImages(t *testing.T, dir string) map[string]string {
	refs := map[string]string{}
	for _, name := range scenarios.Images {
		_, ref, err := registry.Layout(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%v: the kind end-to-end tests load the images hack/images builds (make images)", err)
		}
		refs[name] = ref
		for _, c := range scenarios.Clusters {
			kind(t, "load", "image-archive", filepath.Join(dir, name+"-"+runtime.GOARCH+".tar"), "--name", e.prefix+"-"+c)
		}
	}
	return refs
}
func (e *env) BMC() scenarios.BMC { return e.ipmi }
func (e *env) Dir() string        { return e.dir }

// StartBMO runs baremetal-operator (the tool cache's, test mode) on this
// machine against the cluster until the whole test ends, as e2e-local does.
func (e *env) StartBMO(t *testing.T, cluster string, namespaces ...string) {
	t.Helper()
	bin, err := planes.BMOPath()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-test-mode", "-webhook-port", "0", "-metrics-addr", "0", "-health-addr", "127.0.0.1:0"}
	if len(namespaces) > 0 {
		args = append(args, "-namespace", strings.Join(namespaces, ","))
	}
	log, err := os.Create(filepath.Join(e.dir, "baremetal-operator-"+cluster+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig[cluster])
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start baremetal-operator on %s: %v", cluster, err)
	}
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
	})
}

// PodAddress forwards a local port to the pod's port (kind's pod IPs are
// not reachable from the host).
func (e *env) PodAddress(cluster, namespace, pod string, port int) (string, func(), error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig[cluster])
	if err != nil {
		return "", nil, err
	}
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return "", nil, err
	}
	u, err := url.Parse(cfg.Host + "/api/v1/namespaces/" + namespace + "/pods/" + pod + "/portforward")
	if err != nil {
		return "", nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stopCh, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stopCh, ready, io.Discard, io.Discard)
	if err != nil {
		return "", nil, err
	}
	errs := make(chan error, 1)
	go func() { errs <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errs:
		return "", nil, fmt.Errorf("port-forward to %s/%s:%d: %w", namespace, pod, port, err)
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stopCh)
		return "", nil, fmt.Errorf("port-forward to %s/%s:%d: no local port: %v", namespace, pod, port, err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), func() { close(stopCh) }, nil
}

// Running lists the live pods of a Deployment: the ones named after it
// that have not ended.
func (e *env) Running(cluster, namespace, deployment string) []string {
	list := &corev1.PodList{}
	if err := e.clients[cluster].List(context.Background(), list, client.InNamespace(namespace)); err != nil {
		return []string{"cannot list pods: " + err.Error()}
	}
	var out []string
	for _, p := range list.Items {
		if strings.HasPrefix(p.Name, deployment+"-") && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p.Name)
		}
	}
	return out
}

// WorkloadNode registers, on the cluster, a Node as the kubelet of the
// claimed host would (kind's own nodes are not on a claimed host), until
// the step ends.
func (e *env) WorkloadNode(t *testing.T, cluster string) string {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "db-1-node",
		Labels: map[string]string{"kubernetes.io/hostname": "db-1-node", hostfleetv1alpha1.LabelLabelsPending: "true"}},
		Spec: corev1.NodeSpec{ProviderID: scenarios.WorkloadProviderID}}
	if err := e.clients[cluster].Create(context.Background(), node); err != nil {
		t.Fatalf("register the workload cluster's Node: %v", err)
	}
	t.Cleanup(func() { _ = e.clients[cluster].Delete(context.Background(), node) })
	return node.Name
}
