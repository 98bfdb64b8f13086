package app

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/hosted"
	"github.com/hostfleet/hostfleet/agent/inventory"
	"github.com/hostfleet/hostfleet/agent/metrics"
	"github.com/hostfleet/hostfleet/agent/nodelabels"
	"github.com/hostfleet/hostfleet/agent/placedcache"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/fence"
	"github.com/hostfleet/hostfleet/internal/permissions"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/scheme"
	"github.com/hostfleet/hostfleet/internal/serving"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// Scheme is the agent's scheme on both clusters: a new one each time, as
// controller-runtime's manager adds to the scheme it is given.
func Scheme() *runtime.Scheme { return scheme.New() }

// ClaimSelector selects the hub claims an agent serves: placed on its cluster
// and not forwarded.
func ClaimSelector(clusterName string) labels.Selector {
	onCluster, _ := labels.NewRequirement(hostfleetv1alpha1.LabelCluster, selection.Equals, []string{clusterName})
	notRemote, _ := labels.NewRequirement(hostfleetv1alpha1.LabelKind, selection.NotEquals, []string{hostfleetv1alpha1.KindRemote})
	return labels.NewSelector().Add(*onCluster, *notRemote)
}

// Run runs the agent until ctx is done. The options must be valid.
func Run(ctx context.Context, o *Options) error {
	hubCfg, err := clientcmd.BuildConfigFromFlags("", o.HubKubeconfig)
	if err != nil {
		return fmt.Errorf("hub kubeconfig %s: %w", o.HubKubeconfig, err)
	}
	hubCfg.QPS, hubCfg.Burst = o.QPS, o.Burst
	var refresher *hosted.Refresher
	var managedCfg *rest.Config
	if o.BootstrapManagedKubeconfig != "" {
		managedCfg, refresher, err = hostedIdentity(ctx, o)
	} else {
		managedCfg, err = managedConfig(o.ManagedKubeconfig)
	}
	if err != nil {
		return err
	}
	managedCfg.QPS, managedCfg.Burst = o.ManagedQPS, o.ManagedBurst
	var reader client.Reader
	if o.ClaimScope == "tenants" {
		if reader, err = newClient(hubCfg); err != nil {
			return fmt.Errorf("hub client: %w", err)
		}
	}
	// The claim cache watches a fixed set of namespaces: when the tenants
	// this cluster serves change, the agent's controllers start again over
	// the new set (the managed cluster's identity and token are kept).
	for first := true; ; first = false {
		run := *o
		// Controller names are registered once per process.
		run.InProcess = o.InProcess || !first
		if reader != nil {
			if run.ServedNamespaces, err = WaitForServedNamespaces(ctx, reader, o.ClusterName, o.Role); err != nil {
				return err
			}
		}
		a, err := New(ctx, hubCfg, managedCfg, &run)
		if err != nil {
			return err
		}
		if refresher != nil {
			if err := a.Manager.Add(refresher); err != nil {
				return err
			}
		}
		runCtx, cancel := context.WithCancel(ctx)
		// The watcher compares against the manager's cache of the cluster's
		// ClusterTenancy (one watch), not a read from the hub every tick.
		changed := &servedWatcher{reader: a.Manager.GetClient(), cluster: o.ClusterName, role: o.Role, served: run.ServedNamespaces, every: 2 * time.Second, changed: cancel}
		if reader != nil {
			if err := a.Manager.Add(changed); err != nil {
				cancel()
				return err
			}
		}
		err = a.Manager.Start(runCtx)
		cancel()
		if ctx.Err() != nil || !changed.fired.Load() {
			return err
		}
		ctrl.Log.Info("the tenants this cluster serves changed: starting the controllers again over their namespaces")
	}
}

// hostedIdentity creates the agent's least-privilege identity on the managed
// cluster with the bootstrap kubeconfig and returns the config of that
// identity, with the refresher that keeps its token valid.
func hostedIdentity(ctx context.Context, o *Options) (*rest.Config, *hosted.Refresher, error) {
	bootstrap, err := clientcmd.BuildConfigFromFlags("", o.BootstrapManagedKubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap managed kubeconfig %s: %w", o.BootstrapManagedKubeconfig, err)
	}
	dir := o.TokenDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "hostfleet-agent-"+o.ClusterName)
	}
	id := hosted.Identity{Namespace: o.AgentNamespace, Name: hostfleetv1alpha1.AgentManagedRole, TokenFile: filepath.Join(dir, "token"), TTL: o.TokenTTL,
		Features: permissions.Features{LocalClaims: o.LocalClaims, BMCDriver: o.BMHDriver != "none"}, BMCNamespaces: o.BMCNamespaces,
		LocalClaimNamespaces: o.LocalClaimNamespaces}
	if o.Role == hostfleetv1alpha1.RoleWorkload {
		id.Features, id.BMCNamespaces, id.LocalClaimNamespaces = permissions.Features{Workload: true}, nil, nil
	}
	if err := hosted.Bootstrap(ctx, bootstrap, id); err != nil {
		return nil, nil, err
	}
	cfg := id.Config(bootstrap)
	ctrl.Log.Info("working on the managed cluster as its own ServiceAccount", "namespace", id.Namespace, "serviceAccount", hostfleetv1alpha1.AgentServiceAccount)
	return cfg, &hosted.Refresher{Identity: id, Config: cfg}, nil
}

func managedConfig(path string) (*rest.Config, error) {
	return kubeconfigOrDefault(path, "managed cluster")
}

// kubeconfigOrDefault loads a kubeconfig file, or without one the in-cluster
// config (or $KUBECONFIG).
func kubeconfigOrDefault(path, what string) (*rest.Config, error) {
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("%s kubeconfig %s: %w", what, path, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("%s config (in-cluster or $KUBECONFIG): %w", what, err)
	}
	return cfg, nil
}

// Agent is a wired agent, ready to Start.
type Agent struct {
	// Manager runs on the hub; Managed is the infrastructure cluster, added
	// to it.
	Manager ctrl.Manager
	Managed cluster.Cluster
	// Inventory publishes the cluster's HostInventory.
	Inventory *inventory.Writer
}

// New builds the agent's manager on the hub, with the managed cluster added to
// it and the controllers set up. Tests call it to run an agent in-process
// against real planes.
func New(ctx context.Context, hubCfg, managedCfg *rest.Config, o *Options) (*Agent, error) {
	mgr, managed, err := newManager(hubCfg, managedCfg, o)
	if err != nil {
		return nil, err
	}
	if o.Role == hostfleetv1alpha1.RoleWorkload {
		// No host here: the Nodes of the tenant's workload cluster.
		kube, err := kubernetes.NewForConfig(managedCfg)
		if err != nil {
			return nil, fmt.Errorf("workload cluster client: %w", err)
		}
		if err := (&nodelabels.Reconciler{Hub: mgr.GetClient(), Nodes: managed.GetClient(), Kube: kube,
			Recorder: mgr.GetEventRecorder("hostfleet-agent"), ClusterName: o.ClusterName, Interval: o.LabelSyncInterval,
		}).SetupWithManager(ctx, mgr, setup.Options{Managed: managed}); err != nil {
			return nil, fmt.Errorf("node label controller: %w", err)
		}
		return finish(mgr, managed, hubCfg, managedCfg, o, nil)
	}
	writes := &fence.Fence{}
	hostWritesSeen, err := setupControllers(ctx, mgr, managed, o, writes)
	if err != nil {
		return nil, err
	}
	cached := []prometheus.Collector{metrics.NewClaimCollector(mgr.GetClient(), o.ClusterName),
		metrics.NewHostCollector(managed.GetClient(), o.ClusterName)}
	if o.LocalClaims {
		cached = append(cached, metrics.NewLocalClaimCollector(managed.GetClient(), o.ClusterName, func(c *metal3api.HostClaim) bool {
			return binder.ServesLocal(c, o.LocalClaimNamespaces)
		}))
	}
	if err := metrics.Register(cached...); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	inv := &inventory.Writer{
		Hub: mgr.GetClient(), Managed: managed.GetClient(), LocalClaims: o.LocalClaims,
		ClusterName: o.ClusterName, Interval: o.InventoryInterval, HostWritesSeen: hostWritesSeen,
	}
	if err := mgr.Add(inv); err != nil {
		return nil, err
	}
	if err := mgr.Add(&inventory.UsageWriter{Hub: mgr.GetClient(), Managed: managed.GetClient(), Fence: writes,
		ClusterName: o.ClusterName, Interval: o.InventoryInterval}); err != nil {
		return nil, err
	}
	return finish(mgr, managed, hubCfg, managedCfg, o, inv)
}

// finish adds what both roles have: health checks and the health Lease.
func finish(mgr ctrl.Manager, managed cluster.Cluster, hubCfg, managedCfg *rest.Config, o *Options, inv *inventory.Writer) (*Agent, error) {
	if o.HealthAddr != "0" && o.HealthAddr != "" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return nil, err
		}
	}
	if o.HealthLease {
		if err := addHealthLease(mgr, hubCfg, managedCfg, o); err != nil {
			return nil, fmt.Errorf("health Lease: %w", err)
		}
	}
	return &Agent{Manager: mgr, Managed: managed, Inventory: inv}, nil
}

// newManager is the agent's manager on the hub, watching only the claims
// placed on its cluster, with the managed cluster added to it.
func newManager(hubCfg, managedCfg *rest.Config, o *Options) (ctrl.Manager, cluster.Cluster, error) {
	// A stalled API server costs each informer a watch again, not a list.
	hubCfg, managedCfg = resume.Watches(hubCfg), resume.Watches(managedCfg)
	scheme := Scheme()
	// No decision reads managedFields: the caches (hub and managed
	// cluster) keep objects without them.
	metrics, err := metricsOptions(managedCfg, o)
	if err != nil {
		return nil, nil, err
	}
	mo := ctrl.Options{
		Scheme:                 scheme,
		MapperProvider:         NewRESTMapper,
		Metrics:                metrics,
		HealthProbeBindAddress: o.HealthAddr,
		Controller:             config.Controller{SkipNameValidation: &o.InProcess},
		// One active agent per cluster; the Lease lives on the managed
		// cluster, which is what the agent serves.
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              leaderElectionID(o.ClusterName),
		LeaderElectionNamespace:       o.AgentNamespace,
		LeaderElectionConfig:          managedCfg,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cache.Options{ByObject: hubCache(o), DefaultTransform: cache.TransformStripManagedFields()},
	}
	if readsPlaced(o) {
		src, err := placedSource(hubCfg, scheme, o)
		if err != nil {
			return nil, nil, err
		}
		mo.Cache.NewInformer = src.NewInformer
	}
	o.Election.Apply(&mo)
	if mo.LeaderElectionResourceLockInterface, err = leaderLock(context.Background(), managedCfg, o, o.Election.RenewDeadline); err != nil {
		return nil, nil, err
	}
	mgr, err := ctrl.NewManager(hubCfg, mo)
	if err != nil {
		return nil, nil, fmt.Errorf("hub manager: %w", err)
	}
	managed, err := cluster.New(managedCfg, func(co *cluster.Options) {
		co.Scheme = scheme
		co.MapperProvider = NewRESTMapper
		co.Cache.DefaultNamespaces = namespaceConfigs(o.HostNamespaces)
		co.Cache.DefaultTransform = cache.TransformStripManagedFields()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("managed cluster: %w", err)
	}
	if err := mgr.Add(managed); err != nil {
		return nil, nil, err
	}
	return mgr, managed, nil
}

// metricsOptions serve metrics on o.MetricsAddr; with o.MetricsSecure, over
// HTTPS (a self-signed certificate) to callers that the API server of the
// cluster the agent runs in authenticates (TokenReview) and allows
// (SubjectAccessReview of get on /metrics): where its Prometheus lives and
// its token is valid. That is the managed cluster, or in Hosted mode the
// hosting cluster; never the hub, which the manager talks to.
func metricsOptions(managedCfg *rest.Config, o *Options) (metricsserver.Options, error) {
	opts := metricsserver.Options{BindAddress: o.MetricsAddr}
	if !o.MetricsSecure || o.MetricsAddr == "0" || o.MetricsAddr == "" {
		return opts, nil
	}
	local := managedCfg
	if o.BootstrapManagedKubeconfig != "" {
		hosting, err := kubeconfigOrDefault(o.HostingKubeconfig, "hosting cluster")
		if err != nil {
			return opts, err
		}
		local = hosting
	}
	opts.SecureServing = true
	opts.FilterProvider = func(_ *rest.Config, _ *http.Client) (metricsserver.Filter, error) {
		hc, err := rest.HTTPClientFor(local)
		if err != nil {
			return nil, fmt.Errorf("metrics authentication client: %w", err)
		}
		return serving.Authorized(local, hc)
	}
	return opts, nil
}

// hubCache is what the agent caches of the hub. Infrastructure role: only
// the claims placed on its cluster, filtered by the server, in the
// namespaces it serves. Workload role: every claim and HardwareData copy
// of its tenant's namespaces.
func hubCache(o *Options) map[client.Object]cache.ByObject {
	served := namespaceConfigs(o.ServedNamespaces)
	// What the agent knows of the tenants: one object, in its cluster's
	// namespace.
	tenancy := cache.ByObject{Namespaces: namespaceConfigs([]string{o.ClusterName})}
	if o.Role == hostfleetv1alpha1.RoleWorkload {
		return map[client.Object]cache.ByObject{
			&metal3api.HostClaim{}:              {Namespaces: served},
			&metal3api.HardwareData{}:           {Namespaces: namespaceConfigs(o.ServedNamespaces)},
			&hostfleetv1alpha1.ClusterTenancy{}: tenancy,
		}
	}
	claims := cache.ByObject{Label: ClaimSelector(o.ClusterName), Namespaces: served}
	if readsPlaced(o) {
		// One informer, over the PlacedClaims of the cluster's namespace
		// (placedSource), which are only the served namespaces' claims.
		claims = cache.ByObject{Transform: placedcache.Transform(cache.TransformStripManagedFields())}
	}
	return map[client.Object]cache.ByObject{
		&hostfleetv1alpha1.ClusterTenancy{}: tenancy,
		// The cluster's HostUsage, compared with its hosts' record.
		&hostfleetv1alpha1.HostUsage{}: tenancy,
		// The cluster's maintenances.
		&hostfleetv1alpha1.HostMaintenance{}: tenancy,
		&metal3api.HostClaim{}:               claims,
	}
}
