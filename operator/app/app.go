package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hostfleet/hostfleet/hub/api/command"
	"github.com/hostfleet/hostfleet/hub/api/scheme"
	operatorv1alpha1 "github.com/hostfleet/hostfleet/operator/api/v1alpha1"
	"github.com/hostfleet/hostfleet/operator/controller"
)

// Options are the operator's flags.
type Options struct {
	Kubeconfig              string
	LeaderElect             bool
	LeaderElectionNamespace string
	MetricsAddr             string
	// MetricsSecure serves metrics over HTTPS to callers the API server
	// authenticates and allows (get on the non-resource URL /metrics).
	MetricsSecure bool
	HealthAddr    string
	// HubImage and AgentImage are the images of this release, used when a
	// HostfleetHub names none.
	HubImage   string
	AgentImage string
	// TokenTTL is the lifetime of a Hosted hub's token on the hub.
	TokenTTL time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "hostfleet-operator"
	}
	tag := command.Version
	if tag == "dev" {
		tag = "latest"
	}
	return &Options{LeaderElect: true, LeaderElectionNamespace: ns, MetricsAddr: "0", MetricsSecure: true, HealthAddr: "0",
		HubImage: "ghcr.io/hostfleet/hostfleet-hub:" + tag, AgentImage: "ghcr.io/hostfleet/hostfleet-agent:" + tag, TokenTTL: time.Hour}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the cluster the HostfleetHubs are on; empty means in-cluster config or $KUBECONFIG")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect one active operator")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace,
		"namespace of the leader election Lease (default: $POD_NAMESPACE, else hostfleet-operator)")
	fs.StringVar(&o.HubImage, "hub-image", o.HubImage, "hub image of this release, for HostfleetHubs that name none")
	fs.StringVar(&o.AgentImage, "agent-image", o.AgentImage, "agent image of this release, for HostfleetHubs that name none")
	fs.DurationVar(&o.TokenTTL, "hosted-token-ttl", o.TokenTTL, "Hosted mode: lifetime of the hub controllers' token on the hub; renewed at 80%")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "metrics listen address; 0 disables")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"serve metrics over HTTPS, only to callers the API server authenticates and allows to get /metrics (false: plain HTTP to anyone)")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "healthz/readyz listen address; 0 disables")
}

// Validate says everything that is wrong with the options.
func (o *Options) Validate() []error {
	var errs []error
	if o.LeaderElect && len(validation.IsDNS1123Label(o.LeaderElectionNamespace)) > 0 {
		errs = append(errs, fmt.Errorf("--leader-election-namespace %q must be a namespace name", o.LeaderElectionNamespace))
	}
	for flag, image := range map[string]string{"--hub-image": o.HubImage, "--agent-image": o.AgentImage} {
		if image == "" || strings.ContainsAny(image, " \t\n") {
			errs = append(errs, fmt.Errorf("%s %q must be a container image reference", flag, image))
		}
	}
	if o.TokenTTL < 10*time.Minute {
		errs = append(errs, fmt.Errorf("--hosted-token-ttl %s must be at least 10m (the API server's minimum)", o.TokenTTL))
	}
	return errs
}

// Scheme is the operator's scheme: what it reads and writes on the hub and
// hosting clusters.
func Scheme() *runtime.Scheme {
	return scheme.New(apiextensionsv1.AddToScheme, addonv1beta1.Install, operatorv1alpha1.AddToScheme)
}

// Release is what this build installs.
func (o *Options) Release() controller.Release {
	return controller.Release{Version: command.Version, HubImage: o.HubImage, AgentImage: o.AgentImage}
}

// New builds the operator's manager.
func New(cfg *rest.Config, o *Options) (ctrl.Manager, error) {
	scheme := Scheme()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOptions(o.MetricsAddr, o.MetricsSecure),
		HealthProbeBindAddress:        o.HealthAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              "hostfleet-operator",
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, fmt.Errorf("operator manager: %w", err)
	}
	if err := (&controller.Reconciler{Client: mgr.GetClient(), Scheme: scheme, Release: o.Release(), TokenTTL: o.TokenTTL}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("HostfleetHub controller: %w", err)
	}
	if o.HealthAddr != "0" && o.HealthAddr != "" {
		if err := errors.Join(mgr.AddHealthzCheck("ping", healthz.Ping), mgr.AddReadyzCheck("ping", healthz.Ping)); err != nil {
			return nil, fmt.Errorf("health checks: %w", err)
		}
	}
	return mgr, nil
}

// Run runs the operator until ctx is done.
func Run(ctx context.Context, o *Options) error {
	var cfg *rest.Config
	var err error
	if o.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return fmt.Errorf("operator config: %w", err)
	}
	mgr, err := New(cfg, o)
	if err != nil {
		return err
	}
	ctrl.Log.Info("starting the operator", "version", command.Version, "server", cfg.Host, "hubImage", o.HubImage, "agentImage", o.AgentImage)
	return mgr.Start(ctx)
}

// metricsOptions serve metrics on addr; secure, over HTTPS (a self-signed
// certificate) to callers the API server authenticates (TokenReview) and
// allows (SubjectAccessReview of get on /metrics).
func metricsOptions(addr string, secure bool) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr}
	if secure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}
