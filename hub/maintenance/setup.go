package maintenance

import (
	"context"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// claimIndex indexes HostMaintenances by the claims (namespace/name) their
// status lists.
const claimIndex = "status.hosts.claim"

// SetupWithManager wires the controller: claims whose annotations change
// (an approval), and the claims a maintenance lists, before and after each
// change of it.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, o setup.Options) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("hostfleet-maintenance")
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &hostfleetv1alpha1.HostMaintenance{}, claimIndex, func(o client.Object) []string {
		return claimsOf(o.(*hostfleetv1alpha1.HostMaintenance))
	}); err != nil {
		return err
	}
	listed := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.ObjectOld)
			enqueue(q, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object)
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("maintenance").
		For(&metal3api.HostClaim{}, builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		Watches(&hostfleetv1alpha1.HostMaintenance{}, listed).
		WithOptions(o.Controller(2)).
		Complete(resume.Reconciler(r))
}

func claimsOf(m *hostfleetv1alpha1.HostMaintenance) []string {
	var out []string
	for _, h := range m.Status.Hosts {
		if h.Claim != "" {
			out = append(out, h.Claim)
		}
	}
	return out
}

func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object) {
	m, ok := o.(*hostfleetv1alpha1.HostMaintenance)
	if !ok {
		return
	}
	for _, c := range claimsOf(m) {
		if ns, name, ok := strings.Cut(c, "/"); ok {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		}
	}
}
