package tenant

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/permissions"
)

// clusterSetLabel is OCM's exclusive cluster set label on ManagedClusters.
const clusterSetLabel = "cluster.open-cluster-management.io/clusterset"

// Reconciler registers Tenants.
type Reconciler struct {
	Client client.Client
	Scheme *runtime.Scheme
	// Recorder records an Event on a Tenant whenever its Ready condition
	// changes; SetupWithManager makes one if nil.
	Recorder events.EventRecorder
	// Probe dry-runs, as AdmissionProbeUser, a claim the tenant's policy
	// must refuse; SetupWithManager makes it by impersonation if nil.
	Probe client.Client

	// applied skips applying what is already as the Tenant wants it.
	applied applied
}

// Reconcile makes a Tenant's objects and reports on them.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t := &hostfleetv1alpha1.Tenant{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	owned, conflicts, err := r.namespaces(ctx, t)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("namespaces of tenant %s: %w", t.Name, err)
	}
	claims, err := r.claims(ctx, t, owned)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("claims of tenant %s: %w", t.Name, err)
	}
	if !t.DeletionTimestamp.IsZero() {
		return r.delete(ctx, t, owned, claims.names)
	}
	if !controllerutil.ContainsFinalizer(t, hostfleetv1alpha1.TenantFinalizer) {
		orig := t.DeepCopy()
		controllerutil.AddFinalizer(t, hostfleetv1alpha1.TenantFinalizer)
		if err := r.Client.Patch(ctx, t, client.MergeFrom(orig)); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to tenant %s: %w", t.Name, err)
		}
	}

	clusters, unavailable, setFound, err := r.clusters(ctx, t.Spec.ClusterSet)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("clusters of tenant %s: %w", t.Name, err)
	}
	workload, ignored, err := r.workloadClusters(ctx, t.Name)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("workload clusters of tenant %s: %w", t.Name, err)
	}
	switch wait, err := r.ensure(ctx, t, Desired(t, clusters, workload), conflicts); {
	case err != nil:
		return ctrl.Result{}, err
	case wait:
		return ctrl.Result{RequeueAfter: policyWait}, nil
	}
	// Every requested namespace without a conflict now exists and is ours.
	owned = owned[:0]
	for _, ns := range t.DefaultNamespaces() {
		if conflicts[ns] == "" {
			owned = append(owned, ns)
		}
	}

	ctrl.LoggerFrom(ctx).V(1).Info("tenant registered", "namespaces", owned, "clusterSet", t.Spec.ClusterSet, "clusters", clusters,
		"workloadClusters", workload, "conflicts", len(conflicts), "claims", len(claims.names))
	missing, err := r.missingRoles(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	cond := ReadyCondition(Registration{ClusterSet: t.Spec.ClusterSet, SetFound: setFound, Clusters: clusters,
		Namespaces: owned, Conflicts: conflicts, MissingRoles: missing, InvalidClass: claims.invalidClass})
	return ctrl.Result{}, r.setStatus(ctx, t, owned, clusterStatus{clusters, unavailable, workload}, claims, cond, WorkloadCondition(workload, ignored))
}

// policyWait is how long a tenant waits for its admission policy to take
// effect before its RBAC is granted.
const policyWait = 500 * time.Millisecond

// ensure applies the tenant's desired objects in namespaces without a
// conflict: the rights (Grant) only once the tenant's admission policy is
// in force in each namespace (wait: not yet), and no ResourceQuota when
// the tenant sets no maxClaims.
func (r *Reconciler) ensure(ctx context.Context, t *hostfleetv1alpha1.Tenant, desired []client.Object, conflicts map[string]string) (wait bool, _ error) {
	var grants []client.Object
	for _, obj := range desired {
		if conflicts[namespaceOf(obj)] != "" {
			continue
		}
		if Grant(obj) {
			grants = append(grants, obj)
			continue
		}
		if err := r.apply(ctx, t, obj); err != nil {
			return false, err
		}
	}
	// Rights only once the policy guards them: a binding takes a moment to
	// reach the API server's admission, and the first request it must
	// refuse could come the instant a RoleBinding allows it.
	for _, ns := range t.DefaultNamespaces() {
		if conflicts[ns] != "" {
			continue
		}
		inForce, err := r.policyInForce(ctx, t, ns)
		if err != nil {
			return false, err
		}
		if !inForce {
			ctrl.LoggerFrom(ctx).V(1).Info("waiting for the tenant's admission policy to take effect before granting its RBAC", "namespace", ns)
			return true, nil
		}
	}
	for _, obj := range grants {
		if err := r.apply(ctx, t, obj); err != nil {
			return false, err
		}
	}
	if t.Spec.MaxClaims == nil {
		for _, ns := range t.DefaultNamespaces() {
			q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hostfleetv1alpha1.TenantQuota}}
			if err := r.Client.Delete(ctx, q); client.IgnoreNotFound(err) != nil {
				return false, fmt.Errorf("delete ResourceQuota %s/%s of tenant %s: %w", ns, q.Name, t.Name, err)
			}
		}
	}
	return false, nil
}

// namespaces are the tenant's namespaces that exist and are labelled for it,
// and the requested ones that belong to someone else (with who).
func (r *Reconciler) namespaces(ctx context.Context, t *hostfleetv1alpha1.Tenant) ([]string, map[string]string, error) {
	var owned []string
	conflicts := map[string]string{}
	for _, name := range t.DefaultNamespaces() {
		ns := &corev1.Namespace{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, nil, fmt.Errorf("get namespace %s: %w", name, err)
		case ns.Labels[hostfleetv1alpha1.LabelTenant] == t.Name:
			owned = append(owned, name)
		case ns.Labels[hostfleetv1alpha1.LabelTenant] != "":
			conflicts[name] = "belongs to tenant " + ns.Labels[hostfleetv1alpha1.LabelTenant]
		default:
			conflicts[name] = "exists and is not a tenant namespace"
		}
	}
	return owned, conflicts, nil
}

// clusters are the managed clusters in the set, those of them whose
// ManagedCluster is not Available, and whether the set exists.
func (r *Reconciler) clusters(ctx context.Context, set string) (all, unavailable []string, found bool, _ error) {
	mcs := &clusterv1beta2.ManagedClusterSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: set}, mcs); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, false, nil
		}
		return nil, nil, false, fmt.Errorf("get ManagedClusterSet %s: %w", set, err)
	}
	sel := labels.SelectorFromSet(labels.Set{clusterSetLabel: set})
	if s := mcs.Spec.ClusterSelector; s.SelectorType == clusterv1beta2.LabelSelector && s.LabelSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(s.LabelSelector); err != nil {
			return nil, nil, true, fmt.Errorf("ManagedClusterSet %s selector: %w", set, err)
		}
	}
	var list clusterv1.ManagedClusterList
	if err := r.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, nil, true, fmt.Errorf("list the ManagedClusters of set %s: %w", set, err)
	}
	for _, c := range list.Items {
		all = append(all, c.Name)
		if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) {
			unavailable = append(unavailable, c.Name)
		}
	}
	sort.Strings(all)
	sort.Strings(unavailable)
	return all, unavailable, true, nil
}

// workloadClusters are the managed clusters labelled hostfleet.io/tenant
// with the tenant's name that the hub accepted: its workload clusters; and
// the labelled ones it ignores, not accepted. Both sorted.
func (r *Reconciler) workloadClusters(ctx context.Context, tenant string) (accepted, ignored []string, _ error) {
	var list clusterv1.ManagedClusterList
	if err := r.Client.List(ctx, &list, client.MatchingLabels{hostfleetv1alpha1.LabelTenant: tenant}); err != nil {
		return nil, nil, fmt.Errorf("list the ManagedClusters labelled %s=%s: %w", hostfleetv1alpha1.LabelTenant, tenant, err)
	}
	for i := range list.Items {
		if Accepted(&list.Items[i]) {
			accepted = append(accepted, list.Items[i].Name)
		} else {
			ignored = append(ignored, list.Items[i].Name)
		}
	}
	sort.Strings(accepted)
	sort.Strings(ignored)
	return accepted, ignored, nil
}

// Accepted says whether the hub accepted a cluster (spec.hubAcceptsClient,
// which only a hub administrator may set) and the cluster joined. A cluster
// that is not is never a tenant's workload cluster: a label on it, however
// it got there, grants nothing.
func Accepted(mc *clusterv1.ManagedCluster) bool {
	return mc.Spec.HubAcceptsClient && meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined)
}

// missingRoles are the granted ClusterRoles (the operator's) that do not
// exist: a binding to one grants nothing.
func (r *Reconciler) missingRoles(ctx context.Context) ([]string, error) {
	var missing []string
	for _, name := range permissions.GrantedClusterRoleNames() {
		err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRole{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, name)
		case err != nil:
			return nil, fmt.Errorf("get ClusterRole %s: %w", name, err)
		}
	}
	return missing, nil
}

// delete keeps the Tenant while claims remain; then deletes its namespaces
// and lets it go.
func (r *Reconciler) delete(ctx context.Context, t *hostfleetv1alpha1.Tenant, owned, claims []string) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(t, hostfleetv1alpha1.TenantFinalizer) {
		return ctrl.Result{}, nil
	}
	if len(claims) > 0 {
		shown := claims
		if len(shown) > 10 {
			shown = append(append([]string(nil), shown[:10]...), fmt.Sprintf("and %d more", len(claims)-10))
		}
		cond := metav1.Condition{Type: hostfleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonDeletionBlocked,
			Message: fmt.Sprintf("the tenant is kept while it has claims: %s; delete them first", strings.Join(shown, ", "))}
		return ctrl.Result{RequeueAfter: 30 * time.Second}, r.setStatus(ctx, t, owned,
			clusterStatus{t.Status.Clusters, t.Status.UnavailableClusters, t.Status.WorkloadClusters},
			tally{names: claims, ready: t.Status.ReadyClaims, classes: t.Status.Classes}, cond)
	}
	for _, name := range owned {
		if err := r.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("delete namespace %s of tenant %s: %w", name, t.Name, err)
		}
	}
	for _, name := range Bindings(t.Name) {
		binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := r.Client.Delete(ctx, binding); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("delete ValidatingAdmissionPolicyBinding %s of tenant %s: %w", binding.Name, t.Name, err)
		}
	}
	orig := t.DeepCopy()
	controllerutil.RemoveFinalizer(t, hostfleetv1alpha1.TenantFinalizer)
	if err := r.Client.Patch(ctx, t, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("remove finalizer from tenant %s: %w", t.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("tenant deregistered", "namespaces", owned)
	return ctrl.Result{}, nil
}

// clusterStatus is what a Tenant's status says of clusters: those of its
// set, those of them not Available, and its workload clusters.
type clusterStatus struct {
	clusters, unavailable, workload []string
}

// setStatus writes the Tenant's status with the conditions given (Ready
// first), and records an Event for each whose status or reason changed.
func (r *Reconciler) setStatus(ctx context.Context, t *hostfleetv1alpha1.Tenant, owned []string, cs clusterStatus, claims tally, conds ...metav1.Condition) error {
	var changed []metav1.Condition
	orig := t.DeepCopy()
	for _, cond := range conds {
		if prev := meta.FindStatusCondition(t.Status.Conditions, cond.Type); prev == nil || prev.Status != cond.Status || prev.Reason != cond.Reason {
			changed = append(changed, cond)
		}
		cond.ObservedGeneration = t.Generation
		conditions.Set(&t.Status.Conditions, cond)
	}
	t.Status.ObservedGeneration = t.Generation
	t.Status.Namespaces = owned
	t.Status.Clusters = cs.clusters
	t.Status.UnavailableClusters = cs.unavailable
	t.Status.WorkloadClusters = cs.workload
	t.Status.Claims = int32(len(claims.names))
	t.Status.ReadyClaims = claims.ready
	t.Status.Classes = claims.classes
	if err := r.Client.Status().Patch(ctx, t, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("write the status of tenant %s: %w", t.Name, err)
	}
	for _, cond := range changed {
		kind, action := corev1.EventTypeWarning, "Register"
		if cond.Status == metav1.ConditionTrue {
			kind = corev1.EventTypeNormal
		}
		if cond.Type == hostfleetv1alpha1.ConditionWorkloadClusters {
			action = "SyncNodeLabels"
		}
		r.Recorder.Eventf(t, nil, kind, cond.Reason, action, "%s", cond.Message)
	}
	return nil
}

// apply server-side applies one desired object, owned by the Tenant.
func (r *Reconciler) apply(ctx context.Context, t *hostfleetv1alpha1.Tenant, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, r.Scheme)
	if err != nil {
		return fmt.Errorf("kind of %T for tenant %s: %w", obj, t.Name, err)
	}
	if err := controllerutil.SetOwnerReference(t, obj, r.Scheme); err != nil {
		return fmt.Errorf("own %s %s/%s by tenant %s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), t.Name, err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("convert %s %s/%s for tenant %s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), t.Name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	current, err := r.applied.current(ctx, r.Client, u)
	if err != nil {
		return fmt.Errorf("read %s %s/%s of tenant %s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), t.Name, err)
	}
	if current {
		return nil
	}
	want := u.DeepCopy()
	err = r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(hostfleetv1alpha1.FieldManagerHub), client.ForceOwnership)
	if _, binding := obj.(*rbacv1.RoleBinding); binding && apierrors.IsInvalid(err) {
		// A roleRef cannot change: an earlier hub bound a Role of the same
		// name, with the rights in it. Both go; the binding comes back.
		if err := r.retire(ctx, obj.GetNamespace(), obj.GetName()); err != nil {
			return err
		}
		err = r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(hostfleetv1alpha1.FieldManagerHub), client.ForceOwnership)
	}
	if err != nil {
		return fmt.Errorf("apply %s %s/%s for tenant %s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), t.Name, err)
	}
	return r.applied.record(want, u.GetResourceVersion())
}

// retire deletes a RoleBinding and the Role of the same name.
func (r *Reconciler) retire(ctx context.Context, ns, name string) error {
	meta := metav1.ObjectMeta{Namespace: ns, Name: name}
	for _, obj := range []client.Object{&rbacv1.RoleBinding{ObjectMeta: meta}, &rbacv1.Role{ObjectMeta: meta}} {
		if err := r.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete the earlier RoleBinding and Role %s/%s: %w", ns, name, err)
		}
	}
	return nil
}

func namespaceOf(obj client.Object) string {
	if _, ok := obj.(*admissionv1.ValidatingAdmissionPolicyBinding); ok {
		return "" // cluster-scoped, never conflicts
	}
	if _, ok := obj.(*corev1.Namespace); ok {
		return obj.GetName()
	}
	return obj.GetNamespace()
}

// policyInForce says whether the tenant's claims policy is in force in ns:
// a dry-run claim with a forged hostfleet.io/bound-host label, made as
// AdmissionProbeUser, is refused by it. Once the tenant's RoleBindings exist
// in ns they were granted after such a check, and it is not repeated.
func (r *Reconciler) policyInForce(ctx context.Context, t *hostfleetv1alpha1.Tenant, ns string) (bool, error) {
	granted := &rbacv1.RoleBinding{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: hostfleetv1alpha1.TenantAdminRole}, granted)
	if err == nil {
		return true, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("get RoleBinding %s/%s of tenant %s: %w", ns, hostfleetv1alpha1.TenantAdminRole, t.Name, err)
	}
	probe := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hostfleetv1alpha1.AdmissionProbeRole,
		Labels: map[string]string{hostfleetv1alpha1.LabelBoundHost: "admission-probe"}}}
	err = r.Probe.Create(ctx, probe, client.DryRunAll)
	switch {
	case err == nil:
		return false, nil // admitted: not in force yet
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), ClaimsBinding(t.Name)):
		return true, nil
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
		return false, nil // the probe's own RoleBinding or the namespace not visible yet
	default:
		return false, fmt.Errorf("probe the admission policy of tenant %s in %s: %w", t.Name, ns, err)
	}
}
