package ledger

import (
	"context"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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

// clusterIndex indexes HostClaims by the cluster they are placed on.
const clusterIndex = "hostfleet.ledger-cluster"

// SetupWithManager wires the controller: a cluster's report, its ledger
// (deleted: made again) and the claims placed there (before and after
// each change: a claim moved counts on both) enqueue the cluster.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, o setup.Options) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("hostfleet-usage")
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &metal3api.HostClaim{}, clusterIndex, func(o client.Object) []string {
		if cl := o.GetLabels()[hostfleetv1alpha1.LabelCluster]; cl != "" {
			return []string{cl}
		}
		return nil
	}); err != nil {
		return err
	}
	claims := handler.Funcs{
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
		Named("usage").
		For(&hostfleetv1alpha1.HostUsage{}).
		Watches(&hostfleetv1alpha1.UsageLedger{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false }, UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		Watches(&metal3api.HostClaim{}, claims).
		WithOptions(o.Controller(2)).
		Complete(resume.Reconciler(r))
}

// enqueue asks for the ledger of the cluster a claim is placed on.
func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object) {
	if cl := o.GetLabels()[hostfleetv1alpha1.LabelCluster]; cl != "" {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: cl, Name: cl}})
	}
}

// toApply is obj as an apply configuration's unstructured content.
func toApply(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	delete(u.Object, "spec")
	return u, nil
}
