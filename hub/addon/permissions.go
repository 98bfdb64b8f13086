package addon

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Permissions binds the identity the agent registered with, as Subjects
// accepts it from the ManagedClusterAddOn's status, to the ClusterRole
// AgentClusterRole in the cluster's namespace: nothing cluster-wide (the
// API server's RBAC walks every ClusterRoleBinding for each request that
// no earlier one allows, so one per cluster would make every request on
// the hub cost more as the fleet grows; the bindings earlier hubs made are
// left to agents still at that release, and go at uninstall). Until the identity is known it
// reports SubjectNotReady and is called again when the status changes; an
// identity Subjects refuses is reported on the add-on (RegistrationApplied
// False) and bound to nothing.
func Permissions(kube kubernetes.Interface) agent.PermissionConfigFunc {
	return func(ctx context.Context, cluster *clusterv1.ManagedCluster, mca *addonv1beta1.ManagedClusterAddOn) error {
		subjects, err := Subjects(cluster.Name, mca)
		if err != nil {
			ctrl.LoggerFrom(ctx).WithName("addon").Info("agent identity refused", "cluster", cluster.Name, "why", err.Error())
			return fmt.Errorf("refused: %w", err)
		}
		if len(subjects) == 0 {
			return &agent.SubjectNotReadyError{}
		}
		labels := map[string]string{hostfleetv1alpha1.LabelCluster: cluster.Name}
		// The ClusterRole is the operator's (permissions.GrantedClusterRoles):
		// the hub only binds it. Owned by the ManagedClusterAddOn: the
		// binding goes when the add-on is disabled.
		owner := []metav1.OwnerReference{{APIVersion: addonv1beta1.GroupVersion.String(), Kind: "ManagedClusterAddOn",
			Name: mca.Name, UID: mca.UID, BlockOwnerDeletion: ptr.To(true)}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.AgentClusterRole, Namespace: cluster.Name, Labels: labels, OwnerReferences: owner},
			Subjects: subjects, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hostfleetv1alpha1.AgentClusterRole}}
		if err := retireRole(ctx, kube, binding); err != nil {
			return err
		}
		if _, _, err := utils.ApplyRoleBinding(ctx, kube.RbacV1(), binding); err != nil {
			return fmt.Errorf("inventory role binding in %s: %w", cluster.Name, err)
		}
		ctrl.LoggerFrom(ctx).WithName("addon").V(1).Info("agent identity bound on the hub", "cluster", cluster.Name, "subjects", subjects)
		return nil
	}
}

// retireRole removes what earlier hubs made in place of binding: a
// RoleBinding of the same name to a Role of the same name (a roleRef
// cannot change), and that Role.
func retireRole(ctx context.Context, kube kubernetes.Interface, binding *rbacv1.RoleBinding) error {
	existing, err := kube.RbacV1().RoleBindings(binding.Namespace).Get(ctx, binding.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && existing.RoleRef == binding.RoleRef) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get RoleBinding %s: %w", klog.KObj(binding), err)
	}
	if err := kube.RbacV1().RoleBindings(binding.Namespace).Delete(ctx, binding.Name, metav1.DeleteOptions{}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete RoleBinding %s to %s %s: %w", klog.KObj(binding), existing.RoleRef.Kind, existing.RoleRef.Name, err)
	}
	if existing.RoleRef.Kind == "Role" {
		if err := kube.RbacV1().Roles(binding.Namespace).Delete(ctx, existing.RoleRef.Name, metav1.DeleteOptions{}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete Role %s/%s: %w", binding.Namespace, existing.RoleRef.Name, err)
		}
	}
	return nil
}
