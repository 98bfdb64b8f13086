// Package serving is what the managers of the hub and the operator share:
// the cluster they reach, their leader election, and their metrics and
// health endpoints: flags with their defaults, validation, the rest.Config
// and the manager's options.
package serving

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options are the serving flags of one binary.
type Options struct {
	// Kubeconfig reaches the cluster; empty means in-cluster config or
	// $KUBECONFIG.
	Kubeconfig              string
	LeaderElect             bool
	LeaderElectionNamespace string
	MetricsAddr             string
	// MetricsSecure serves metrics over HTTPS to callers the API server
	// authenticates and allows (get on the non-resource URL /metrics).
	MetricsSecure bool
	HealthAddr    string
}

// NewOptions are the defaults: leader election in $POD_NAMESPACE (else
// namespace), metrics and health off, metrics secure once on.
func NewOptions(namespace string) Options {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		namespace = ns
	}
	return Options{LeaderElect: true, LeaderElectionNamespace: namespace, MetricsAddr: "0", MetricsSecure: true, HealthAddr: "0"}
}

// AddFlags registers the options on fs; cluster and who say, in the help,
// what the kubeconfig reaches and what is elected.
func (o *Options) AddFlags(fs *pflag.FlagSet, cluster, who string) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, fmt.Sprintf("kubeconfig of %s; empty means in-cluster config or $KUBECONFIG", cluster))
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect one active "+who)
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace,
		fmt.Sprintf("namespace of the leader election Lease (default: $POD_NAMESPACE, else %s)", o.LeaderElectionNamespace))
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "metrics listen address; 0 disables")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"serve metrics over HTTPS, only to callers the API server authenticates and allows to get /metrics (false: plain HTTP to anyone)")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "healthz/readyz listen address; 0 disables")
}

// Validate says what is wrong with the options.
func (o *Options) Validate() []error {
	if o.LeaderElect && len(validation.IsDNS1123Label(o.LeaderElectionNamespace)) > 0 {
		return []error{fmt.Errorf("--leader-election-namespace %q must be a namespace name", o.LeaderElectionNamespace)}
	}
	return nil
}

// Config is the rest.Config of --kubeconfig, else the in-cluster one.
func (o *Options) Config() (*rest.Config, error) {
	if o.Kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	}
	return ctrl.GetConfig()
}

// Serves reports whether an address flag turns its endpoint on.
func Serves(addr string) bool { return addr != "0" && addr != "" }

// ManagerOptions are a manager's options for these flags, its leader
// election Lease named lease and released on cancel.
func (o *Options) ManagerOptions(scheme *runtime.Scheme, lease string) ctrl.Options {
	return ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       MetricsOptions(o.MetricsAddr, o.MetricsSecure),
		HealthProbeBindAddress:        o.HealthAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              lease,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	}
}

// MetricsOptions serve metrics on addr; secure, over HTTPS (a self-signed
// certificate) to callers the API server authenticates (TokenReview) and
// allows (SubjectAccessReview of get on /metrics): Authorized.
func MetricsOptions(addr string, secure bool) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr}
	if secure {
		o.SecureServing = true
		o.FilterProvider = Authorized
	}
	return o
}
