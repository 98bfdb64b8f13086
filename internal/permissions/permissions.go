// Package permissions defines, once, every right a Hostfleet identity holds:
// the agent on its managed cluster, on a Hosted mode hosting cluster and on
// the hub (its cluster's namespace and its tenants' namespaces), the OCM work
// agent for forwarded claims, and a tenant's admins. Every renderer reads these
// sets: the add-on templates (through their values), the Hosted agent's own
// minting, the tenant controller's grants and the add-on's PermissionConfig.
// The package depends on nothing of Hostfleet's but the well-known names.
package permissions

import (
	rbacv1 "k8s.io/api/rbac/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

var (
	view = []string{"get", "list", "watch"}
	edit = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
)

const (
	metal3Group = "metal3.io"
	leaseGroup  = "coordination.k8s.io"
)

// Features select the optional rights of an agent on its managed cluster.
type Features struct {
	// LocalClaims: the agent also serves HostClaims on the managed cluster
	// (forwarded claims arrive this way). It reads the secrets they
	// reference only where a Role lets it: in the namespaces an
	// administrator names (AgentNamespaceGrants) and, for forwarded claims,
	// the Role the hub forwards beside each claim (ForwardedClaimSecrets).
	LocalClaims bool
	// BMCDriver: the agent drives BareMetalHosts through their BMCs and
	// writes their status and HardwareData. It reads their BMC credentials
	// only in the namespaces it drives, with AgentBMCNamespace there.
	BMCDriver bool
	// Workload: the agent runs in the workload role (a workload cluster,
	// no BareMetalHosts): it labels Nodes and needs nothing else there.
	Workload bool
}

// AgentManagedCluster is everything the agent may do cluster-wide on its
// managed cluster. Secrets can be written (the copies of claim secrets next
// to their hosts) but never listed, watched or read cluster-wide: the BMC
// driver's credentials and local claims' secrets are read per namespace
// (AgentNamespaceGrants, ForwardedClaimSecrets).
func AgentManagedCluster(f Features) []rbacv1.PolicyRule {
	if f.Workload {
		return AgentWorkloadCluster()
	}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{metal3Group}, Resources: []string{"baremetalhosts"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{metal3Group}, Resources: []string{"hardwaredata", "hostdeploypolicies"}, Verbs: view},
		// The release gate of the hosts baremetal-operator serves: their
		// firmware read, and a restore asked for.
		{APIGroups: []string{metal3Group}, Resources: []string{"hostfirmwarecomponents", "hostfirmwaresettings"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "patch", "delete"}},
		// Events on hosts (an orphaned host found and released).
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
	if f.LocalClaims {
		rules = append(rules,
			rbacv1.PolicyRule{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
			rbacv1.PolicyRule{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims/status"}, Verbs: []string{"patch", "update"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
		)
	}
	if f.BMCDriver {
		rules = append(rules,
			rbacv1.PolicyRule{APIGroups: []string{metal3Group}, Resources: []string{"baremetalhosts/status"}, Verbs: []string{"update", "patch"}},
			rbacv1.PolicyRule{APIGroups: []string{metal3Group}, Resources: []string{"hardwaredata"}, Verbs: []string{"create", "update", "patch"}},
		)
	}
	return rules
}

// AgentManagedClusterDefault is the agent's ClusterRole on its managed
// cluster in Default mode, where its pod runs: AgentManagedCluster, and
// MetricsAuth for the callers of its metrics. (In Hosted mode the pod runs on
// the hosting cluster, which authenticates them instead.)
func AgentManagedClusterDefault(f Features) []rbacv1.PolicyRule {
	return append(AgentManagedCluster(f), MetricsAuth()...)
}

// MetricsAuth lets a metrics server ask its API server who a caller is
// (TokenReview) and whether it may get /metrics (SubjectAccessReview): what
// the agent needs, where its pod runs, to serve metrics only to allowed
// callers. Kubernetes' system:auth-delegator ClusterRole holds the same.
func MetricsAuth() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}
}

// AgentWorkloadCluster is everything the agent may do on a workload
// cluster: read Nodes and apply the labels it syncs (patch, under its own
// field manager), and record Events. No Secret, no host.
func AgentWorkloadCluster() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// AgentBMCNamespace is what the agent's BMC driver may do in each namespace
// whose hosts it drives: read their BMC credentials, by name. The same
// right, in each namespace whose local claims it serves, reads their data
// secrets.
func AgentBMCNamespace() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	}
}

// NamespaceGrant is a Role the agent holds in one namespace of its managed
// cluster (with a RoleBinding of the same name).
type NamespaceGrant struct {
	Namespace, Role string
	Rules           []rbacv1.PolicyRule
}

// AgentNamespaceGrants are the agent's Roles outside its own namespace: in
// each namespace whose hosts its BMC driver drives, AgentBMCRole (BMC
// credentials); in each namespace whose local claims an administrator has it
// serve, AgentLocalClaimsRole (those claims' data secrets). The add-on
// renders them in Default mode; a Hosted agent makes them itself.
func AgentNamespaceGrants(bmcNamespaces, localClaimNamespaces []string) []NamespaceGrant {
	var out []NamespaceGrant
	for _, ns := range bmcNamespaces {
		out = append(out, NamespaceGrant{Namespace: ns, Role: hostfleetv1alpha1.AgentBMCRole, Rules: AgentBMCNamespace()})
	}
	for _, ns := range localClaimNamespaces {
		out = append(out, NamespaceGrant{Namespace: ns, Role: hostfleetv1alpha1.AgentLocalClaimsRole, Rules: AgentBMCNamespace()})
	}
	return out
}

// ForwardedClaimSecrets is what the agent serving a forwarded claim may do
// in the claim's namespace on its cluster: read the claim's secret copies,
// by name. The hub forwards it beside them, in the claim's ManifestWork.
func ForwardedClaimSecrets(names []string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: names, Verbs: []string{"get"}},
	}
}

// AgentOwnNamespace is what the agent may do in its own namespace on the
// managed cluster: hold its leader election Lease, renew its own token, and
// name its ServiceAccount as its Leases' owner.
func AgentOwnNamespace() []rbacv1.PolicyRule {
	sa := []string{hostfleetv1alpha1.AgentServiceAccount}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{leaseGroup}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: sa, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: sa, Verbs: []string{"get"}},
	}
}

// AgentHostingNamespace is all the agent's pod may do on a Hosted mode
// hosting cluster, in its namespace there: keep the add-on's health Lease
// (which OCM reads there) and make its ServiceAccount that Lease's owner.
// A create cannot be limited by resource name, hence two Lease rules.
func AgentHostingNamespace() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{leaseGroup}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{leaseGroup}, Resources: []string{"leases"}, ResourceNames: []string{hostfleetv1alpha1.AddonName}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{hostfleetv1alpha1.AgentServiceAccount}, Verbs: []string{"get"}},
	}
}

// AgentClusterNamespace is what an agent may do in its cluster's namespace
// on the hub: read the cluster's ClusterTenancy (the tenants it serves),
// read the PlacedClaims (the claims placed on the cluster, copied there),
// write the cluster's HostInventory and HostUsage, read its
// HostMaintenances and write their status, and keep the add-on Lease
// the agent keeps on the hub when its cluster has none. RBAC cannot limit a
// create by name, so creating Leases is granted in the namespace, and
// changing one only by the add-on's name. It may also watch the claims
// and HardwareData there (there are none: the namespace keeps the agent's
// set of watched namespaces from ever being empty).
func AgentClusterNamespace() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims", "hardwaredata"}, Verbs: view},
		{APIGroups: []string{hostfleetv1alpha1.GroupVersion.Group}, Resources: []string{"clustertenancies", "placedclaims"}, Verbs: view},
		{APIGroups: []string{hostfleetv1alpha1.GroupVersion.Group}, Resources: []string{"hostinventories", "hostusages"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
		{APIGroups: []string{hostfleetv1alpha1.GroupVersion.Group}, Resources: []string{"hostinventories/status", "hostusages/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{hostfleetv1alpha1.GroupVersion.Group}, Resources: []string{"hostmaintenances"}, Verbs: view},
		{APIGroups: []string{hostfleetv1alpha1.GroupVersion.Group}, Resources: []string{"hostmaintenances/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{leaseGroup}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{leaseGroup}, Resources: []string{"leases"}, ResourceNames: []string{hostfleetv1alpha1.AddonName},
			Verbs: []string{"get", "update"}},
	}
}

// AgentTenantNamespace is what an agent needs in the hub namespace of a
// tenant its cluster serves: its claims and their status, the secrets they
// reference, HardwareData copies, and Events.
func AgentTenantNamespace() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
		{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims/status"}, Verbs: []string{"patch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		{APIGroups: []string{metal3Group}, Resources: []string{"hardwaredata"}, Verbs: []string{"get", "create", "delete"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// AgentWorkloadTenantNamespace is what the agent of a tenant's workload
// cluster may do in each of the tenant's hub namespaces: read its claims
// and HardwareData copies, and write their status, where admission lets
// it change only the NodeLabelsSynced and NodeReady conditions (policy
// hostfleet-workload-claims); and record Events. No Secret.
func AgentWorkloadTenantNamespace() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims", "hardwaredata"}, Verbs: view},
		{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// TenantAdmin is what a tenant's admins may do in the tenant's namespaces:
// edit claims and secrets, view HardwareData, claim status and the Events
// (the hub's and the agents' about their claims); nothing else.
func TenantAdmin() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims"}, Verbs: edit},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: edit},
		{APIGroups: []string{metal3Group}, Resources: []string{"hardwaredata"}, Verbs: view},
		{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims/status"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: view},
	}
}

// AdmissionProbe is what the hub's admission probe identity may do in a
// tenant namespace: create HostClaims (it only ever dry-runs one that the
// tenant's policy must refuse).
func AdmissionProbe() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims"}, Verbs: []string{"create"}},
	}
}

// WorkAgent is what the OCM work agent on a managed cluster needs to apply
// what the hub forwards through ManifestWork: plain metal3 HostClaims. It is
// aggregated into the work agent's role.
func WorkAgent() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims"}, Verbs: edit},
	}
}

// GrantedClusterRoles are the ClusterRoles the hub binds, per tenant
// namespace or per cluster namespace, to tenant admins, agents and its
// admission probe. The operator installs them; the hub only binds them
// (Hub holds bind on exactly these names), so it never holds the rights it
// grants: editing Secrets in every namespace, for one.
func GrantedClusterRoles() []rbacv1.ClusterRole {
	role := func(name string, rules []rbacv1.PolicyRule) rbacv1.ClusterRole {
		r := rbacv1.ClusterRole{Rules: rules}
		r.Name = name
		return r
	}
	return []rbacv1.ClusterRole{
		role(hostfleetv1alpha1.AgentClusterRole, AgentClusterNamespace()),
		role(hostfleetv1alpha1.AgentTenantClusterRole, AgentTenantNamespace()),
		role(hostfleetv1alpha1.AgentWorkloadClusterRole, AgentWorkloadTenantNamespace()),
		role(hostfleetv1alpha1.TenantAdminClusterRole, TenantAdmin()),
		role(hostfleetv1alpha1.AdmissionProbeClusterRole, AdmissionProbe()),
	}
}

// GrantedClusterRoleNames are the names of GrantedClusterRoles.
func GrantedClusterRoleNames() []string {
	var names []string
	for _, r := range GrantedClusterRoles() {
		names = append(names, r.Name)
	}
	return names
}

// Hub is everything the hub's controllers may do cluster-wide on the hub
// cluster: their own work (HubOwn) and bind the GrantedClusterRoles, by
// name. Kubernetes lets an identity bind a role whose rights it does not
// hold only with bind on that role: the hub grants tenant admins the
// right to edit Secrets in their namespaces without holding it anywhere.
func Hub() []rbacv1.PolicyRule {
	return append(HubOwn(), rbacv1.PolicyRule{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"},
		ResourceNames: GrantedClusterRoleNames(), Verbs: []string{"bind"}})
}

// HubOwn is what the hub's controllers do themselves: register tenants
// (namespaces, quotas, RBAC, admission bindings, cluster set bindings, and
// each cluster's ClusterTenancy), place claims, end their leases (deleting
// them), copy them into their clusters'
// namespaces (PlacedClaims), count host use (UsageLedgers, from the
// agents' HostUsage reports), copy HardwareData, and run
// the hostfleet-agent add-on (ClusterManagementAddOn, ManagedClusterAddOns,
// ManifestWorks, the agents' CSRs), and forward remote claims (ManifestWorks
// carrying the claim and copies of the secrets it references: the forwarder
// reads those, and caches only the metadata of secrets, to follow their
// changes).
func HubOwn() []rbacv1.PolicyRule {
	const (
		rbacGroup      = "rbac.authorization.k8s.io"
		clusterGroup   = "cluster.open-cluster-management.io"
		addonGroup     = "addon.open-cluster-management.io"
		workGroup      = "work.open-cluster-management.io"
		admissionGroup = "admissionregistration.k8s.io"
		csrGroup       = "certificates.k8s.io"
	)
	hostfleet := hostfleetv1alpha1.GroupVersion.Group
	manage := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{hostfleet}, Resources: []string{"tenants"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{hostfleet}, Resources: []string{"tenants/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{hostfleet}, Resources: []string{"tenants/finalizers"}, Verbs: []string{"update"}},
		{APIGroups: []string{hostfleet}, Resources: []string{"hostinventories", "hostusages", "hostmaintenances"}, Verbs: view},
		// Carried to every cluster in its ClusterTenancy.
		{APIGroups: []string{hostfleet}, Resources: []string{"firmwarebaselines"}, Verbs: view},
		// The agents' usage reports: what the hub settled of each.
		{APIGroups: []string{hostfleet}, Resources: []string{"hostusages/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{hostfleet}, Resources: []string{"clustertenancies", "placedclaims", "usageledgers"}, Verbs: manage},
		{APIGroups: []string{hostfleet}, Resources: []string{"usageledgers/status"}, Verbs: []string{"update", "patch"}},
		// Delete: a claim whose lease ended (hub/lease).
		{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims"}, Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}},
		{APIGroups: []string{metal3Group}, Resources: []string{"hostclaims/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{metal3Group}, Resources: []string{"hardwaredata"}, Verbs: manage},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: view},
		{APIGroups: []string{""}, Resources: []string{"namespaces", "resourcequotas"}, Verbs: manage},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		{APIGroups: []string{leaseGroup}, Resources: []string{"leases"}, Verbs: manage},
		// Bindings to the GrantedClusterRoles (Hub adds bind on them); Roles
		// only to remove those earlier hubs made, which held the rights themselves.
		{APIGroups: []string{rbacGroup}, Resources: []string{"rolebindings", "clusterrolebindings"}, Verbs: manage},
		{APIGroups: []string{rbacGroup}, Resources: []string{"clusterroles"}, Verbs: view},
		{APIGroups: []string{rbacGroup}, Resources: []string{"roles"}, Verbs: []string{"get", "list", "watch", "delete"}},
		{APIGroups: []string{admissionGroup}, Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, Verbs: manage},
		// The validating webhook (hub/admission): its configuration, and its
		// certificate in the Secret the operator makes empty.
		{APIGroups: []string{admissionGroup}, Resources: []string{"validatingwebhookconfigurations"}, Verbs: []string{"create"}},
		{APIGroups: []string{admissionGroup}, Resources: []string{"validatingwebhookconfigurations"}, ResourceNames: []string{hostfleetv1alpha1.HubWebhook}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{hostfleetv1alpha1.HubWebhookSecret}, Verbs: []string{"update"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews", "tokenreviews"}, Verbs: []string{"create"}},
		// Metrics served only to callers the API server authenticates and allows.
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{hostfleetv1alpha1.AdmissionProbeUser}, Verbs: []string{"impersonate"}},
		{APIGroups: []string{clusterGroup}, Resources: []string{"managedclusters", "managedclustersets", "placements", "placementdecisions"}, Verbs: view},
		{APIGroups: []string{clusterGroup}, Resources: []string{"managedclustersets/bind"}, Verbs: []string{"create"}},
		{APIGroups: []string{clusterGroup}, Resources: []string{"managedclustersetbindings"}, Verbs: manage},
		{APIGroups: []string{addonGroup}, Resources: []string{"clustermanagementaddons", "managedclusteraddons"}, Verbs: manage},
		{APIGroups: []string{addonGroup}, Resources: []string{"clustermanagementaddons/status", "managedclusteraddons/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{addonGroup}, Resources: []string{"clustermanagementaddons/finalizers", "managedclusteraddons/finalizers"}, Verbs: []string{"update"}},
		{APIGroups: []string{addonGroup}, Resources: []string{"addondeploymentconfigs"}, Verbs: view},
		{APIGroups: []string{workGroup}, Resources: []string{"manifestworks"}, Verbs: append(manage, "deletecollection")},
		{APIGroups: []string{csrGroup}, Resources: []string{"certificatesigningrequests"}, Verbs: view},
		{APIGroups: []string{csrGroup}, Resources: []string{"certificatesigningrequests/approval"}, Verbs: []string{"update"}},
		{APIGroups: []string{csrGroup}, Resources: []string{"signers"}, ResourceNames: []string{"kubernetes.io/kube-apiserver-client"}, Verbs: []string{"approve"}},
	}
}

// MetricsReader may read the metrics of the hub and the operator (their
// metrics servers ask the API server whether a caller may get /metrics).
func MetricsReader() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
}
