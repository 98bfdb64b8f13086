package scheduler

import (
	"context"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// SetupWithManager wires the controller and its indexes.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, o setup.Options) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("hostfleet-scheduler")
	}
	claims, err := storeOf(ctx, mgr, &metal3api.HostClaim{})
	if err != nil {
		return err
	}
	if err := claims.AddIndexers(claimIndexers()); err != nil {
		return fmt.Errorf("index claims: %w", err)
	}
	inventories, err := storeOf(ctx, mgr, &hostfleetv1alpha1.HostInventory{})
	if err != nil {
		return err
	}
	managedClusters, err := storeOf(ctx, mgr, &clusterv1.ManagedCluster{})
	if err != nil {
		return err
	}
	if err := managedClusters.AddIndexers(clusterIndexers()); err != nil {
		return fmt.Errorf("index ManagedClusters: %w", err)
	}
	r.claims, r.inventories, r.clusters = claims.GetIndexer(), inventories.GetIndexer(), managedClusters.GetIndexer()
	r.order = newOrder()
	if _, err := inventories.AddEventHandler(r.order.handler()); err != nil {
		return fmt.Errorf("order clusters by their inventories: %w", err)
	}
	unplaced := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return r.requests(ctx, unplacedIndex)
	})
	// A Tenant changed (its classes' caps among them) also looks again at
	// the pins a class holds back.
	tenants := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return append(r.requests(ctx, unplacedIndex), r.requests(ctx, classHeldIndex)...)
	})
	// A claim gone may free a place in a host class: the claims a class
	// holds back are looked at again.
	classHeld := handler.Funcs{DeleteFunc: func(ctx context.Context, _ event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range r.requests(ctx, classHeldIndex) {
			q.Add(req)
		}
	}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("scheduler").
		For(&metal3api.HostClaim{}).
		Watches(&metal3api.HostClaim{}, classHeld).
		Watches(&hostfleetv1alpha1.HostInventory{}, unplaced).
		Watches(&hostfleetv1alpha1.Tenant{}, tenants).
		Watches(&clusterv1beta1.PlacementDecision{}, unplaced).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.onAvailability), builder.WithPredicates(availability)).
		WithOptions(o.Controller(1)).
		Complete(resume.Reconciler(r))
}

// claimIndexers index the claims by where they are placed, whether they
// are placed, and whether a host class holds them back.
func claimIndexers() toolscache.Indexers {
	return toolscache.Indexers{
		pendingIndex: func(o any) ([]string, error) {
			// A pin not admitted yet takes no host there.
			c, ok := o.(*metal3api.HostClaim)
			if !ok || c.DeletionTimestamp != nil || c.Labels[hostfleetv1alpha1.LabelCluster] == "" || !conditions.Admitted(c) {
				return nil, nil
			}
			return []string{c.Labels[hostfleetv1alpha1.LabelCluster]}, nil
		},
		onClusterIndex: func(o any) ([]string, error) {
			c, ok := o.(*metal3api.HostClaim)
			if !ok || c.Labels[hostfleetv1alpha1.LabelCluster] == "" {
				return nil, nil
			}
			return []string{c.Labels[hostfleetv1alpha1.LabelCluster]}, nil
		},
		unplacedIndex: func(o any) ([]string, error) {
			c, ok := o.(*metal3api.HostClaim)
			if !ok || c.DeletionTimestamp != nil || c.Labels[hostfleetv1alpha1.LabelCluster] != "" {
				return nil, nil
			}
			return []string{"true"}, nil
		},
		classHeldIndex: func(o any) ([]string, error) {
			// Unplaced claims, and pins not admitted.
			c, ok := o.(*metal3api.HostClaim)
			if !ok || c.DeletionTimestamp != nil || c.Labels[hostfleetv1alpha1.LabelCluster] != "" && conditions.Admitted(c) {
				return nil, nil
			}
			if cond := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled); cond == nil ||
				cond.Reason != hostfleetv1alpha1.ReasonClassQuotaExceeded {
				return nil, nil
			}
			return []string{"true"}, nil
		},
	}
}

// availability passes a ManagedCluster whose Available condition changed
// status, or one first seen not Available: its other updates, and the
// hub's start over thousands of Available clusters, change no claim.
var availability = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return down(e.Object) },
	DeleteFunc: func(event.DeleteEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool { return available(e.ObjectOld) != available(e.ObjectNew) },
}

func available(o client.Object) bool {
	mc, ok := o.(*clusterv1.ManagedCluster)
	return ok && meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
}

// down: the ManagedCluster says it is not Available (False or Unknown).
func down(o client.Object) bool {
	mc, ok := o.(*clusterv1.ManagedCluster)
	if !ok {
		return false
	}
	c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	return c != nil && c.Status != metav1.ConditionTrue
}

// requests are the claims an index of r.claims lists under "true".
func (r *Reconciler) requests(ctx context.Context, index string) []reconcile.Request {
	objs, err := r.claims.ByIndex(index, "true")
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list the claims to look at again", "index", index)
		return nil
	}
	out := make([]reconcile.Request, 0, len(objs))
	for _, o := range objs {
		if c, ok := o.(*metal3api.HostClaim); ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return out
}

// storeOf is the manager cache's informer of obj's kind, as the client-go
// informer it is.
func storeOf(ctx context.Context, mgr ctrl.Manager, obj client.Object) (toolscache.SharedIndexInformer, error) {
	inf, err := mgr.GetCache().GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("informer for %T: %w", obj, err)
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("informer for %T is a %T, not a SharedIndexInformer", obj, inf)
	}
	return sii, nil
}
