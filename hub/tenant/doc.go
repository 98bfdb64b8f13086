// Package tenant registers tenants on the hub. For each Tenant it makes the
// tenant's namespaces, the RBAC of its admins, a ManagedClusterSetBinding for
// its cluster set, a ResourceQuota for maxClaims, and the RoleBindings that
// let exactly the agents of the set's clusters serve claims there; it moves
// those grants when the set or its clusters change, reports what exists and
// what is wrong, and while claims remain it keeps the Tenant from going away.
// Desired is a plain function; the Reconciler fetches, applies and reports.
package tenant
