package v1alpha1

import "fmt"

// Finalizers.
const (
	// AgentFinalizer is put on hub claims by the agent that binds them; it
	// is removed only after the host has been released.
	AgentFinalizer = "hostfleet.io/agent"
	// UsageFinalizer is put on a claim by the hub when it places the claim
	// on a cluster; the hub removes it once the claim's other Hostfleet
	// finalizers are gone (its host released) and its placement is in the
	// cluster's UsageLedger, so that intervals the cluster reports later
	// are still counted.
	UsageFinalizer = "hostfleet.io/usage"
	// TenantFinalizer keeps a Tenant until its claims are gone.
	TenantFinalizer = "hostfleet.io/tenant"
	// BMCDriverFinalizer keeps a BareMetalHost the agent's BMC driver drives
	// until it is deprovisioned.
	BMCDriverFinalizer = "hostfleet.io/bmc-driver"
)

// Field managers for server-side apply: the agent's (BareMetalHost spec
// parts, secret copies, HostInventory) and the hub's (tenant objects,
// admission policies).
const (
	FieldManagerAgent = "hostfleet-agent"
	FieldManagerHub   = "hostfleet-hub"
)

// Names of the hostfleet-agent add-on and of what it runs as.
const (
	// AddonName names the ClusterManagementAddOn, every
	// ManagedClusterAddOn, the agent's Deployment and its health Lease.
	AddonName = "hostfleet-agent"
	// HubLease is the hub replicas' leader election Lease, in the hub's
	// namespace on the hub cluster.
	HubLease = "hostfleet-hub"
	// HubWebhook names the hub's ValidatingWebhookConfiguration (hardware
	// requirements refused at admission).
	HubWebhook = "hostfleet-hub"
	// HubWebhookSecret holds the webhook's CA and serving certificate, in
	// the hub's namespace: the operator makes it empty, the hub fills it.
	HubWebhookSecret = "hostfleet-hub-webhook"
	// AgentServiceAccount is the agent's ServiceAccount on the managed
	// cluster (and its pod's, wherever it runs).
	AgentServiceAccount = "hostfleet-agent"
	// AgentNamespace is the agent's namespace on the managed cluster unless
	// the ManagedClusterAddOn names another.
	AgentNamespace = "hostfleet-agent"
	// AgentManagedRole names the agent's ClusterRole and Role (and their
	// bindings) on the managed cluster.
	AgentManagedRole = "hostfleet-agent"
	// AgentBMCRole names the agent's Role (and binding) in each namespace
	// whose hosts its BMC driver drives: the BMC credentials there.
	AgentBMCRole = "hostfleet-agent-bmc"
	// AgentLocalClaimsRole names the agent's Role (and binding) in each
	// namespace whose local claims an administrator has it serve
	// (--local-claim-namespaces): those claims' data secrets.
	AgentLocalClaimsRole = "hostfleet-agent-local-claims"
	// RetiredAgentHubRole is the ClusterRole earlier hubs bound each agent
	// identity to, cluster-wide, to read Namespaces (the ClusterTenancy now
	// carries the labels agents need): left on upgrade, with its bindings,
	// to agents still at that release; removed at uninstall.
	RetiredAgentHubRole = "hostfleet:agent"
	// AgentHostingRole names the agent's Role (and binding) on a Hosted mode
	// hosting cluster.
	AgentHostingRole = "hostfleet-agent-lease"
	// AgentClusterRole is the ClusterRole an agent identity is bound to in
	// its cluster's namespace on the hub (by a RoleBinding of the same
	// name); AgentTenantRole the RoleBinding in the namespaces of the
	// tenants it serves, to the ClusterRole AgentTenantClusterRole. No agent
	// is bound cluster-wide.
	AgentClusterRole       = "hostfleet:agent-inventory"
	AgentTenantRole        = "hostfleet-agent"
	AgentTenantClusterRole = "hostfleet:agent-tenant"
	// WorkAgentRole is the ClusterRole aggregated into the OCM work agent's
	// role for forwarded claims.
	WorkAgentRole = "hostfleet:work-agent"
)

// The hub identities of a cluster's agent, as OCM's add-on registration
// makes them. With the CSR driver the agent's certificate carries
// AgentHubUser as its common name and AgentHubGroup and AgentSharedGroup as
// its organizations; with the token driver it is AgentTokenUser. The hub
// binds rights only to the per-cluster names, never to AgentSharedGroup,
// which every cluster's agent holds.

// AgentHubUser is a cluster's agent's user with the CSR driver.
func AgentHubUser(cluster string) string {
	return fmt.Sprintf("system:open-cluster-management:cluster:%s:addon:%s:agent:%s", cluster, AddonName, AddonName)
}

// AgentHubGroup is a cluster's agent's own group with the CSR driver.
func AgentHubGroup(cluster string) string {
	return fmt.Sprintf("system:open-cluster-management:cluster:%s:addon:%s", cluster, AddonName)
}

// AgentSharedGroup is the group every cluster's agent carries: never bound.
const AgentSharedGroup = "system:open-cluster-management:addon:" + AddonName

// AgentTokenUser is a cluster's agent's user with the token driver: the
// ServiceAccount the driver makes in the cluster's namespace on the hub.
func AgentTokenUser(cluster string) string {
	return fmt.Sprintf("system:serviceaccount:%s:%s-%s-agent", cluster, cluster, AddonName)
}

// RegistrationGroup is the group of a cluster's OCM registration agent on
// the hub; its user is "system:open-cluster-management:<cluster>:<agent>".
func RegistrationGroup(cluster string) string {
	return "system:open-cluster-management:" + cluster
}

// Names of the objects the hub makes for each tenant.
const (
	// AdmissionProbeUser is the identity the hub impersonates to check, with
	// a dry run, that a tenant's admission policy is in force before it
	// grants the tenant's RBAC. Nobody can authenticate as it; its only
	// right (Role and RoleBinding AdmissionProbeRole in each tenant
	// namespace) is to create HostClaims, and it only ever dry-runs.
	AdmissionProbeUser = "hostfleet:admission-probe"
	AdmissionProbeRole = "hostfleet-admission-probe"
	// AdmissionProbeClusterRole is the ClusterRole AdmissionProbeRole binds.
	AdmissionProbeClusterRole = "hostfleet:admission-probe"
	// TenantAdminRole is the RoleBinding of a tenant's admins in each of
	// its namespaces, to the ClusterRole TenantAdminClusterRole.
	TenantAdminRole        = "hostfleet-tenant-admin"
	TenantAdminClusterRole = "hostfleet:tenant-admin"
	// TenantQuota is the ResourceQuota that enforces Tenant.spec.maxClaims.
	TenantQuota = "hostfleet-claims"
	// QuotaClaims is the quota's resource: HostClaims counted by object.
	QuotaClaims = "count/hostclaims.metal3.io"
	// ClaimsPolicy is the ValidatingAdmissionPolicy on tenants' claims; the
	// hub binds it once per tenant, with the Tenant as its parameter.
	ClaimsPolicy = "hostfleet-claims"
	// ClaimFinalizersPolicy keeps everyone but the hub and the claim's own
	// agent from letting go of a claim while its cluster is Available; the
	// hub binds it once per tenant, with the Tenant as its parameter.
	ClaimFinalizersPolicy = "hostfleet-claim-finalizers"
)
