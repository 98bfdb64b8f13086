// Package setup is what every controller's SetupWithManager takes besides
// its context and manager, so that all read alike:
//
//	func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, o setup.Options) error
package setup

import (
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
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
