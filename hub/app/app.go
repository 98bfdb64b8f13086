package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/hostfleet/hostfleet/hub/addon"
	"github.com/hostfleet/hostfleet/hub/admission"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/clustertenancy"
	"github.com/hostfleet/hostfleet/hub/forwarder"
	"github.com/hostfleet/hostfleet/hub/hardwarecopy"
	"github.com/hostfleet/hostfleet/hub/lease"
	"github.com/hostfleet/hostfleet/hub/ledger"
	"github.com/hostfleet/hostfleet/hub/maintenance"
	hubmetrics "github.com/hostfleet/hostfleet/hub/metrics"
	"github.com/hostfleet/hostfleet/hub/placedclaim"
	"github.com/hostfleet/hostfleet/hub/scheduler"
	"github.com/hostfleet/hostfleet/hub/tenant"
	"github.com/hostfleet/hostfleet/internal/election"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/scheme"
	"github.com/hostfleet/hostfleet/internal/serving"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// Options are the hub's flags.
type Options struct {
	// Options: the hub cluster, leader election, metrics, health.
	serving.Options
	// Election times the leader election.
	Election election.Timing
	// PprofAddr serves net/http/pprof (profiles of a live hub); "0" or
	// empty disables it.
	PprofAddr string
	// BindDeadline is how long a claim the scheduler placed may stay unbound
	// before it is placed on another cluster.
	BindDeadline time.Duration
	// QPS and Burst limit the hub's client on the client side. Each
	// placement costs three requests (label, status, Event): at 50 QPS the
	// scheduler placed at most about 16 claims/s (make bench-scale).
	QPS   float32
	Burst int
	// SchedulerWorkers is how many claims the scheduler works on at once;
	// it still decides one at a time.
	SchedulerWorkers int
	// PlacedClaims: keep a PlacedClaim of every placed claim in its
	// cluster's namespace, and deploy agents that read them.
	PlacedClaims bool
	// UsageSkew is how far an agent's clock may be from the hub's: an
	// interval reported that far outside its claim's placement is counted
	// within it, one further out refused. UsageMemory is how long the hub
	// remembers a claim gone from a cluster: an interval of a claim
	// forgotten is refused, never counted twice.
	UsageSkew, UsageMemory time.Duration
	// AddonManager runs the hostfleet-agent add-on manager (needs OCM's
	// CRDs on the hub); Addon is what it deploys.
	AddonManager bool
	Addon        addon.Options
	// Webhook serves the checks no admission policy can make.
	Webhook admission.WebhookOptions
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{Options: serving.NewOptions("hostfleet-system"), Election: election.Default(), BindDeadline: 5 * time.Minute,
		QPS: 300, Burst: 600, SchedulerWorkers: 16, UsageSkew: time.Minute, UsageMemory: 7 * 24 * time.Hour,
		PlacedClaims: true,
		AddonManager: true,
		Addon: addon.Options{Image: "ghcr.io/hostfleet/hostfleet-agent:latest", ImagePullPolicy: corev1.PullIfNotPresent,
			HubName: "hub", Replicas: 1}}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs, "the hub", "hub controller manager")
	o.Election.AddFlags(fs)
	o.Webhook.AddFlags(fs)
	fs.DurationVar(&o.BindDeadline, "bind-deadline", o.BindDeadline,
		"a claim the scheduler placed that is not bound within this time is placed on another cluster (tenant pins are never moved)")
	fs.BoolVar(&o.PlacedClaims, "placed-claims", o.PlacedClaims,
		"keep a PlacedClaim of every placed claim in its cluster's namespace, and deploy agents that read their claims from them (--claim-watch=placed): each claim event then wakes one agent, not every agent of the fleet")
	fs.BoolVar(&o.AddonManager, "addon-manager", o.AddonManager,
		"register the hostfleet-agent OCM add-on and deploy agents to the clusters it is enabled for")
	fs.StringVar(&o.Addon.Image, "agent-image", o.Addon.Image, "container image of the agents the add-on deploys")
	fs.StringVar((*string)(&o.Addon.ImagePullPolicy), "agent-image-pull-policy", string(o.Addon.ImagePullPolicy),
		"pull policy of the agents' image: Always, IfNotPresent or Never")
	fs.IntVar(&o.Addon.Replicas, "agent-replicas", o.Addon.Replicas, "replicas of each agent; one is active, the others wait on its Lease")
	fs.StringVar(&o.Addon.HubName, "hub-name", o.Addon.HubName, "this hub's name, written by its agents on the hosts they bind")
	fs.StringSliceVar(&o.Addon.BMCNamespaces, "agent-bmc-namespaces", o.Addon.BMCNamespaces,
		"namespaces, on every managed cluster, whose hosts the agents drive through their BMCs; they read BMC credentials there and nowhere else (default: none, the BMC driver off)")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, "net/http/pprof listen address (CPU and memory profiles of the live controller, unauthenticated: bind it to localhost); empty or 0 disables")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "client-side queries per second to the hub API server (each placement makes three requests)")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "client-side burst above --kube-api-qps")
	fs.IntVar(&o.SchedulerWorkers, "scheduler-workers", o.SchedulerWorkers,
		"claims the scheduler works on at once: it decides one at a time and writes concurrently")
	fs.DurationVar(&o.UsageSkew, "usage-clock-skew", o.UsageSkew,
		"how far an agent's clock may be from the hub's: a usage interval up to this far outside its claim's placement is counted within it, one further out is refused")
	fs.DurationVar(&o.UsageMemory, "usage-memory", o.UsageMemory,
		fmt.Sprintf("how long the hub remembers a claim gone from a cluster (and at most %d per cluster) to count the intervals its cluster reports late, each once; an interval of a claim forgotten is refused", ledger.MaxGone))
}

// Validate says everything that is wrong with the options.
func (o *Options) Validate() []error {
	errs := append(o.Options.Validate(), o.Webhook.Validate()...)
	if o.SchedulerWorkers < 1 {
		errs = append(errs, fmt.Errorf("--scheduler-workers %d must be at least 1", o.SchedulerWorkers))
	}
	if o.QPS <= 0 || o.Burst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-qps %v and --kube-api-burst %d must be positive", o.QPS, o.Burst))
	}
	if err := o.Election.Validate(); o.LeaderElect && err != nil {
		errs = append(errs, err)
	}
	if o.AddonManager {
		if err := addon.ValidateImage(o.Addon.Image); err != nil {
			errs = append(errs, fmt.Errorf("--agent-image: %w", err))
		}
		switch o.Addon.ImagePullPolicy {
		case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		default:
			errs = append(errs, fmt.Errorf("--agent-image-pull-policy %q must be Always, IfNotPresent or Never", o.Addon.ImagePullPolicy))
		}
		if o.Addon.Replicas < 1 {
			errs = append(errs, fmt.Errorf("--agent-replicas %d must be at least 1", o.Addon.Replicas))
		}
		if len(validation.IsDNS1123Label(o.Addon.HubName)) > 0 {
			errs = append(errs, fmt.Errorf("--hub-name %q must be a DNS label", o.Addon.HubName))
		}
		for _, ns := range o.Addon.BMCNamespaces {
			if len(validation.IsDNS1123Label(ns)) > 0 {
				errs = append(errs, fmt.Errorf("--agent-bmc-namespaces: %q is not a namespace name", ns))
			}
		}
	}
	if o.BindDeadline < time.Second {
		errs = append(errs, fmt.Errorf("--bind-deadline %s must be at least 1s", o.BindDeadline))
	}
	if o.UsageSkew < 0 || o.UsageMemory < time.Hour {
		errs = append(errs, fmt.Errorf("--usage-clock-skew %s must not be negative, and --usage-memory %s at least 1h", o.UsageSkew, o.UsageMemory))
	}
	return errs
}

// Scheme is the hub's scheme.
func Scheme() *runtime.Scheme {
	return scheme.New(clusterv1.Install, clusterv1beta1.Install, clusterv1beta2.Install, workv1.Install, addonv1beta1.Install)
}

// New builds the hub's manager with its controllers.
func New(ctx context.Context, cfg *rest.Config, o *Options) (ctrl.Manager, error) {
	scheme := Scheme()
	mo := o.ManagerOptions(scheme, hostfleetv1alpha1.HubLease)
	// No decision reads managedFields: the cache keeps objects without them.
	mo.Cache = cache.Options{ByObject: forwarder.CacheByObject(), DefaultTransform: cache.TransformStripManagedFields()}
	mo.PprofBindAddress = o.PprofAddr
	o.Election.Apply(&mo)
	// A stalled API server costs each informer a watch again, not a list.
	mgr, err := ctrl.NewManager(resume.Watches(cfg), mo)
	if err != nil {
		return nil, fmt.Errorf("hub manager: %w", err)
	}
	if serving.Serves(o.MetricsAddr) {
		if err := hubmetrics.Register(hubmetrics.NewCollector(mgr.GetClient())); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	if err := mgr.Add(&admission.Installer{Client: mgr.GetClient()}); err != nil {
		return nil, fmt.Errorf("admission policy installer: %w", err)
	}
	if o.Webhook.Serves() {
		w := &admission.Webhook{Options: o.Webhook, Namespace: o.LeaderElectionNamespace, Reader: mgr.GetAPIReader(), Client: mgr.GetClient()}
		server, err := w.Server()
		if err != nil {
			return nil, err
		}
		if err := errors.Join(mgr.Add(server), mgr.Add(w)); err != nil {
			return nil, fmt.Errorf("admission webhook: %w", err)
		}
	}
	if o.AddonManager {
		o.Addon.PlacedClaims = o.PlacedClaims
		if err := mgr.Add(&addon.Manager{Config: cfg, Options: o.Addon}); err != nil {
			return nil, fmt.Errorf("add-on manager: %w", err)
		}
	}
	if err := (&tenant.Reconciler{Client: mgr.GetClient(), Scheme: scheme}).SetupWithManager(ctx, mgr, setup.Options{}); err != nil {
		return nil, fmt.Errorf("tenant controller: %w", err)
	}
	if err := (&clustertenancy.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, setup.Options{}); err != nil {
		return nil, fmt.Errorf("cluster tenancy controller: %w", err)
	}
	if err := (&hardwarecopy.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, setup.Options{}); err != nil {
		return nil, fmt.Errorf("HardwareData copy controller: %w", err)
	}
	if err := (&scheduler.Reconciler{Client: mgr.GetClient(), Deadline: o.BindDeadline}).SetupWithManager(ctx, mgr, setup.Options{Concurrency: o.SchedulerWorkers}); err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if o.PlacedClaims {
		if err := (&placedclaim.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, setup.Options{}); err != nil {
			return nil, fmt.Errorf("PlacedClaim controller: %w", err)
		}
	}
	if err := (&forwarder.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, setup.Options{}); err != nil {
		return nil, fmt.Errorf("forwarder: %w", err)
	}
	if err := (&lease.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, setup.Options{}); err != nil {
		return nil, fmt.Errorf("lease controller: %w", err)
	}
	if err := (&maintenance.Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, setup.Options{}); err != nil {
		return nil, fmt.Errorf("maintenance controller: %w", err)
	}
	if err := (&ledger.Reconciler{Client: mgr.GetClient(), Skew: o.UsageSkew, Memory: o.UsageMemory, MaxGone: ledger.MaxGone}).SetupWithManager(ctx, mgr, setup.Options{}); err != nil {
		return nil, fmt.Errorf("usage ledger controller: %w", err)
	}
	if serving.Serves(o.HealthAddr) {
		check, err := ready(mgr, cfg)
		if err != nil {
			return nil, fmt.Errorf("readiness check: %w", err)
		}
		if err := errors.Join(mgr.AddHealthzCheck("ping", healthz.Ping), mgr.AddReadyzCheck("hub", check)); err != nil {
			return nil, fmt.Errorf("health checks: %w", err)
		}
	}
	return mgr, nil
}

// Run runs the hub until ctx is done.
func Run(ctx context.Context, o *Options) error {
	cfg, err := o.Config()
	if err != nil {
		return fmt.Errorf("hub config: %w", err)
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	// A hub started while its API server is down (restarted in an outage)
	// waits for it: building the manager needs discovery.
	if err := WaitForAPIServer(ctx, cfg); err != nil {
		return err
	}
	mgr, err := New(ctx, cfg, o)
	if err != nil {
		return err
	}
	ctrl.Log.Info("starting the hub", "server", cfg.Host, "addonManager", o.AddonManager, "agentImage", o.Addon.Image,
		"bindDeadline", o.BindDeadline, "leaderElection", o.LeaderElect)
	return mgr.Start(ctx)
}

// WaitForAPIServer returns once the API server answers discovery, or when
// ctx ends; it logs while it waits.
func WaitForAPIServer(ctx context.Context, cfg *rest.Config) error {
	c := rest.CopyConfig(cfg)
	c.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return fmt.Errorf("hub config: %w", err)
	}
	var logged time.Time
	for {
		_, err := dc.ServerVersion()
		if err == nil {
			return nil
		}
		if time.Since(logged) > 30*time.Second {
			ctrl.Log.Info("waiting for the hub API server", "server", cfg.Host, "error", err.Error())
			logged = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}
