// Package setup is what every controller's SetupWithManager takes besides
// its context and manager, so that all read alike:
//
//	func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, o setup.Options) error
package setup

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Options wire a controller into its manager.
type Options struct {
	// Concurrency is how many objects the controller works on at once
	// (MaxConcurrentReconciles); zero or less: the controller's default.
	Concurrency int
	// Managed is the cluster an agent's controllers watch beside the
	// manager's (the hub): the infrastructure cluster, or the workload
	// cluster in the workload role. Nil for the hub's and the operator's.
	Managed cluster.Cluster
}

// Controller is the controller-runtime options for o: Concurrency workers,
// def when o says none.
func (o Options) Controller(def int) controller.Options {
	n := o.Concurrency
	if n < 1 {
		n = def
	}
	return controller.Options{MaxConcurrentReconciles: max(n, 1)}
}

// ListRequests lists objects and returns their reconcile requests: what a
// watch's map function returns for "every object of this list". A failed
// list is logged (what names the objects) and maps to none.
func ListRequests(ctx context.Context, r client.Reader, list client.ObjectList, what string, opts ...client.ListOption) []reconcile.Request {
	if err := r.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list "+what+" to look at again")
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "read the list of "+what)
		return nil
	}
	out := make([]reconcile.Request, 0, len(items))
	for _, o := range items {
		if obj, ok := o.(client.Object); ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return out
}
