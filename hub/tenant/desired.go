package tenant

import (
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// ClaimsBinding names a tenant's binding of the claims admission policy.
func ClaimsBinding(tenant string) string { return hostfleetv1alpha1.ClaimsPolicy + "-" + tenant }

// WorkloadClaimsBinding names a tenant's binding of the policy on what its
// workload clusters' agents write on its claims.
func WorkloadClaimsBinding(tenant string) string {
	return hostfleetv1alpha1.WorkloadClaimsPolicy + "-" + tenant
}

// ClaimFinalizersBinding names a tenant's binding of the policy on who
// lets go of its claims.
func ClaimFinalizersBinding(tenant string) string {
	return hostfleetv1alpha1.ClaimFinalizersPolicy + "-" + tenant
}

// Bindings names every admission policy binding of a tenant.
func Bindings(tenant string) []string {
	return []string{ClaimsBinding(tenant), WorkloadClaimsBinding(tenant), ClaimFinalizersBinding(tenant)}
}

// agentSubjects are the hub subjects of the clusters' agents: each
// cluster's own group (CSR driver) and token user, never the group every
// agent shares.
func agentSubjects(clusters []string) []rbacv1.Subject {
	var out []rbacv1.Subject
	for _, c := range clusters {
		out = append(out,
			rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: hostfleetv1alpha1.AgentHubGroup(c)},
			rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: hostfleetv1alpha1.AgentTokenUser(c)})
	}
	return out
}

// grant binds, in one namespace, the subjects to one of the ClusterRoles
// the operator installs (permissions.GrantedClusterRoles).
func grant(meta metav1.ObjectMeta, clusterRole string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole}}
}

// Desired is every object the Tenant should have, in each of its
// namespaces, given the clusters currently in its cluster set and its
// workload clusters (labelled hostfleet.io/tenant=<tenant>).
func Desired(t *hostfleetv1alpha1.Tenant, clusters, workload []string) []client.Object {
	clusters = slices.Sorted(slices.Values(clusters))
	labels := map[string]string{hostfleetv1alpha1.LabelTenant: t.Name}
	agents := agentSubjects(clusters)
	workloadAgents := agentSubjects(slices.Sorted(slices.Values(workload)))
	// The claims admission policies, with this Tenant as their parameter,
	// over the tenant's namespaces.
	binding := func(name, policy string) client.Object {
		return &admissionv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        policy,
				ParamRef:          &admissionv1.ParamRef{Name: t.Name, ParameterNotFoundAction: ptr.To(admissionv1.DenyAction)},
				MatchResources:    &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels}},
				ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			},
		}
	}
	out := []client.Object{
		binding(ClaimsBinding(t.Name), hostfleetv1alpha1.ClaimsPolicy),
		binding(WorkloadClaimsBinding(t.Name), hostfleetv1alpha1.WorkloadClaimsPolicy),
		binding(ClaimFinalizersBinding(t.Name), hostfleetv1alpha1.ClaimFinalizersPolicy),
	}
	for _, ns := range t.DefaultNamespaces() {
		meta := func(name string) metav1.ObjectMeta {
			return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
		}
		out = append(out,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}},
			grant(meta(hostfleetv1alpha1.AdmissionProbeRole), hostfleetv1alpha1.AdmissionProbeClusterRole,
				rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: hostfleetv1alpha1.AdmissionProbeUser}),
			grant(meta(hostfleetv1alpha1.TenantAdminRole), hostfleetv1alpha1.TenantAdminClusterRole, t.Spec.Admins...),
			grant(meta(hostfleetv1alpha1.AgentTenantRole), hostfleetv1alpha1.AgentTenantClusterRole, agents...),
			grant(meta(hostfleetv1alpha1.AgentWorkloadRole), hostfleetv1alpha1.AgentWorkloadClusterRole, workloadAgents...),
			&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: meta(t.Spec.ClusterSet),
				Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: t.Spec.ClusterSet}},
		)
		if t.Spec.MaxClaims != nil {
			out = append(out, &corev1.ResourceQuota{ObjectMeta: meta(hostfleetv1alpha1.TenantQuota), Spec: corev1.ResourceQuotaSpec{
				Hard: corev1.ResourceList{hostfleetv1alpha1.QuotaClaims: *resource.NewQuantity(int64(*t.Spec.MaxClaims), resource.DecimalSI)}}})
		}
	}
	return out
}

// Grant says whether obj grants rights to the tenant's admins or agents:
// such objects are applied only once the tenant's admission policy is in
// force in their namespace, so that no request they allow is ever admitted
// without it.
func Grant(obj client.Object) bool {
	rb, ok := obj.(*rbacv1.RoleBinding)
	return ok && rb.Name != hostfleetv1alpha1.AdmissionProbeRole
}
