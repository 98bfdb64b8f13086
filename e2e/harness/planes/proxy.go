package planes

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of a plane's API server that a
// test can cut and restore, to show what a component does when it loses a
// cluster for a while. TLS passes through untouched.
type Proxy struct {
	// Config reaches the plane through the proxy, as administrator.
	Config *rest.Config
	// Kubeconfig is a kubeconfig file for Config.
	Kubeconfig string

	ln     net.Listener
	target string

	mu    sync.Mutex
	up    bool
	conns map[net.Conn]struct{}
}

// Proxy starts a proxy in front of the named plane (each call its own, for
// one client, say); it is closed with the fleet.
func (f *Fleet) Proxy(plane string) (*Proxy, error) {
	p := f.planes[plane]
	if p == nil {
		return nil, fmt.Errorf("proxy: no plane %q", plane)
	}
	u, err := url.Parse(p.Config.Host)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy for %s: %w", plane, err)
	}
	px := &Proxy{ln: ln, target: u.Host, up: true, conns: map[net.Conn]struct{}{}}
	px.Config = rest.CopyConfig(p.Config)
	px.Config.Host = "https://" + ln.Addr().String()
	px.Kubeconfig = filepath.Join(f.Dir, fmt.Sprintf("%s-proxy-%d.kubeconfig", plane, ln.Addr().(*net.TCPAddr).Port))
	if err := WriteKubeconfig(px.Kubeconfig, px.Config); err != nil {
		_ = ln.Close()
		return nil, err
	}
	go px.serve()
	f.mu.Lock()
	f.closers = append(f.closers, px.close)
	f.mu.Unlock()
	return px, nil
}

// Cut drops every connection and refuses new ones until Restore.
func (px *Proxy) Cut() {
	px.mu.Lock()
	defer px.mu.Unlock()
	px.up = false
	for c := range px.conns {
		_ = c.Close()
	}
}

// Restore lets connections through again.
func (px *Proxy) Restore() {
	px.mu.Lock()
	px.up = true
	px.mu.Unlock()
}

func (px *Proxy) serve() {
	for {
		in, err := px.ln.Accept()
		if err != nil {
			return
		}
		px.mu.Lock()
		up := px.up
		if up {
			px.conns[in] = struct{}{}
		}
		px.mu.Unlock()
		if !up {
			_ = in.Close()
			continue
		}
		go px.pipe(in)
	}
}

func (px *Proxy) pipe(in net.Conn) {
	defer func() {
		px.mu.Lock()
		delete(px.conns, in)
		px.mu.Unlock()
		_ = in.Close()
	}()
	out, err := net.Dial("tcp", px.target)
	if err != nil {
		return
	}
	px.mu.Lock()
	px.conns[out] = struct{}{}
	px.mu.Unlock()
	defer func() {
		px.mu.Lock()
		delete(px.conns, out)
		px.mu.Unlock()
		_ = out.Close()
	}()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done
}

func (px *Proxy) close() error {
	px.Cut()
	err := px.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// WriteKubeconfig writes a kubeconfig file for cfg (a plane, as a user
// AddUser made, say): for processes and people, such as kubectl.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["plane"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["plane"] = &clientcmdapi.Context{Cluster: "plane", AuthInfo: "admin"}
	kc.CurrentContext = "plane"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
