package clustertenancy

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
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

// Reconciler keeps each ManagedCluster's ClusterTenancy. Requests are
// ManagedCluster names.
type Reconciler struct {
	Client client.Client
}

// SetupWithManager wires the controller: a ManagedCluster created, its
// namespace created, its ClusterTenancy changed by anyone else, and the
// Tenant changes that touch it.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, o setup.Options) error {
	tenants := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, affected(nil, asTenant(e.Object)))
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, affected(asTenant(e.ObjectOld), asTenant(e.ObjectNew)))
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, affected(asTenant(e.Object), nil))
		},
	}
	// A cluster's namespace is named after it.
	byName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
	})
	byNamespace := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetNamespace()}}}
	})
	onlyCreate := predicate.Funcs{
		UpdateFunc: func(event.UpdateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenancy").
		// Its heartbeats and conditions change nothing here.
		For(&clusterv1.ManagedCluster{}, builder.WithPredicates(onlyCreate)).
		Watches(&corev1.Namespace{}, byName, builder.WithPredicates(onlyCreate)).
		// A tenant namespace's labels are in its clusters' ClusterTenancies.
		Watches(&corev1.Namespace{}, handler.Funcs{UpdateFunc: r.onLabels, CreateFunc: r.onCreate}).
		Watches(&hostfleetv1alpha1.ClusterTenancy{}, byNamespace).
		Watches(&hostfleetv1alpha1.Tenant{}, tenants).
		// Every cluster carries every baseline; its status changes nothing.
		Watches(&hostfleetv1alpha1.FirmwareBaseline{}, handler.EnqueueRequestsFromMapFunc(r.allClusters),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(resume.Reconciler(r))
}

// allClusters are every ManagedCluster, as requests.
func (r *Reconciler) allClusters(ctx context.Context, _ client.Object) []reconcile.Request {
	var mcs clusterv1.ManagedClusterList
	if err := r.Client.List(ctx, &mcs, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list the managed clusters to carry a firmware baseline to")
		return nil
	}
	out := make([]reconcile.Request, 0, len(mcs.Items))
	for _, mc := range mcs.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: mc.Name}})
	}
	return out
}

func asTenant(o client.Object) *hostfleetv1alpha1.Tenant {
	t, _ := o.(*hostfleetv1alpha1.Tenant)
	return t
}

func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], clusters []string) {
	for _, c := range clusters {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: c}})
	}
}

// Reconcile writes the cluster's ClusterTenancy if it differs from Desired.
// It is owned by the ManagedCluster, and goes with it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, mc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !mc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var tenants hostfleetv1alpha1.TenantList
	if err := r.Client.List(ctx, &tenants, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("list tenants: %w", err)
	}
	nsLabels, err := r.namespaceLabels(ctx, mc.Name, tenants.Items)
	if err != nil {
		return ctrl.Result{}, err
	}
	var baselines hostfleetv1alpha1.FirmwareBaselineList
	if err := r.Client.List(ctx, &baselines, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("list firmware baselines: %w", err)
	}
	want := Desired(mc.Name, tenants.Items, nsLabels, baselines.Items)
	owner := []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "ManagedCluster", Name: mc.Name, UID: mc.UID}}
	cur := &hostfleetv1alpha1.ClusterTenancy{}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: mc.Name, Name: hostfleetv1alpha1.TenancyName}, cur)
	switch {
	case apierrors.IsNotFound(err):
		ct := &hostfleetv1alpha1.ClusterTenancy{ObjectMeta: metav1.ObjectMeta{Namespace: mc.Name, Name: hostfleetv1alpha1.TenancyName,
			OwnerReferences: owner}, Spec: want}
		err := r.Client.Create(ctx, ct)
		if apierrors.IsNotFound(err) {
			// No namespace yet: its creation calls again.
			ctrl.LoggerFrom(ctx).V(1).Info("the cluster's namespace does not exist yet: ClusterTenancy written when it does", "cluster", mc.Name)
			return ctrl.Result{}, nil
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("create the ClusterTenancy of cluster %s: %w", mc.Name, err)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("cluster tenancy written", "cluster", mc.Name, "tenants", len(want.Tenants), "workloadTenants", len(want.WorkloadTenants))
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get the ClusterTenancy of cluster %s: %w", mc.Name, err)
	}
	if equality.Semantic.DeepEqual(cur.Spec, want) && equality.Semantic.DeepEqual(cur.OwnerReferences, owner) {
		return ctrl.Result{}, nil
	}
	cur = cur.DeepCopy()
	cur.Spec, cur.OwnerReferences = want, owner
	if err := r.Client.Update(ctx, cur); err != nil {
		return ctrl.Result{}, fmt.Errorf("update the ClusterTenancy of cluster %s: %w", mc.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("cluster tenancy written", "cluster", mc.Name, "tenants", len(want.Tenants), "workloadTenants", len(want.WorkloadTenants))
	return ctrl.Result{}, nil
}

// namespaceLabels are the labels of the namespaces of the tenants cluster
// serves, from the cache; a namespace not there yet is left out.
func (r *Reconciler) namespaceLabels(ctx context.Context, cluster string, tenants []hostfleetv1alpha1.Tenant) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for i := range tenants {
		t := &tenants[i]
		if !slices.Contains(t.Status.Clusters, cluster) && !slices.Contains(t.Status.WorkloadClusters, cluster) {
			continue
		}
		for _, name := range t.Status.Namespaces {
			ns := &corev1.Namespace{}
			if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns); client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("get namespace %s of tenant %s: %w", name, t.Name, err)
			}
			out[name] = ns.Labels
		}
	}
	return out, nil
}

// onCreate maps a tenant namespace the cache sees created to its Tenant's
// clusters: the Tenant may have listed it before this cache had it.
func (r *Reconciler) onCreate(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	r.enqueueTenants(ctx, q, e.Object.GetName(), e.Object.GetLabels()[hostfleetv1alpha1.LabelTenant])
}

// onLabels maps a namespace whose labels changed to the clusters of the
// Tenants it belongs to, before and after: their ClusterTenancies carry
// its labels.
func (r *Reconciler) onLabels(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
		r.enqueueTenants(ctx, q, e.ObjectNew.GetName(),
			e.ObjectOld.GetLabels()[hostfleetv1alpha1.LabelTenant], e.ObjectNew.GetLabels()[hostfleetv1alpha1.LabelTenant])
	}
}

// enqueueTenants enqueues the clusters of the named Tenants, which
// namespace ns belongs or belonged to.
func (r *Reconciler) enqueueTenants(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], ns string, tenants ...string) {
	for _, name := range union(tenants) {
		if name == "" {
			continue
		}
		t := &hostfleetv1alpha1.Tenant{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
			if !apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Error(err, "find the clusters of a tenant namespace", "namespace", ns)
			}
			continue
		}
		enqueue(q, union(t.Status.Clusters, t.Status.WorkloadClusters))
	}
}
