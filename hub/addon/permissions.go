package addon

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// HubRole is the ClusterRole every agent identity is bound to on the hub;
// InventoryRole the Role in its cluster's namespace. Claims, secrets and
// HardwareData in tenant namespaces come from the Tenant's RoleBindings
// (hub/tenant), and admission limits every write to the agent's own cluster.
const (
	HubRole       = "hostfleet:agent"
	InventoryRole = "hostfleet:agent-inventory"
)

// HubRules: watch the claims (the agent's cache asks the server only for
// those labelled for its cluster), and see tenants and their namespaces to
// compute the inventory.
func HubRules() []rbacv1.PolicyRule {
	view := []string{"get", "list", "watch"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"metal3.io"}, Resources: []string{"hostclaims"}, Verbs: view},
		{APIGroups: []string{hostfleetv1alpha1.GroupVersion.Group}, Resources: []string{"tenants"}, Verbs: view},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: view},
	}
}

// InventoryRules: the cluster's HostInventory, and the add-on Lease the
// agent keeps on the hub when its cluster has none.
func InventoryRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{hostfleetv1alpha1.GroupVersion.Group}, Resources: []string{"hostinventories"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
		{APIGroups: []string{hostfleetv1alpha1.GroupVersion.Group}, Resources: []string{"hostinventories/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{Name},
			Verbs: []string{"get", "create", "update"}},
	}
}

// BindingName names the ClusterRoleBinding of one cluster's agent.
func BindingName(cluster string) string { return HubRole + ":" + cluster }

// Permissions binds the identity the agent registered with (the CSR
// driver's user and groups, or the token driver's ServiceAccount user), as
// the ManagedClusterAddOn's status says, to HubRole and, in the cluster's
// namespace, InventoryRole. Until the identity is known it reports
// SubjectNotReady and is called again when the status changes.
func Permissions(kube kubernetes.Interface) agent.PermissionConfigFunc {
	return func(ctx context.Context, cluster *clusterv1.ManagedCluster, mca *addonv1beta1.ManagedClusterAddOn) error {
		subjects := utils.BuildSubjectsFromRegistration(mca, certificatesv1.KubeAPIServerClientSignerName)
		if len(subjects) == 0 {
			return &agent.SubjectNotReadyError{}
		}
		labels := map[string]string{hostfleetv1alpha1.LabelCluster: cluster.Name}
		if _, _, err := utils.ApplyClusterRole(ctx, kube.RbacV1(), &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: HubRole}, Rules: HubRules()}); err != nil {
			return fmt.Errorf("hub role for %s: %w", cluster.Name, err)
		}
		// Owned by the ManagedCluster: it goes when the cluster is removed.
		if _, _, err := utils.ApplyClusterRoleBinding(ctx, kube.RbacV1(), &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: BindingName(cluster.Name), Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "ManagedCluster",
					Name: cluster.Name, UID: cluster.UID}}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: HubRole},
			Subjects: subjects,
		}); err != nil {
			return fmt.Errorf("hub role binding for %s: %w", cluster.Name, err)
		}
		// Owned by the ManagedClusterAddOn: it goes when the add-on is disabled.
		owner := []metav1.OwnerReference{{APIVersion: addonv1beta1.GroupVersion.String(), Kind: "ManagedClusterAddOn",
			Name: mca.Name, UID: mca.UID, BlockOwnerDeletion: ptr.To(true)}}
		meta := metav1.ObjectMeta{Name: InventoryRole, Namespace: cluster.Name, Labels: labels, OwnerReferences: owner}
		if _, _, err := utils.ApplyRole(ctx, kube.RbacV1(), &rbacv1.Role{ObjectMeta: meta, Rules: InventoryRules()}); err != nil {
			return fmt.Errorf("inventory role in %s: %w", cluster.Name, err)
		}
		if _, _, err := utils.ApplyRoleBinding(ctx, kube.RbacV1(), &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: InventoryRole}}); err != nil {
			return fmt.Errorf("inventory role binding in %s: %w", cluster.Name, err)
		}
		return nil
	}
}
