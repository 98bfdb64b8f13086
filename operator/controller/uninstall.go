package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	operatorv1alpha1 "github.com/hostfleet/hostfleet/operator/api/v1alpha1"
)

// uninstall removes the hub, in the order that leaves nothing stranded:
// refused while claims exist (their hosts are bound); then the add-on (the
// hub's add-on manager takes the agents away), the tenants (the hub
// finalizes them), and last the hub itself, its policies, RBAC, namespace
// and CRDs. metal3's CRDs stay: a baremetal-operator on the same cluster
// may use them.
// Reconcile writes the status it sets.
func (r *Reconciler) uninstall(ctx context.Context, h *operatorv1alpha1.HostfleetHub, hub client.Client) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(h, operatorv1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	wait := func(reason, msg string) (ctrl.Result, error) {
		setCondition(h, operatorv1alpha1.ConditionAvailable, metav1.ConditionFalse, operatorv1alpha1.ReasonUninstalling, msg)
		if reason == operatorv1alpha1.ReasonClaimsExist {
			r.degraded(h, reason, msg)
		}
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}

	claims := &metal3api.HostClaimList{}
	if err := hub.List(ctx, claims); err != nil && !meta.IsNoMatchError(err) {
		return ctrl.Result{}, fmt.Errorf("list HostClaims on the hub: %w", err)
	}
	if n := len(claims.Items); n > 0 {
		var some []string
		for i := range claims.Items[:min(n, 5)] {
			some = append(some, claims.Items[i].Namespace+"/"+claims.Items[i].Name)
		}
		return wait(operatorv1alpha1.ReasonClaimsExist, fmt.Sprintf(
			"uninstall refused: %d HostClaims remain on the hub (%s): delete them, and wait for their hosts to be released, before the HostfleetHub can go",
			n, strings.Join(some, ", ")))
	}

	// The add-on: the hub's add-on manager, still running, removes each
	// cluster's agent as its ManagedClusterAddOn goes.
	if err := deleteIgnoringMissing(ctx, hub, &addonv1beta1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.AddonName}}); err != nil {
		return ctrl.Result{}, err
	}
	mcas := &addonv1beta1.ManagedClusterAddOnList{}
	if err := hub.List(ctx, mcas); err != nil && !meta.IsNoMatchError(err) {
		return ctrl.Result{}, fmt.Errorf("list ManagedClusterAddOns on the hub: %w", err)
	}
	var left []string
	for _, m := range mcas.Items {
		if m.Name == hostfleetv1alpha1.AddonName {
			left = append(left, m.Namespace)
			if m.DeletionTimestamp.IsZero() {
				if err := deleteIgnoringMissing(ctx, hub, &m); err != nil {
					return ctrl.Result{}, err
				}
			}
		}
	}
	if len(left) > 0 {
		return wait(operatorv1alpha1.ReasonUninstalling, fmt.Sprintf("uninstalling: waiting for the agents of %d clusters to be removed (%s)", len(left), strings.Join(left, ", ")))
	}

	tenants := &hostfleetv1alpha1.TenantList{}
	if err := hub.List(ctx, tenants); err != nil && !meta.IsNoMatchError(err) {
		return ctrl.Result{}, fmt.Errorf("list Tenants on the hub: %w", err)
	}
	if len(tenants.Items) > 0 {
		var names []string
		for i := range tenants.Items {
			names = append(names, tenants.Items[i].Name)
			if tenants.Items[i].DeletionTimestamp.IsZero() {
				if err := deleteIgnoringMissing(ctx, hub, &tenants.Items[i]); err != nil {
					return ctrl.Result{}, err
				}
			}
		}
		return wait(operatorv1alpha1.ReasonUninstalling, fmt.Sprintf("uninstalling: waiting for the hub to remove %d tenants (%s)", len(names), strings.Join(names, ", ")))
	}

	// Nothing left for the hub to do: the hub itself goes.
	if err := r.removeHub(ctx, h, hub); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(h.DeepCopy())
	controllerutil.RemoveFinalizer(h, operatorv1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, h, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("remove finalizer of HostfleetHub %s: %w", h.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("hub uninstalled", "hostfleethub", h.Name, "mode", h.Spec.DeployOption.Mode)
	return ctrl.Result{}, nil
}

// removeHub deletes what install applied (the granted ClusterRoles among
// it), what the hub made for itself (its policies, the agents' bindings) and
// the hub's CRDs.
func (r *Reconciler) removeHub(ctx context.Context, h *operatorv1alpha1.HostfleetHub, hub client.Client) error {
	var errs []error
	if h.Spec.DeployOption.Mode == operatorv1alpha1.ModeHosted {
		for _, obj := range Workload(h, r.Release, HubKubeconfigSecret) {
			errs = append(errs, deleteIgnoringMissing(ctx, r.Client, obj))
		}
		errs = append(errs, deleteIgnoringMissing(ctx, r.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace(h), Name: HubKubeconfigSecret}}))
	}
	policies, err := Policies(h)
	errs = append(errs, err)
	for _, p := range policies {
		errs = append(errs, deleteIgnoringMissing(ctx, hub, p))
	}
	errs = append(errs,
		hub.DeleteAllOf(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{}, client.HasLabels{hostfleetv1alpha1.LabelTenant}),
		hub.DeleteAllOf(ctx, &rbacv1.ClusterRoleBinding{}, client.HasLabels{hostfleetv1alpha1.LabelCluster}),
		// Earlier releases' cluster-wide role for agents, left on upgrade to
		// agents still at that release.
		deleteIgnoringMissing(ctx, hub, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.RetiredAgentHubRole}}),
		deleteIgnoringMissing(ctx, hub, &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.HubWebhook}}),
	)
	objs, err := HubObjects(h, r.Release)
	errs = append(errs, err)
	for _, obj := range objs {
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok && crd.Spec.Group != hostfleetv1alpha1.GroupVersion.Group {
			continue
		}
		errs = append(errs, deleteIgnoringMissing(ctx, hub, obj))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove the hub: %w", err)
	}
	return nil
}

func deleteIgnoringMissing(ctx context.Context, c client.Client, obj client.Object) error {
	err := c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err == nil || apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	return fmt.Errorf("delete %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
}
