package planes

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/hostfleet/hostfleet/e2e/harness/nodes"
)

// servingForNodes makes the API server of a plane that gets nodes serve on
// nodes.HostAddress (which every node reaches) with a certificate that also
// names the in-cluster addresses (the kubernetes Service's cluster IP and
// names), and reach its kubelets at their InternalIP with a client
// certificate of the plane's client CA. The certificates are written to
// certDir before the API server starts (envtest then makes none).
func servingForNodes(env *envtest.Environment, ca *clientCA, certDir string) error {
	port, err := freePortOn(nodes.HostAddress)
	if err != nil {
		return err
	}
	server := env.ControlPlane.GetAPIServer()
	server.CertDir = certDir
	server.SecureServing.Address, server.SecureServing.Port = nodes.HostAddress, strconv.Itoa(port)
	servingCA, servingKey, servingCAPEM, _, err := issue(&x509.Certificate{SerialNumber: big.NewInt(1),
		Subject:  pkix.Name{CommonName: "hostfleet-planes-serving-ca"},
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true}, nil, nil)
	if err != nil {
		return err
	}
	_, _, certPEM, keyPEM, err := issue(&x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP(nodes.HostAddress), net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	}, servingCA, servingKey)
	if err != nil {
		return err
	}
	_, _, saPEM, saKeyPEM, err := issue(&x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "service-accounts"},
		KeyUsage: x509.KeyUsageDigitalSignature}, nil, nil)
	if err != nil {
		return err
	}
	ca.mu.Lock()
	ca.serial++
	serial := ca.serial
	ca.mu.Unlock()
	_, _, kcPEM, kcKeyPEM, err := issue(&x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca.cert, ca.key)
	if err != nil {
		return err
	}
	for name, content := range map[string][]byte{"apiserver.crt": certPEM, "apiserver.key": keyPEM, "sa-signer.crt": saPEM, "sa-signer.key": saKeyPEM,
		"kubelet-client.crt": kcPEM, "kubelet-client.key": kcKeyPEM} {
		if err := os.WriteFile(filepath.Join(certDir, name), content, 0o600); err != nil {
			return err
		}
	}
	server.SecureServing.CA = servingCAPEM
	args := server.Configure()
	args.Set("advertise-address", nodes.HostAddress)
	args.Set("kubelet-preferred-address-types", "InternalIP,Hostname")
	args.Set("kubelet-client-certificate", filepath.Join(certDir, "kubelet-client.crt"))
	args.Set("kubelet-client-key", filepath.Join(certDir, "kubelet-client.key"))
	return nil
}

// freePortOn is a TCP port free on host now.
func freePortOn(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("a free port on %s (is it on the host? nodes.PrepareHost puts it on lo): %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// NodeOptions are what a plane's node needs beyond the plane.
type NodeOptions struct {
	// Index picks the node's addresses (nodes.Options.Index).
	Index int
	// Registry, Mirrors and PauseImage: where its images come from.
	Registry   string
	Mirrors    []string
	PauseImage string
	// Labels are the Node's labels at registration; ProviderID its
	// spec.providerID.
	Labels     map[string]string
	ProviderID string
}

// StartNode gives a plane started ForNodes one real node named after it
// (e2e/harness/nodes), and kube-scheduler, and waits until the Node is
// Ready. The node's credentials are client certificates of the plane's CA
// (system:node:<plane> bound to system:node, system:kube-proxy to
// system:node-proxier). Stop stops it first.
func (f *Fleet) StartNode(ctx context.Context, plane string, o NodeOptions) (*nodes.Node, error) {
	p := f.planes[plane]
	if p == nil || !p.nodes {
		return nil, fmt.Errorf("node %s: no plane %q started ForNodes", plane, plane)
	}
	bin := os.Getenv("HOSTFLEET_NODE_BIN")
	if bin == "" {
		bin = filepath.Dir(toolPath("--print-bin", "node"))
	}
	if _, err := os.Stat(filepath.Join(bin, "kubelet")); err != nil {
		return nil, fmt.Errorf("node %s: kubelet: %w (build it with `hack/tools.sh node`)", plane, err)
	}
	dir := filepath.Join(f.Dir, "node-"+plane)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kubelet, err := f.identity(plane, dir, "kubelet", "system:node:"+plane, "system:nodes")
	if err != nil {
		return nil, err
	}
	proxy, err := f.identity(plane, dir, "kube-proxy", "system:kube-proxy")
	if err != nil {
		return nil, err
	}
	if err := bindNodeRoles(ctx, p.Client); err != nil {
		return nil, err
	}
	if _, err := f.Run("kube-scheduler-"+plane, plane, filepath.Join(bin, "kube-scheduler"),
		[]string{"--kubeconfig=" + p.Kubeconfig, "--leader-elect=false", "--secure-port=0"}); err != nil {
		return nil, err
	}
	n, err := nodes.Start(ctx, nodes.Options{Name: plane, Index: o.Index, Dir: dir, Kubeconfig: kubelet, ProxyKubeconfig: proxy,
		ClientCAFile: p.clientCA.certFile(), Registry: o.Registry, Mirrors: o.Mirrors, PauseImage: o.PauseImage, Bin: bin, Labels: o.Labels,
		ProviderID: o.ProviderID})
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.nodes = append(f.nodes, n)
	f.mu.Unlock()
	return n, waitReady(ctx, p.Client, plane, n)
}

// identity writes a kubeconfig for a user of the plane's client CA.
func (f *Fleet) identity(plane, dir, file, user string, groups ...string) (string, error) {
	cfg, err := f.AddUser(plane, user, groups...)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, file+".kubeconfig")
	return path, WriteKubeconfig(path, cfg)
}

// bindNodeRoles binds the bootstrap roles of kubelets and kube-proxy to
// their identities (the planes authorize with RBAC alone, no Node
// authorizer).
func bindNodeRoles(ctx context.Context, c client.Client) error {
	for _, b := range []*rbacv1.ClusterRoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "test-planes:nodes"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "test-planes:kube-proxy"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-proxier"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:kube-proxy"}}},
	} {
		if err := c.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("bind %s: %w", b.RoleRef.Name, err)
		}
	}
	return nil
}

// waitReady waits until the Node reports Ready.
func waitReady(ctx context.Context, c client.Client, name string, n *nodes.Node) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		node := &corev1.Node{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, node)
		if err == nil {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("node %s not Ready within a minute (last: %v); see %v", name, err, n.Logs()), ctx.Err())
		case <-time.After(200 * time.Millisecond): // polling the Node
		}
	}
}
