package planes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/hostfleet/hostfleet/e2e/harness/nodes"
	"github.com/hostfleet/hostfleet/internal/permissions"
	"github.com/hostfleet/hostfleet/manifests"
)

// Plane is one running control plane.
type Plane struct {
	// Name is the plane's name in the fleet ("hub", "infra-1", ...).
	Name string
	// Config reaches the API server as a cluster administrator.
	Config *rest.Config
	// Client is a direct (uncached) client with Scheme().
	Client client.Client
	// Kubeconfig is the path of a kubeconfig file for Config, for processes
	// and for people (kubectl --kubeconfig).
	Kubeconfig string

	env      *envtest.Environment
	assets   string
	clientCA *clientCA
	// snapshot is the plane's etcd as started, for a shared plane (pool.go).
	snapshot snapshot
	// nodes: the plane was started ForNodes.
	nodes bool
}

// Fleet is a set of planes started together, and the processes started
// against them.
type Fleet struct {
	// Dir holds the kubeconfig files and process logs.
	Dir    string
	Scheme *runtime.Scheme

	planes map[string]*Plane
	order  []string
	// asked are the names the test holding a pooled fleet asked for (the
	// fleet may hold more): what Names says.
	asked []string

	mu      sync.Mutex
	procs   []*Process
	closers []func() error
	nodes   []*nodes.Node
}

// Options tune Start.
type Options struct {
	// Dir receives kubeconfigs and logs; it must exist.
	Dir string
	// Assets is the directory holding kube-apiserver and etcd. Empty means
	// $KUBEBUILDER_ASSETS.
	Assets string
	// CRDSets are the manifests CRD sets installed on every plane. Nil means
	// all of them: Hostfleet, metal3 and OCM. With Hostfleet's (and not
	// ForNodes, where the operator does it), a plane also gets the
	// ClusterRoles the hub binds (permissions.GrantedClusterRoles).
	CRDSets []string
	// StartTimeout bounds the start of each plane. Zero means one minute.
	StartTimeout time.Duration
	// ForNodes prepares the planes for real nodes (StartNode): the API
	// server serves on nodes.HostAddress, which nodes reach (nodes.PrepareHost
	// must have put it on the host), with a certificate for the in-cluster
	// names too, and reaches kubelets at their InternalIP; it calls webhooks
	// at their Service's endpoints (--enable-aggregator-routing: the host
	// runs no kube-proxy), and the ServiceAccount admission plugin, which
	// envtest disables, gives pods their token volume.
	ForNodes bool
	// Logs keeps each plane's API server and etcd output in Dir
	// (<plane>-apiserver.log, <plane>-etcd.log): the API server logs the
	// steps of every request slower than 500 ms.
	Logs bool
}

// Start starts one control plane per name, concurrently, and installs the CRDs
// on each. On error, whatever was started is stopped.
func Start(ctx context.Context, opts Options, names ...string) (*Fleet, error) {
	if len(names) == 0 {
		return nil, errors.New("start planes: no plane names given")
	}
	f := &Fleet{Dir: opts.Dir, Scheme: Scheme(), planes: map[string]*Plane{}}
	if err := f.startPlanes(ctx, opts, names); err != nil {
		return nil, errors.Join(err, f.Stop())
	}
	return f, ctx.Err()
}

// startPlanes starts a plane per name, concurrently, and adds them to the
// fleet, in the order given.
func (f *Fleet) startPlanes(ctx context.Context, opts Options, names []string) error {
	assets := opts.Assets
	if assets == "" {
		assets = envOrTool("KUBEBUILDER_ASSETS", "--print-assets")
	}
	if assets == "" {
		return errors.New("start planes: KUBEBUILDER_ASSETS is not set and the tool cache was not found; run `make test`, " +
			"or `hack/tools.sh envtest` first")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return fmt.Errorf("start planes: %s missing from %s (build it with `hack/tools.sh envtest`): %w", bin, assets, err)
		}
	}
	sets := opts.CRDSets
	if sets == nil {
		sets = []string{manifests.Hostfleet, manifests.Metal3, manifests.OCM}
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	errs := make([]error, len(names))
	started := make([]*Plane, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := f.startPlane(ctx, name, assets, sets, timeout, opts)
			if err != nil {
				errs[i] = fmt.Errorf("plane %s: %w", name, err)
				return
			}
			started[i] = p
		}()
	}
	wg.Wait()
	for i, p := range started {
		if p != nil {
			f.planes[names[i]] = p
			f.order = append(f.order, names[i])
		}
	}
	return errors.Join(errs...)
}

// startEnv starts a control plane that newEnv describes. A start that
// fails on a dropped connection (a new API server busy on a loaded
// machine resets one while its CRDs are installed) is stopped and made
// again, three times at most.
func startEnv(newEnv func() (*envtest.Environment, error)) (*envtest.Environment, *rest.Config, error) {
	for attempt := 1; ; attempt++ {
		env, err := newEnv()
		if err != nil {
			return nil, nil, err
		}
		cfg, err := env.Start()
		if err == nil {
			return env, cfg, nil
		}
		_ = env.Stop()
		if attempt == 3 || !transient(err) {
			return nil, nil, fmt.Errorf("start control plane (attempt %d): %w", attempt, err)
		}
	}
}

// transient says whether err is a dropped or refused connection, or an API
// server that did not become ready (made again, it gets new ports): one
// that never served its default namespace, its etcd unreachable, is one.
func transient(err error) bool {
	msg := err.Error()
	for _, s := range []string{"connection reset by peer", "connection refused", "EOF", "TLS handshake timeout", "i/o timeout", "timeout waiting for process",
		"default namespace didn't register within deadline"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func (f *Fleet) startPlane(ctx context.Context, name, assets string, sets []string, timeout time.Duration, opts Options) (*Plane, error) {
	crds, err := manifests.CRDs(sets...)
	if err != nil {
		return nil, err
	}
	storeAddonsAsV1beta1(crds)
	ca, err := newClientCA()
	if err != nil {
		return nil, err
	}
	var out *lastBytes
	newEnv := func() (*envtest.Environment, error) {
		env := &envtest.Environment{
			ControlPlane:             envtest.ControlPlane{APIServer: &envtest.APIServer{SecureServing: envtest.SecureServing{Authn: ca}}},
			BinaryAssetsDirectory:    assets,
			CRDs:                     crds,
			Scheme:                   f.Scheme,
			ControlPlaneStartTimeout: timeout,
			ControlPlaneStopTimeout:  30 * time.Second,
		}
		if opts.Logs {
			if err := f.keepLogs(name, env); err != nil {
				return nil, err
			}
		} else {
			// Kept to say why, should it not start.
			out = &lastBytes{n: 4096}
			server := env.ControlPlane.GetAPIServer()
			server.Out, server.Err = out, out
		}
		if opts.ForNodes {
			certDir := filepath.Join(f.Dir, name+"-certs")
			if err := os.MkdirAll(certDir, 0o700); err != nil {
				return nil, err
			}
			if err := servingForNodes(env, ca, certDir); err != nil {
				return nil, fmt.Errorf("serve for nodes: %w", err)
			}
			args := env.ControlPlane.GetAPIServer().Configure()
			args.Set("enable-aggregator-routing", "true")
			args.Disable("disable-admission-plugins")
		}
		return env, guard(env, assets, f.Dir, name)
	}
	release, err := startSlot(ctx)
	if err != nil {
		return nil, fmt.Errorf("plane %s: %w", name, err)
	}
	defer release()
	env, cfg, err := startEnv(newEnv)
	if err != nil {
		if out != nil {
			err = fmt.Errorf("%w; the last output of its kube-apiserver:\n%s", err, out)
		}
		return nil, err
	}
	p := &Plane{Name: name, Config: cfg, env: env, assets: assets, clientCA: ca, nodes: opts.ForNodes}
	if p.Client, err = client.New(cfg, client.Options{Scheme: f.Scheme}); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	p.Kubeconfig = filepath.Join(f.Dir, name+".kubeconfig")
	if err := os.WriteFile(p.Kubeconfig, env.KubeConfig, 0o600); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	if slices.Contains(sets, manifests.Hostfleet) && !opts.ForNodes {
		if err := installGrantedRoles(p.Client); err != nil {
			return nil, errors.Join(err, env.Stop())
		}
	}
	return p, nil
}

// installGrantedRoles makes the ClusterRoles the hub binds for tenants and
// agents, as the operator does with the hub (the planes with nodes get
// them from the operator itself).
func installGrantedRoles(c client.Client) error {
	for _, role := range permissions.GrantedClusterRoles() {
		if err := c.Create(context.Background(), &role); err != nil {
			return fmt.Errorf("ClusterRole %s: %w", role.Name, err)
		}
	}
	return nil
}

// keepLogs sends the plane's API server and etcd output to files in Dir,
// closed by Stop.
func (f *Fleet) keepLogs(name string, env *envtest.Environment) error {
	open := func(what string) (*os.File, error) {
		file, err := os.Create(filepath.Join(f.Dir, name+"-"+what+".log"))
		if err != nil {
			return nil, fmt.Errorf("keep logs: %w", err)
		}
		f.mu.Lock()
		f.closers = append(f.closers, file.Close)
		f.mu.Unlock()
		return file, nil
	}
	api, err := open("apiserver")
	if err != nil {
		return err
	}
	etcd, err := open("etcd")
	if err != nil {
		return err
	}
	server := env.ControlPlane.GetAPIServer()
	server.Out, server.Err = api, api
	env.ControlPlane.Etcd = &envtest.Etcd{Out: etcd, Err: etcd}
	return nil
}

// Plane returns the named plane, or nil.
func (f *Fleet) Plane(name string) *Plane { return f.planes[name] }

// Names are the planes' names in the order given to Start (or ForTest).
func (f *Fleet) Names() []string {
	if f.asked != nil {
		return append([]string(nil), f.asked...)
	}
	return append([]string(nil), f.order...)
}

// Stop stops the processes, then the planes. It is safe to call more than once.
func (f *Fleet) Stop() error {
	f.mu.Lock()
	procs, closers, started := f.procs, f.closers, f.nodes
	f.procs, f.closers, f.nodes = nil, nil, nil
	f.mu.Unlock()
	var errs []error
	for _, n := range started {
		errs = append(errs, n.Stop())
	}
	for i := len(procs) - 1; i >= 0; i-- {
		errs = append(errs, procs[i].Stop())
	}
	for _, c := range closers {
		errs = append(errs, c())
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for name, p := range f.planes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.env.Stop(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("stop plane %s: %w", name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	f.planes = map[string]*Plane{}
	return errors.Join(errs...)
}

// AddUser gives the named plane a user with the given groups (authenticated
// by a client certificate) and returns its rest.Config. Tests use it to act as
// a tenant or an agent identity rather than as the administrator.
func (f *Fleet) AddUser(plane, name string, groups ...string) (*rest.Config, error) {
	p := f.planes[plane]
	if p == nil {
		return nil, fmt.Errorf("no plane %q", plane)
	}
	u, err := p.env.AddUser(envtest.User{Name: name, Groups: groups}, p.Config)
	if err != nil {
		return nil, fmt.Errorf("add user %s to %s: %w", name, plane, err)
	}
	return u.Config(), nil
}

// storeAddonsAsV1beta1 makes the OCM add-on CRDs store v1beta1, the version
// addon-framework and the hub speak. A real OCM hub stores v1alpha1 and
// converts with its webhook; the planes have no webhook, and with "None"
// conversion the fields v1alpha1 lacks (status.registrations' driver and
// subject, for one) would be pruned on every write.
func storeAddonsAsV1beta1(crds []*apiextensionsv1.CustomResourceDefinition) {
	for _, crd := range crds {
		if crd.Spec.Group != "addon.open-cluster-management.io" {
			continue
		}
		var hasBeta bool
		for _, v := range crd.Spec.Versions {
			hasBeta = hasBeta || v.Name == "v1beta1"
		}
		if !hasBeta {
			continue
		}
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == "v1beta1"
		}
	}
}

// lastBytes keeps the last n bytes written to it.
type lastBytes struct {
	mu sync.Mutex
	b  []byte
	n  int
}

func (l *lastBytes) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	if len(l.b) > 2*l.n {
		l.b = append([]byte(nil), l.b[len(l.b)-l.n:]...)
	}
	return len(p), nil
}

func (l *lastBytes) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b[max(0, len(l.b)-l.n):])
}
