package v1alpha1

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Metadata keys on hub HostClaims. Hostfleet's extras to the upstream claim ride
// on labels and annotations so that kubectl, CAPM3 and other HostClaim clients
// work against the hub unchanged.
const (
	// LabelKind selects the path a claim takes: KindBaremetal (the default,
	// pulled by the agent of the cluster it is placed on) or KindRemote
	// (forwarded as a plain HostClaim through ManifestWork). It is a label so
	// that agents can watch with a server-side label filter.
	LabelKind = "hostfleet.io/kind"
	// KindBaremetal is the pull path; a claim without LabelKind has this kind.
	KindBaremetal = "baremetal"
	// KindRemote is the forwarding path.
	KindRemote = "remote"

	// LabelCluster names the managed cluster a claim is placed on. The hub
	// scheduler sets it, or the tenant pins it to one of the tenant's clusters.
	LabelCluster = "hostfleet.io/cluster"

	// AnnotationPlacement names an OCM Placement in the claim's namespace whose
	// decisions restrict the candidate clusters.
	AnnotationPlacement = "hostfleet.io/placement"

	// LabelBoundHost is an informational hint naming the bound host. The
	// BareMetalHost's consumerRef is the truth: a label that disagrees with it
	// is erased and never trusted.
	LabelBoundHost = "hostfleet.io/bound-host"

	// AnnotationReservedHost, "<namespace>/<name>", is the host the agent
	// binds the claim to: written with the claim's resourceVersion before the
	// host is bound, together with the agent's finalizer, so that a claim
	// never has two bindings in flight. Only the agent and the hub set it
	// (admission).
	AnnotationReservedHost = "hostfleet.io/reserved-host"

	// AnnotationHostUID is the UID of the BareMetalHost the claim is bound
	// to (reserved, then confirmed): a stable identity of the machine that
	// names no BMC, from which a client such as Cluster API makes a Node's
	// providerID (metal3://<host UID>). The agent writes it with the
	// reservation; only the agent and the hub set it (admission).
	AnnotationHostUID = "hostfleet.io/host-uid"

	// LabelTenant marks the hub namespaces that belong to a tenant; its value
	// is the Tenant's name. On a ManagedCluster it makes the cluster a
	// workload cluster of that tenant: its agent runs in the workload role
	// and copies the tenant's claim labels to its Nodes. Only a hub
	// administrator may set it (admission refuses the cluster's own agents).
	LabelTenant = "hostfleet.io/tenant"
)

// Scheduler annotations on hub claims.
const (
	// AnnotationPlacedBy marks a cluster label the scheduler set (as
	// opposed to a tenant's pin, which is never moved).
	AnnotationPlacedBy = "hostfleet.io/placed-by"
	// PlacedByScheduler is AnnotationPlacedBy's value: the agent of the
	// cluster writes the Scheduled condition (Placed) of such a claim
	// with its first status.
	PlacedByScheduler = "scheduler"
	// AnnotationExcluded lists clusters that did not bind the claim in time.
	AnnotationExcluded = "hostfleet.io/excluded-clusters"
)

// Metadata keys on BareMetalHosts in infrastructure clusters.
const (
	// AnnotationHub names the hub whose claim holds the host. Together with
	// a consumerRef of kind HostClaim in group hostfleet.io it tells a local
	// HostClaim-aware baremetal-operator that the host is taken by a remote
	// claim, not a local metal3.io one.
	AnnotationHub = "hostfleet.io/hub"
	// AnnotationClaimUID is the UID of the hub claim that holds the host. A
	// claim deleted and recreated under the same name is a different claim.
	AnnotationClaimUID = "hostfleet.io/claim-uid"
	// AnnotationOrphanedSince is when the agent first found the claim that
	// holds the host gone (RFC 3339). After the agent's grace period it
	// releases the host; the annotation survives agent restarts.
	AnnotationOrphanedSince = "hostfleet.io/orphaned-since"
)

// AnnotationDriver on a BareMetalHost ("bmclib") asks the agent's BMC
// driver to drive the host (no baremetal-operator manages it).
const (
	AnnotationDriver = "hostfleet.io/driver"
	// DriverBMCLib is the value of AnnotationDriver for the agent's driver.
	DriverBMCLib = "bmclib"
)

// ConditionPowerChanging on a driven BareMetalHost is True while a power
// change the driver asked for has not been reported by the BMC yet: its
// reason says which (PoweringOn, PoweringOff, Rebooting), its message what
// was sent and what the BMC reports, its lastTransitionTime since when.
const (
	ConditionPowerChanging = "PowerChanging"
	ReasonPoweringOn       = "PoweringOn"
	ReasonPoweringOff      = "PoweringOff"
	ReasonRebooting        = "Rebooting"
	// ReasonPowerSettled: no change under way; the BMC reports the power.
	ReasonPowerSettled = "PowerSettled"
)

// Labels on the copies of a claim's secrets that the agent makes next to
// the host, so that it can find and delete them.
const (
	LabelClaimNamespace = "hostfleet.io/claim-namespace"
	LabelClaimName      = "hostfleet.io/claim-name"
	LabelClaimUID       = "hostfleet.io/claim-uid"
	LabelSecretRole     = "hostfleet.io/secret-role"
)

// AnnotationSourceUID on a hub HardwareData copy is the UID of the
// infrastructure cluster's HardwareData it was copied from.
const AnnotationSourceUID = "hostfleet.io/source-uid"

// AnnotationAllowDetach on a HostDeployPolicy ("true") lets the claims it
// admits detach their hosts with baremetalhost.metal3.io/detached; without it
// the agent does not pass that annotation on.
const AnnotationAllowDetach = "hostfleet.io/allow-detach"

// ConsumerKind is the kind written in the consumerRef of a BareMetalHost held
// by a hub claim, with apiVersion GroupVersion.String() and the claim's hub
// namespace and name.
const ConsumerKind = "HostClaim"

// Finalizers.
const (
	// AgentFinalizer is put on hub claims by the agent that binds them; it
	// is removed only after the host has been released.
	AgentFinalizer = "hostfleet.io/agent"
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
	// AgentHostingRole names the agent's Role (and binding) on a Hosted mode
	// hosting cluster.
	AgentHostingRole = "hostfleet-agent-lease"
	// AgentHubRole is the ClusterRole every agent identity is bound to on
	// the hub; AgentClusterRole the ClusterRole it is bound to in its
	// cluster's namespace (by a RoleBinding of the same name);
	// AgentTenantRole the RoleBinding in the namespaces of the tenants it
	// serves, to the ClusterRole AgentTenantClusterRole.
	AgentHubRole           = "hostfleet:agent"
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
)

// Condition types on hub HostClaims. Ready summarises the others.
const (
	ConditionScheduled                = "Scheduled"
	ConditionAssociated               = "Associated"
	ConditionSynchronized             = "Synchronized"
	ConditionProvisioned              = "Provisioned"
	ConditionAvailableForProvisioning = "AvailableForProvisioning"
	ConditionForwarded                = "Forwarded"
	ConditionReady                    = "Ready"
	// ConditionPaused is True while the claim carries
	// baremetalhost.metal3.io/paused (reason ReasonPaused, the message
	// naming the annotation's value: who paused it); absent otherwise.
	ConditionPaused = "Paused"
)

// Condition reasons. They are CamelCase and stable: tools may match on them.
const (
	// ReasonHostAssociated: a BareMetalHost is bound to the claim.
	ReasonHostAssociated = "BareMetalHostAssociated"
	// ReasonServedByBareMetalOperator: a remote claim's target is served by
	// baremetal-operator's HostClaim controller, which associates a host
	// but (v0.14) does not provision it: the hub claim is not Ready.
	ReasonServedByBareMetalOperator = "ServedByBareMetalOperator"
	// ReasonServedByOtherController: another HostClaim controller on the
	// cluster (baremetal-operator's) serves a local claim, so the agent
	// leaves it (an Event on the local claim says so).
	ReasonServedByOtherController = "ServedByOtherController"
	// ReasonTwoHostClaimControllers: another HostClaim controller on the
	// cluster (baremetal-operator's) reconciles a local claim the agent
	// serves (an Event on the local claim, the agent's
	// hostfleet_agent_local_claims_other_controller, and the hub claim's
	// Forwarded message say so).
	ReasonTwoHostClaimControllers = "TwoHostClaimControllers"
	// ReasonReservedHostOrphaned: the claim's reserved host is held by a
	// claim that no longer exists (a cluster restored from an older
	// backup); the claim waits for its release.
	ReasonReservedHostOrphaned = "ReservedHostOrphaned"
	// ReasonNoHostAvailable: no free BareMetalHost matches the claim yet.
	ReasonNoHostAvailable = "NoBareMetalHostAvailable"
	// ReasonNoDeployPolicy: no HostDeployPolicy on the cluster admits the
	// claim's namespace.
	ReasonNoDeployPolicy = "NoHostDeployPolicy"
	// ReasonInvalidSelector: the claim's hostSelector cannot be evaluated.
	ReasonInvalidSelector = "InvalidHostSelector"
	// ReasonReleasing: the claim is being deleted and its host released.
	ReasonReleasing = "Releasing"
	// ReasonDetachNotAllowed: the claim asks to detach its host and no
	// policy allows it; everything else was synced.
	ReasonDetachNotAllowed = "DetachNotAllowed"
	// ReasonSynchronizing: the binding is confirmed and the claim's image,
	// power and data secrets are being written to the host.
	ReasonSynchronizing = "Synchronizing"
	// ReasonPaused: the claim carries baremetalhost.metal3.io/paused (a
	// Cluster API client pauses claims while its cluster is paused or
	// moved): Hostfleet changes nothing on its host, binds no host to it
	// and does not release it until the annotation is removed; its status
	// keeps following the host. On Paused, and on Synchronized or
	// Associated while something waits for the pause to end.
	ReasonPaused = "Paused"
)

// Reasons the agent's reflector writes (Provisioned, AvailableForProvisioning,
// Ready) from the bound host's state.
const (
	ReasonProvisioned    = "Provisioned"
	ReasonProvisioning   = "Provisioning"
	ReasonDeprovisioning = "Deprovisioning"
	ReasonNoWorkload     = "NoImage"
	ReasonHostError      = "HostError"
	ReasonHostNotReady   = "HostNotReady"
	ReasonHostAvailable  = "HostAvailable"
	ReasonPowerPending   = "PowerChangePending"
	// ReasonPowerChanging: the host's BMC has not yet reported the power
	// change under way (the host's PowerChanging condition).
	ReasonPowerChanging = "PowerChanging"
	ReasonReady         = "Ready"
	ReasonNotAssociated = "NotAssociated"
)

// Reasons of the Scheduled condition, written by the hub scheduler.
const (
	// ReasonPlaced: on the cluster the scheduler chose. The agent of that
	// cluster writes it with its first status (the scheduler's placement is
	// the label alone), or the scheduler once Reconciler.ConfirmGrace is
	// over.
	ReasonPlaced           = "Placed"
	ReasonPinned           = "Pinned"
	ReasonPinnedOutsideSet = "PinnedOutsideSet"
	ReasonNoCapacity       = "NoCapacity"
	// ReasonWaitingForInventory: none of the candidate clusters' agents has
	// published a HostInventory yet (a hub that just started, say).
	ReasonWaitingForInventory = "WaitingForInventory"
	ReasonRescheduling        = "Rescheduling"
	ReasonNoTenant            = "NoTenant"
	// ReasonHoldsHost: the claim holds a host but lost its cluster label;
	// the scheduler never places such a claim again.
	ReasonHoldsHost = "HoldsHost"
)

// Reasons of a Tenant's Ready condition.
const (
	ReasonRegistered        = "Registered"
	ReasonClusterSetMissing = "ClusterSetMissing"
	ReasonNamespaceConflict = "NamespaceConflict"
	ReasonDeletionBlocked   = "DeletionBlocked"
	// ReasonGrantRolesMissing: a ClusterRole the hub binds for the tenant's
	// admins and agents is not installed (the operator installs them with
	// the hub): the bindings exist but grant nothing.
	ReasonGrantRolesMissing = "GrantRolesMissing"
)

// ConditionWorkloadClusters on a Tenant says whether its workload clusters
// (accepted ManagedClusters labelled LabelTenant=<tenant>) let every claim's
// labels reach a Node: False, with what to do, when several are labelled
// (a claim naming none with AnnotationWorkloadCluster then syncs to no
// Node) or a labelled cluster is not accepted (it is ignored).
const (
	ConditionWorkloadClusters = "WorkloadClusters"
	// ReasonNoWorkloadCluster: no accepted cluster is labelled; no Node
	// labels are synced.
	ReasonNoWorkloadCluster = "NoWorkloadCluster"
	// ReasonOneWorkloadCluster: one is; claims sync to its Nodes unless
	// they name another.
	ReasonOneWorkloadCluster = "OneWorkloadCluster"
	// ReasonSeveralWorkloadClusters: several are; a claim that names none
	// syncs to no Node.
	ReasonSeveralWorkloadClusters = "SeveralWorkloadClusters"
	// ReasonWorkloadClusterNotAccepted: a labelled cluster is not accepted
	// by the hub (hubAcceptsClient false, or not joined): it is ignored.
	ReasonWorkloadClusterNotAccepted = "WorkloadClusterNotAccepted"
)

// ReservedLabelPrefixes are label prefixes that no Tenant may sync from
// BareMetalHosts: they belong to Kubernetes itself. Sub-domains of
// kubernetes.io that are not listed (for example "topology.kubernetes.io" or
// "example.kubernetes.io") are allowed.
var ReservedLabelPrefixes = []string{
	"kubernetes.io",
	"k8s.io",
	"kubelet.kubernetes.io",
	"beta.kubernetes.io",
}

// NodeSteeringLabelPrefixes are label prefixes that no Tenant may sync, nor
// any sub-domain of them: on a Node, labels there give it a role
// (node-role.kubernetes.io), lift the NodeRestriction admission plugin's
// guard (node-restriction.kubernetes.io: labels a kubelet may not set
// itself, which workloads trust for placement) or describe the Node to the
// scheduler and the node lifecycle controller (node.kubernetes.io).
var NodeSteeringLabelPrefixes = []string{
	"node-role.kubernetes.io",
	"node-restriction.kubernetes.io",
	"node.kubernetes.io",
}

// UnderPrefixes reports whether a label key lives under one of the prefixes
// (the part of the key before "/"). Label sync and scheduling use it alike.
func UnderPrefixes(key string, prefixes []string) bool {
	i := strings.IndexByte(key, '/')
	if i < 0 {
		return false
	}
	for _, p := range prefixes {
		if key[:i] == p {
			return true
		}
	}
	return false
}

// MaxConditionMessage bounds every condition message Hostfleet writes, well
// under the API's 32 KiB limit on metav1.Condition messages, so that a
// message built from user input (a long annotation, many cluster names)
// can never make a status write fail.
const MaxConditionMessage = 4096

// SetCondition is meta.SetStatusCondition with the message bounded to
// MaxConditionMessage bytes (cut at a rune boundary, marked with "…").
func SetCondition(conds *[]metav1.Condition, c metav1.Condition) {
	if len(c.Message) > MaxConditionMessage {
		cut := MaxConditionMessage - len("…")
		for cut > 0 && !utf8.RuneStart(c.Message[cut]) {
			cut--
		}
		c.Message = c.Message[:cut] + "…"
	}
	meta.SetStatusCondition(conds, c)
}

// PlacedMessage is the message of the Scheduled condition (Placed) of a
// claim the scheduler placed on cluster, whether its agent or the
// scheduler writes it.
func PlacedMessage(cluster string) string { return "placed on " + cluster }

// SaysPlaced reports whether the conditions hold Scheduled True, Placed.
func SaysPlaced(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, ConditionScheduled)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == ReasonPlaced
}

// Forwarding of remote claims (hostfleet.io/kind=remote) over ManifestWork.
const (
	// ForwarderFinalizer is put on a remote claim by the hub's forwarder;
	// it is removed only once the claim's ManifestWork, and so the target
	// claim on the managed cluster, is gone.
	ForwarderFinalizer = "hostfleet.io/forwarder"
	// FieldManagerForwarder is the field manager the OCM work agent applies
	// forwarded objects with (server-side apply) on the target cluster; OCM
	// requires it to start with "work-agent".
	FieldManagerForwarder = "work-agent-hostfleet"
	// AnnotationSourceClaim on a target claim is "<namespace>/<name>" of the
	// hub claim it was forwarded from; AnnotationSourceClaimUID is that
	// claim's UID. A Hostfleet agent serving the target copies the host's
	// HardwareData to that hub claim.
	AnnotationSourceClaim    = "hostfleet.io/source-claim"
	AnnotationSourceClaimUID = "hostfleet.io/source-claim-uid"
	// LabelHubNamespace on a target namespace names the hub namespace whose
	// claims it holds.
	LabelHubNamespace = "hostfleet.io/hub-namespace"
	// AnnotationRebootRequest on a target claim identifies a one-shot
	// reboot.metal3.io request forwarded from the hub; the agent serving the
	// target records the request it carried out in AnnotationRebootHandled,
	// so that a re-applied request reboots only once.
	AnnotationRebootRequest = "hostfleet.io/reboot-request"
	AnnotationRebootHandled = "hostfleet.io/reboot-handled"
)

// Reasons of the Forwarded condition of a remote claim, and of the Ready
// condition when the target's feedback cannot be trusted.
const (
	// ReasonTargetBound: the work is applied and the target claim is bound
	// to a host.
	ReasonTargetBound = "TargetBound"
	// ReasonTargetNotBound: the work is applied; the target claim is not
	// bound (yet).
	ReasonTargetNotBound = "TargetNotBound"
	// ReasonFeedbackPending: the work is applied; the work agent has not
	// reported the target's status yet.
	ReasonFeedbackPending = "FeedbackPending"
	// ReasonWorkNotApplied: the cluster's work agent has not applied the
	// work (none runs there, or it is down or refused).
	ReasonWorkNotApplied = "WorkNotApplied"
	// ReasonClusterUnavailable: the cluster's agents stopped reporting; the
	// last feedback is stale.
	ReasonClusterUnavailable = "ClusterUnavailable"
	// ReasonAgentUnavailable: the cluster's hostfleet-agent add-on, which
	// serves the target, is not Available: the target's status is not kept
	// current.
	ReasonAgentUnavailable = "AgentUnavailable"
	// ReasonFeedbackIncomplete: the target reports some of its status but
	// not what the hub needs (no Ready condition, say).
	ReasonFeedbackIncomplete = "FeedbackIncomplete"
	// ReasonWorkTooLarge: the work (the claim and its secrets) is over
	// OCM's ManifestWork size limit.
	ReasonWorkTooLarge = "WorkTooLarge"
	// ReasonWorkRefused: the hub's API server refused the work.
	ReasonWorkRefused = "WorkRefused"
	// ReasonSecretInvalid: a secret the claim references cannot be
	// forwarded (missing, in another namespace, or too large).
	ReasonSecretInvalid = "SecretInvalid"
	// ReasonNotPlaced: the claim has no cluster yet.
	ReasonNotPlaced = "NotPlaced"
	// ReasonWithdrawing: the claim is being deleted; its work and target
	// claim are being removed.
	ReasonWithdrawing = "Withdrawing"
)

// Label sync to the Nodes of workload clusters (the agent's workload role).
const (
	// RoleInfrastructure is the agent's role on a cluster with
	// BareMetalHosts: it binds the claims placed there. RoleWorkload is its
	// role on a workload cluster (ManagedCluster labelled LabelTenant): it
	// copies the tenant's claim labels to the Nodes that run on the hosts.
	RoleInfrastructure = "infrastructure"
	RoleWorkload       = "workload"

	// AnnotationNode on a hub claim names the Node that runs on its host,
	// when the tenant (or its Cluster API integration) knows it. It beats
	// every other way of finding the Node.
	AnnotationNode = "hostfleet.io/node"
	// AnnotationWorkloadCluster on a hub claim names the workload cluster
	// its Node is in. Needed only when the tenant has several workload
	// clusters: with one, that one is meant.
	AnnotationWorkloadCluster = "hostfleet.io/workload-cluster"
	// LabelLabelsPending on a Node (set at registration, with kubelet's
	// --node-labels) says the synced labels are not there yet; the agent
	// removes it once it has applied them, so that a negative node
	// selector can wait for it.
	LabelLabelsPending = "hostfleet.io/labels-pending"
	// FieldManagerLabelSync owns, on each Node, the labels the agent copied.
	FieldManagerLabelSync = "hostfleet-labelsync"

	// AgentWorkloadRole is the RoleBinding in each of a tenant's
	// namespaces of the agents of its workload clusters, to the ClusterRole
	// AgentWorkloadClusterRole; WorkloadClaimsPolicy the admission policy,
	// bound per tenant, on what they write there.
	AgentWorkloadRole        = "hostfleet-workload-agent"
	AgentWorkloadClusterRole = "hostfleet:workload-agent"
	WorkloadClaimsPolicy     = "hostfleet-workload-claims"
)

// ConditionNodeLabelsSynced on a hub claim, written by the agent of the
// tenant's workload cluster: whether the claim's labels under the tenant's
// prefixes are on the Node that runs on its host, and if not why.
const (
	ConditionNodeLabelsSynced = "NodeLabelsSynced"
	// ReasonLabelsSynced: the Node carries the claim's prefixed labels.
	ReasonLabelsSynced = "LabelsSynced"
	// ReasonNodeNotFound: no Node matches the claim (yet: kubelet may not
	// have registered it).
	ReasonNodeNotFound = "NodeNotFound"
	// ReasonNodeAmbiguous: several Nodes match the claim, or the Node also
	// matches another claim; nothing is guessed.
	ReasonNodeAmbiguous = "NodeAmbiguous"
	// ReasonLabelSyncFailed: the workload cluster refused the labels.
	ReasonLabelSyncFailed = "LabelSyncFailed"
)

// AnnotationPaused is baremetal-operator's pause annotation
// (baremetalhost.metal3.io/paused). On a claim it freezes the claim's host:
// see ReasonPaused.
const AnnotationPaused = "baremetalhost.metal3.io/paused"

// PausedBy is the value of a claim's pause annotation (who paused it, by
// Cluster API's convention; possibly empty) and whether it has one.
func PausedBy(annotations map[string]string) (string, bool) {
	v, ok := annotations[AnnotationPaused]
	return v, ok
}

// PausedMessage says who paused a claim (the annotation's value).
func PausedMessage(by string) string {
	if by == "" {
		return "paused (" + AnnotationPaused + " is set)"
	}
	return fmt.Sprintf("paused by %q (%s)", by, AnnotationPaused)
}

// SetPaused records on a claim's conditions whether it is paused: the
// Paused condition (True, naming who paused it and whether a deletion
// waits) while the annotation is there, none otherwise.
func SetPaused(conds *[]metav1.Condition, annotations map[string]string, deleting bool, generation int64) {
	by, ok := PausedBy(annotations)
	if !ok {
		meta.RemoveStatusCondition(conds, ConditionPaused)
		return
	}
	msg := PausedMessage(by) + ": Hostfleet changes nothing on the claim's host until the annotation is removed"
	if deleting {
		msg += "; the claim's deletion waits for it"
	}
	SetCondition(conds, metav1.Condition{Type: ConditionPaused, Status: metav1.ConditionTrue, Reason: ReasonPaused,
		Message: msg, ObservedGeneration: generation})
}
