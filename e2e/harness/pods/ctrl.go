//go:build linux

package pods

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/utils/ptr"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type reconcilerFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f reconcilerFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}

var _ reconcile.Reconciler = reconcilerFunc(nil)

// ctrlOptions lets several runners (one per plane) share a process: their
// controllers have the same names.
func ctrlOptions() controller.Options {
	return controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4}
}

// logger sends controller-runtime's messages to Options.Logf.
func logger(opts Options) logr.Logger {
	if opts.Logf == nil {
		// Not logr.Discard(): a logger without a sink makes the manager fall
		// back to the global one.
		return funcr.New(func(string, string) {}, funcr.Options{})
	}
	// Errors only: the managers' start and stop messages are noise here.
	return funcr.New(func(prefix, args string) { opts.Logf("[pods %s] %s %s", opts.Name, prefix, args) }, funcr.Options{Verbosity: -1})
}
