package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/hostfleet/hostfleet/internal/command"
	"github.com/hostfleet/hostfleet/internal/scheme"
	"github.com/hostfleet/hostfleet/internal/serving"
	"github.com/hostfleet/hostfleet/internal/setup"
	operatorv1alpha1 "github.com/hostfleet/hostfleet/operator/api/v1alpha1"
	"github.com/hostfleet/hostfleet/operator/controller"
)

// Options are the operator's flags.
type Options struct {
	// Options: the cluster the HostfleetHubs are on, leader election,
	// metrics, health.
	serving.Options
	// HubImage and AgentImage are the images of this release, used when a
	// HostfleetHub names none.
	HubImage   string
	AgentImage string
	// TokenTTL is the lifetime of a Hosted hub's token on the hub.
	TokenTTL time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	tag := command.Version
	if tag == "dev" {
		tag = "latest"
	}
	return &Options{Options: serving.NewOptions("hostfleet-operator"),
		HubImage: "ghcr.io/hostfleet/hostfleet-hub:" + tag, AgentImage: "ghcr.io/hostfleet/hostfleet-agent:" + tag, TokenTTL: time.Hour}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs, "the cluster the HostfleetHubs are on", "operator")
	fs.StringVar(&o.HubImage, "hub-image", o.HubImage, "hub image of this release, for HostfleetHubs that name none")
	fs.StringVar(&o.AgentImage, "agent-image", o.AgentImage, "agent image of this release, for HostfleetHubs that name none")
	fs.DurationVar(&o.TokenTTL, "hosted-token-ttl", o.TokenTTL, "Hosted mode: lifetime of the hub controllers' token on the hub; renewed at 80%")
}

// Validate says everything that is wrong with the options.
func (o *Options) Validate() []error {
	errs := o.Options.Validate()
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
	mgr, err := ctrl.NewManager(cfg, o.ManagerOptions(scheme, "hostfleet-operator"))
	if err != nil {
		return nil, fmt.Errorf("operator manager: %w", err)
	}
	if err := (&controller.Reconciler{Client: mgr.GetClient(), Scheme: scheme, Release: o.Release(), TokenTTL: o.TokenTTL}).SetupWithManager(context.Background(), mgr, setup.Options{}); err != nil {
		return nil, fmt.Errorf("HostfleetHub controller: %w", err)
	}
	if serving.Serves(o.HealthAddr) {
		if err := errors.Join(mgr.AddHealthzCheck("ping", healthz.Ping), mgr.AddReadyzCheck("ping", healthz.Ping)); err != nil {
			return nil, fmt.Errorf("health checks: %w", err)
		}
	}
	return mgr, nil
}

// Run runs the operator until ctx is done.
func Run(ctx context.Context, o *Options) error {
	cfg, err := o.Config()
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
