package tenant

import (
	"context"
	"fmt"
	"slices"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// SetupWithManager wires the controller.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, o setup.Options) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("hostfleet-tenant")
	}
	if r.Probe == nil {
		cfg := rest.CopyConfig(mgr.GetConfig())
		cfg.Impersonate = rest.ImpersonationConfig{UserName: hostfleetv1alpha1.AdmissionProbeUser}
		probe, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
		if err != nil {
			return fmt.Errorf("admission probe client: %w", err)
		}
		r.Probe = probe
	}
	toAll := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return setup.ListRequests(ctx, r.Client, &hostfleetv1alpha1.TenantList{}, "the Tenants")
	})
	// Claim events only change the Tenant's claim counts: they are
	// coalesced, one status write per ClaimCountDelay at most, not one per
	// claim event. A Tenant lists every cluster of its set: at 1 000
	// clusters each write is 27 KB for the API server to store and send.
	byNamespace := handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.countLater(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.countLater(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.countLater(ctx, e.Object, q)
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenant").
		// Not its own status writes: each would be followed by a reconcile
		// that writes the claim counts again, undoing countDelay.
		For(&hostfleetv1alpha1.Tenant{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}, finalizersChanged))).
		Owns(&corev1.Namespace{}).
		Watches(&clusterv1.ManagedCluster{}, toAll).
		Watches(&clusterv1beta2.ManagedClusterSet{}, toAll).
		// The ClusterRoles it binds: a Tenant says when one is missing.
		Watches(&rbacv1.ClusterRole{}, toAll, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return slices.Contains(permissions.GrantedClusterRoleNames(), o.GetName())
		}))).
		Watches(&metal3api.HostClaim{}, byNamespace).
		Complete(resume.Reconciler(r))
}

// finalizersChanged passes a Tenant whose finalizers changed (its own is
// put back if removed).
var finalizersChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return !slices.Equal(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
}}

// ClaimCountDelay bounds how often claim events rewrite a Tenant's claim
// counts. Agents do not watch Tenants (they read their cluster's
// ClusterTenancy, which the counts never touch): a write goes to the hub's
// own watchers only.
const ClaimCountDelay = 5 * time.Second

// countLater enqueues the Tenant owning a claim's namespace after
// ClaimCountDelay; the queue keeps one entry per Tenant meanwhile, at the
// earliest time asked.
func (r *Reconciler) countLater(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: o.GetNamespace()}, ns); err != nil {
		if !apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).Error(err, "find the Tenant of a claim's namespace", "namespace", o.GetNamespace())
		}
		return
	}
	name := ns.Labels[hostfleetv1alpha1.LabelTenant]
	if name == "" {
		return
	}
	q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}, ClaimCountDelay)
}
