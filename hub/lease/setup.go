package lease

import (
	"context"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// SetupWithManager wires the controller: every claim, and a tenant's
// claims again when its spec (its cap or warning) changes.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, o setup.Options) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("hostfleet-lease")
	}
	claims := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		t, ok := o.(*hostfleetv1alpha1.Tenant)
		if !ok {
			return nil
		}
		var out []reconcile.Request
		for _, ns := range t.Status.Namespaces {
			out = append(out, setup.ListRequests(ctx, mgr.GetClient(), &metal3api.HostClaimList{}, "the claims of tenant "+t.Name, client.InNamespace(ns))...)
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("lease").
		For(&metal3api.HostClaim{}).
		Watches(&hostfleetv1alpha1.Tenant{}, claims, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(o.Controller(2)).
		Complete(resume.Reconciler(r))
}
