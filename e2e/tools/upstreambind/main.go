// Command upstreambind binds HostClaims with upstream metal3's own
// association (baremetal-operator's pkg/hostclaim, at the version pinned in
// go.mod) in a controller-runtime reconciler, for the binding benchmark to
// measure side by side with Hostfleet's agent; with -hostclaims it plays
// baremetal-operator v0.14's HostClaim controller, for the race test of
// e2e/suites/forwarding. It is its own module so that
// Hostfleet's go.mod does not grow with baremetal-operator's dependencies.
//
// It serves the claims of one namespace until SIGTERM, then prints the API
// writes it made: "writes <n>".
//
// usage: upstreambind -kubeconfig <file> [-namespace <ns>] [-workers 4] [-hostclaims]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/metal3-io/baremetal-operator/pkg/hostclaim"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// writes counts the requests that change something.
type writes struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (w *writes) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		w.n.Add(1)
	}
	return w.next.RoundTrip(r)
}

// reconciler associates a claim with a host as upstream does: choose and
// update the host (pkg/hostclaim's Associate), then write the claim's status.
type reconciler struct {
	client.Client
	APIReader client.Reader
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &metal3api.HostClaim{}
	if err := r.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if c.Status.BareMetalHost != nil {
		return ctrl.Result{}, nil
	}
	m, err := hostclaim.NewHostManager(r.Client, log.FromContext(ctx), c, r.APIReader)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := m.Associate(ctx); err != nil {
		var requeue hostclaim.RequeueAfterError
		if errors.As(err, &requeue) {
			return ctrl.Result{RequeueAfter: requeue.GetRequeueAfter()}, nil
		}
		return ctrl.Result{}, err
	}
	if err := r.Status().Update(ctx, m.HostClaim); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, nil
}

func main() {
	namespace := flag.String("namespace", "", "the claims' namespace (empty: all)")
	workers := flag.Int("workers", 4, "concurrent reconciles")
	hostclaims := flag.Bool("hostclaims", false, "play baremetal-operator v0.14.0-rc.0's HostClaim controller (its finalizer on every claim, its conditions on every reconcile, its release without deprovisioning) instead of the association alone")
	flag.Parse()
	// -kubeconfig (controller-runtime's flag) names the cluster holding
	// the claims and the hosts.
	if err := run(*namespace, *workers, *hostclaims); err != nil {
		fmt.Fprintln(os.Stderr, "upstreambind:", err)
		os.Exit(1)
	}
}

func run(namespace string, workers int, hostclaims bool) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	w := &writes{}
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { w.next = rt; return w }
	cfg.QPS, cfg.Burst = 1000, 2000
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := metal3api.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return err
	}
	var r reconcile.Reconciler = &reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
	b := ctrl.NewControllerManagedBy(mgr).Named("upstream-hostclaim").For(&metal3api.HostClaim{}, builder.WithPredicates(inNamespace(namespace))).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers})
	if hostclaims {
		r = &hostClaimController{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
		b = b.WatchesRawSource(source.Kind(mgr.GetCache(), &metal3api.BareMetalHost{}, handler.TypedEnqueueRequestsFromMapFunc(claimOfHost)))
	}
	if err := b.Complete(r); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err = mgr.Start(ctx)
	fmt.Printf("writes %d\n", w.n.Load())
	return err
}

// inNamespace keeps the events of one namespace's objects (all, with "").
func inNamespace(ns string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return ns == "" || o.GetNamespace() == ns })
}
