// Package kubectl is `kubectl hostfleet`, a kubectl plugin for the hub:
// `claims` lists claims with where they run and why they are not Ready,
// `why` walks one claim's path and says what to do, `fleet` sums up the
// clusters and tenants, `extend` extends a claim's lease, `usage` sums
// host use, `forget-cluster` lets go of a lost cluster's deleted claims;
// on an infrastructure cluster, `quarantined` lists the hosts replaced
// after a failure and `return-host` returns one. It uses the caller's
// kubeconfig and rights only.
package kubectl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/internal/scheme"
)

// Usage is the plugin's help.
const Usage = `kubectl hostfleet: Hostfleet's claims, explained.

  kubectl hostfleet claims [-n NS | -A] [-o wide|json|yaml] [--watch]
      every claim: tenant, cluster, host, power, Ready and its reason, age
  kubectl hostfleet why CLAIM [-n NS]
      the claim's path (scheduled, bound, provisioned, powered, Ready, Node
      labels, forwarded) up to the first step not done, its message, what
      to do, the hardware it asks and which clusters have it (or what their
      closest hosts lack), and the recent Events
  kubectl hostfleet fleet [--hardware]
      per cluster: its agent, hosts available per pool, tenants served
      (and with --hardware, hosts available per hardware profile); per
      tenant: claims against maxClaims and per host class (a hub
      administrator's view)
  kubectl hostfleet extend CLAIM --for 2h [-n NS]
      moves the claim's lease end (hostfleet.io/lease-until) later, within
      the tenant's maxLeaseDuration
  kubectl hostfleet usage [--tenant NAME] [--since YYYY-MM-DD]
      host-hours per tenant, host class and cluster, from the clusters'
      HostUsage records (a hub administrator's view)
  kubectl hostfleet forget-cluster CLUSTER
      lets go of the claims being deleted on a cluster lost for good (not
      Available): removes the finalizers only its agent would remove; no
      other cluster is touched (a hub cluster administrator's command)
  kubectl hostfleet quarantined [-n NS | -A]
      on an infrastructure cluster: the hosts replaced behind their claims
      after a failure, kept out of the pool (when, claim, why, fenced)
  kubectl hostfleet return-host HOST [-n NS]
      on an infrastructure cluster: returns a quarantined host to the pool
      once fixed (it is bound again once released and erased)

The usual kubeconfig flags apply (--kubeconfig, --context, -n, ...).
`

// Env is what a command runs with: a client with the caller's kubeconfig,
// and where to write.
type Env struct {
	Out io.Writer
	// Namespace is -n, or the kubeconfig context's namespace.
	Namespace string
	Client    client.WithWatch
}

// Main runs the plugin with args (those after `kubectl hostfleet`); the
// error says what to fix.
func Main(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		_, err := io.WriteString(out, Usage)
		return err
	}
	cmd, args := args[0], args[1:]
	fs := pflag.NewFlagSet("kubectl hostfleet "+cmd, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{}
	clientcmd.BindOverrideFlags(overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
	fs.StringVar(&rules.ExplicitPath, "kubeconfig", "", "the kubeconfig to use")
	var run func(context.Context, *Env, []string) error
	switch cmd {
	case "claims":
		run = claimsFlags(fs)
	case "why":
		run = whyFlags(fs)
	case "fleet":
		run = fleetFlags(fs)
	case "extend":
		run = extendFlags(fs)
	case "usage":
		run = usageFlags(fs)
	case "forget-cluster":
		run = forgetFlags(fs)
	case "quarantined":
		run = quarantinedFlags(fs)
	case "return-host":
		run = returnFlags(fs)
	default:
		return fmt.Errorf("unknown command %q: use claims, why, fleet, extend, usage, forget-cluster, quarantined or return-host (kubectl hostfleet --help)", cmd)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s: %w (kubectl hostfleet --help)", cmd, err)
	}
	env, err := connect(rules, overrides, out)
	if err != nil {
		return err
	}
	return run(ctx, env, fs.Args())
}

// connect loads the caller's kubeconfig and makes a client with it.
func connect(rules *clientcmd.ClientConfigLoadingRules, overrides *clientcmd.ConfigOverrides, out io.Writer) (*Env, error) {
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("no kubeconfig: set KUBECONFIG or pass --kubeconfig with the hub's kubeconfig")
		}
		return nil, fmt.Errorf("the kubeconfig cannot be used: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig's namespace: %w", err)
	}
	s := scheme.New(addonv1beta1.Install, clusterv1.Install)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	return &Env{Out: out, Namespace: ns, Client: c}, nil
}

// explain turns an API error into what to do about it.
func explain(err error, verb, resource, namespace string) error {
	where := "in namespace " + namespace
	flag := "-n " + namespace
	if namespace == "" {
		where, flag = "in any namespace", "-A"
	}
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("you may not %s %s %s: ask the hub's administrator, or check with `kubectl auth can-i %s %s %s`",
			verb, resource, where, verb, resource, flag)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the hub does not accept your credentials (%v): refresh your kubeconfig", err)
	case err != nil && strings.Contains(err.Error(), "no matches for kind"):
		return fmt.Errorf("this cluster does not serve %s: point --kubeconfig or --context at the Hostfleet hub", resource)
	}
	return fmt.Errorf("%s %s %s: %w", verb, resource, where, err)
}
