package addon

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hostfleet/hostfleet/hub/api/permissions"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// BindingName names the ClusterRoleBinding of one cluster's agent.
func BindingName(cluster string) string { return hostfleetv1alpha1.AgentHubRole + ":" + cluster }

// Permissions binds the identity the agent registered with, as Subjects
// accepts it from the ManagedClusterAddOn's status, to AgentHubRole and, in
// the cluster's namespace, AgentClusterRole. Until the identity is known it
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
		if _, _, err := utils.ApplyClusterRole(ctx, kube.RbacV1(), &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.AgentHubRole}, Rules: permissions.AgentHub()}); err != nil {
			return fmt.Errorf("hub role for %s: %w", cluster.Name, err)
		}
		// Owned by the ManagedCluster: it goes when the cluster is removed.
		if _, _, err := utils.ApplyClusterRoleBinding(ctx, kube.RbacV1(), &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: BindingName(cluster.Name), Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "ManagedCluster",
					Name: cluster.Name, UID: cluster.UID}}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hostfleetv1alpha1.AgentHubRole},
			Subjects: subjects,
		}); err != nil {
			return fmt.Errorf("hub role binding for %s: %w", cluster.Name, err)
		}
		// Owned by the ManagedClusterAddOn: it goes when the add-on is disabled.
		owner := []metav1.OwnerReference{{APIVersion: addonv1beta1.GroupVersion.String(), Kind: "ManagedClusterAddOn",
			Name: mca.Name, UID: mca.UID, BlockOwnerDeletion: ptr.To(true)}}
		meta := metav1.ObjectMeta{Name: hostfleetv1alpha1.AgentClusterRole, Namespace: cluster.Name, Labels: labels, OwnerReferences: owner}
		if _, _, err := utils.ApplyRole(ctx, kube.RbacV1(), &rbacv1.Role{ObjectMeta: meta, Rules: permissions.AgentClusterNamespace()}); err != nil {
			return fmt.Errorf("inventory role in %s: %w", cluster.Name, err)
		}
		if _, _, err := utils.ApplyRoleBinding(ctx, kube.RbacV1(), &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hostfleetv1alpha1.AgentClusterRole}}); err != nil {
			return fmt.Errorf("inventory role binding in %s: %w", cluster.Name, err)
		}
		ctrl.LoggerFrom(ctx).WithName("addon").V(1).Info("agent identity bound on the hub", "cluster", cluster.Name, "subjects", subjects)
		return nil
	}
}
