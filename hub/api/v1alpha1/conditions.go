package v1alpha1

// Condition types and their reasons, by condition. Reasons are CamelCase and
// stable: tools may match on them; hub/api/advice says what each means and
// what to do.

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

// ConditionFirmwareBaseline on a driven BareMetalHost is the release gate's
// record: InUse while a claim holds the host (it is judged when released),
// Current once it matches the FirmwareBaselines that select it, Restoring
// while the driver puts back what a tenant changed, and RestoreFailed,
// Unverifiable or BaselineConflict while the host is held out of the pool.
const (
	ConditionFirmwareBaseline = "FirmwareBaseline"
	ReasonBaselineInUse       = "InUse"
	ReasonBaselineCurrent     = "Current"
	ReasonRestoring           = "Restoring"
	ReasonRestoreFailed       = "RestoreFailed"
	ReasonUnverifiable        = "Unverifiable"
	ReasonBaselineConflict    = "BaselineConflict"
)

// ConditionHardwareHealthy on a driven BareMetalHost is the system's health
// as its BMC reports it with each power read (Redfish's Status.Health and
// HealthRollup, IPMI's chassis faults): True (ReasonHealthOK), or False
// with ReasonHealthWarning or ReasonHealthCritical and the BMC's words.
// Absent while the BMC says nothing of it. A Critical host has failed
// (agent/heal.Judge).
const (
	ConditionHardwareHealthy = "HardwareHealthy"
	ReasonHealthOK           = "HealthOK"
	ReasonHealthWarning      = "HealthWarning"
	ReasonHealthCritical     = "HealthCritical"
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
	// ReasonEraseUnsupported: free matching hosts exist, but none can
	// erase at release what the claim's erase policy asks.
	ReasonEraseUnsupported = "EraseUnsupported"
	// ReasonNoDeployPolicy: no HostDeployPolicy on the cluster admits the
	// claim's namespace.
	ReasonNoDeployPolicy = "NoHostDeployPolicy"
	// ReasonInvalidSelector: the claim's hostSelector cannot be evaluated.
	ReasonInvalidSelector = "InvalidHostSelector"
	// ReasonInvalidHardware, on Scheduled (and the agent's Associated):
	// the claim's AnnotationHardware does not parse or may cost too much.
	ReasonInvalidHardware = "InvalidHardwareRequirement"
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

// Reasons the agent writes from the bound host's state (agent/hoststatus):
// Provisioned, AvailableForProvisioning, Ready.
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
	// ReasonPlaced: on the cluster the scheduler chose (its label), the
	// scheduler's condition written right after it.
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

// ConditionLeaseExpiring on a hub claim with a lease
// (AnnotationLeaseUntil), written by the hub's lease controller: True
// within the tenant's leaseWarning of the end, with when it ends and how to
// extend it; False (reason ReasonLeaseActive) before.
const (
	ConditionLeaseExpiring = "LeaseExpiring"
	// ReasonLeaseActive: the lease ends later than the warning.
	ReasonLeaseActive = "LeaseActive"
	// ReasonLeaseEnding: the lease ends within the warning.
	ReasonLeaseEnding = "LeaseEnding"
	// ReasonLeaseEnded: the lease has ended; the hub deleted the claim and
	// its host is being released.
	ReasonLeaseEnded = "LeaseEnded"
	// ReasonLeaseInvalid: the lease's annotations do not parse (only a
	// cluster administrator can write such, admission refuses them); the
	// claim keeps its host.
	ReasonLeaseInvalid = "LeaseInvalid"
)

// ConditionMaintenanceRequested on a hub claim whose host is under a
// HostMaintenance, written by the hub's maintenance controller: True while
// the maintenance waits for the claim (with the deadline, the policy and
// how to approve), False once it is complete.
const (
	ConditionMaintenanceRequested = "MaintenanceRequested"
	// ReasonMaintenanceOwnerApproval: the host is released when the tenant
	// approves or deletes the claim.
	ReasonMaintenanceOwnerApproval = "OwnerApprovalRequested"
	// ReasonMaintenanceEnforced: the hub releases the claim at the
	// deadline.
	ReasonMaintenanceEnforced = "ReleaseAtDeadline"
	// ReasonMaintenanceReleased: approved, or past an Enforced deadline:
	// the hub deleted the claim.
	ReasonMaintenanceReleased = "ReleasedForMaintenance"
	// ReasonMaintenanceComplete: the maintenance ended with the claim
	// still holding its host.
	ReasonMaintenanceComplete = "MaintenanceComplete"
	// ReasonMaintenanceNotSelected, on a Warning Event of a HostMaintenance:
	// its cluster's agent lists a claim whose host the hub cannot confirm
	// the maintenance selects; the claim is neither asked nor released.
	ReasonMaintenanceNotSelected = "ClaimNotSelected"
)

// ReasonClassQuotaExceeded, on the Scheduled and Ready conditions of a
// claim the scheduler holds back: placing it would take one of its
// tenant's host classes over the class's maxClaims. It is placed as soon
// as the class has room.
const ReasonClassQuotaExceeded = "ClassQuotaExceeded"

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
	// ReasonInvalidHostClass: a host class's selector (spec.quotas) does not
	// compile: the scheduler places none of the tenant's claims meanwhile.
	ReasonInvalidHostClass = "InvalidHostClass"
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

// ConditionNodeReady on a hub claim, written by the agent of the tenant's
// workload cluster with NodeLabelsSynced: the readiness of the one Node
// found for the claim, absent while none (or several) is found. A tenant
// whose spec.healing.nodeNotReady is set counts it False as its host
// failed.
const (
	ConditionNodeReady = "NodeReady"
	// ReasonNodeReady: the Node's Ready condition is True.
	ReasonNodeReady = "NodeReady"
	// ReasonNodeNotReady: the Node's Ready condition is False or Unknown
	// (its kubelet stopped reporting), or missing.
	ReasonNodeNotReady = "NodeNotReady"
)

// ConditionUsageAccepted on a HostUsage, written by the hub: whether it
// took every interval and open host of the cluster's report into the
// cluster's UsageLedger. The reasons of the refusals name an Event each on
// the HostUsage and label hostfleet_usage_refused_total.
const (
	ConditionUsageAccepted = "Accepted"
	// ReasonUsageAccepted: everything the report holds was taken (or had
	// been, and was taken once).
	ReasonUsageAccepted = "ReportAccepted"
	// ReasonUsageRefused: the message names what was refused and why.
	ReasonUsageRefused = "IntervalsRefused"
	// ReasonUsageUnknownClaim: no claim with the interval's UID was placed
	// on the cluster, as far as the hub remembers (--usage-memory).
	ReasonUsageUnknownClaim = "UnknownClaim"
	// ReasonUsageOutsidePlacement: the interval lies outside the time the
	// claim was placed on the cluster.
	ReasonUsageOutsidePlacement = "OutsidePlacement"
	// ReasonUsageWrongNamespace: the interval names another namespace than
	// the claim's.
	ReasonUsageWrongNamespace = "WrongNamespace"
	// ReasonUsageInvalid: the interval ends before it starts, or in the
	// future.
	ReasonUsageInvalid = "InvalidInterval"
)

// ConditionHostHealthy on a claim says what the agent judges of its bound
// host: True while it is healthy or degraded (it still serves), False once
// it failed, with the evidence, since when (lastTransitionTime) and what
// the claim's healing policy does about it.
const (
	ConditionHostHealthy = "HostHealthy"
	// ReasonHealthy: nothing is wrong with the host.
	ReasonHealthy = "Healthy"
	// ReasonDegraded: the host reports an error that does not stop it
	// serving (a provisioning or registration error, say): reported, never
	// replaced.
	ReasonDegraded = "Degraded"
	// ReasonHostFailed: the host failed; the policy is Notify, or the grace
	// has not passed yet (the message says when it does).
	ReasonHostFailed = "HostFailed"
	// ReasonFencing: the host is being powered off before it is replaced.
	ReasonFencing = "Fencing"
	// ReasonFenceUnconfirmed: the host cannot be confirmed off (its BMC
	// does not answer): it is not replaced.
	ReasonFenceUnconfirmed = "FenceUnconfirmed"
	// ReasonReplacementPaused: too many of the cluster's bound hosts failed
	// within the breaker's window (a rack or a switch, not the hosts):
	// replacement waits for an administrator.
	ReasonReplacementPaused = "ReplacementPaused"
	// ReasonReplacementLimit: the claim's host was replaced as often as its
	// tenant allows in 24 hours.
	ReasonReplacementLimit = "ReplacementLimit"
	// ReasonReplacing: the failed host is confirmed off and quarantined
	// (False); the claim's new host takes its place until Ready (True).
	// Also Ready's reason from the fence to the new host's Ready.
	ReasonReplacing = "ReplacingHost"
	// ReasonInvalidHealing: AnnotationHealing does not parse or is outside
	// the tenant's bounds: the tenant's policy applies.
	ReasonInvalidHealing = "InvalidHealingPolicy"
)
