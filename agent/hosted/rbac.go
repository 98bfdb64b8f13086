package hosted

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// ServiceAccount is the agent's ServiceAccount on the managed cluster.
const ServiceAccount = "hostfleet-agent"

// ClusterRules are everything the agent may do cluster-wide on the managed
// cluster. Secrets can be written (the copies of claim secrets next to their
// hosts) but never read or listed: BMC credentials are Secrets too. With
// localClaims, the agent also serves HostClaims on the managed cluster, and
// must then read the secrets they reference (get only, never list or watch).
// With bmcDriver, the agent drives BareMetalHosts through their BMCs: it
// writes their status and HardwareData and reads their BMC credentials (get
// only).
func ClusterRules(localClaims, bmcDriver bool) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"metal3.io"}, Resources: []string{"baremetalhosts"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{"metal3.io"}, Resources: []string{"hardwaredata", "hostdeploypolicies"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "patch", "delete"}},
	}
	if localClaims {
		rules = append(rules,
			rbacv1.PolicyRule{APIGroups: []string{"metal3.io"}, Resources: []string{"hostclaims"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
			rbacv1.PolicyRule{APIGroups: []string{"metal3.io"}, Resources: []string{"hostclaims/status"}, Verbs: []string{"patch", "update"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
			rbacv1.PolicyRule{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		)
	}
	if bmcDriver {
		rules = append(rules,
			rbacv1.PolicyRule{APIGroups: []string{"metal3.io"}, Resources: []string{"baremetalhosts/status"}, Verbs: []string{"update", "patch"}},
			rbacv1.PolicyRule{APIGroups: []string{"metal3.io"}, Resources: []string{"hardwaredata"}, Verbs: []string{"create", "update", "patch"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		)
	}
	return rules
}

// NamespaceRules are what the agent may do in its own namespace: hold its
// leader election Lease and renew its own token.
func NamespaceRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{ServiceAccount}, Verbs: []string{"create"}},
		// The pod's ServiceAccount owns the agent's Leases (--lease-owner).
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{ServiceAccount}, Verbs: []string{"get"}},
	}
}
