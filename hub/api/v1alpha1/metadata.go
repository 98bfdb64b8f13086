package v1alpha1

// Labels and annotations Hostfleet reads and writes, by the object that
// carries them.

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
	// AnnotationPlacedAt is when the scheduler placed the claim on its
	// cluster, or admitted its tenant's pin (RFC 3339, the hub's clock):
	// the start of the time the hub counts the claim's host use there.
	// Only the hub sets it (admission).
	AnnotationPlacedAt = "hostfleet.io/placed-at"
	// PlacedByScheduler is AnnotationPlacedBy's value.
	PlacedByScheduler = "scheduler"
	// AnnotationExcluded lists clusters that did not bind the claim in time.
	AnnotationExcluded = "hostfleet.io/excluded-clusters"
)

// Leases on hub claims (docs/service.md). Only the hub decides when a lease
// ends: agents never read these.
const (
	// AnnotationLeaseUntil is when the claim's lease ends (RFC 3339). At
	// that time the hub deletes the claim, and its host is released as for
	// any deletion. A tenant may set it at creation and move it later
	// (kubectl hostfleet extend), within the tenant's maxLeaseDuration
	// counted from the claim's creation; never earlier.
	AnnotationLeaseUntil = "hostfleet.io/lease-until"
	// AnnotationLeaseFor is a lease length (a Go duration, "72h"): the
	// hub turns it into AnnotationLeaseUntil, counted from the claim's
	// creation, and removes it. Admission checks it against the cap.
	AnnotationLeaseFor = "hostfleet.io/lease-for"
	// AnnotationReleasedBy on a claim the hub deleted says why: the value
	// is ReleasedByLease, with the end in AnnotationLeaseUntil.
	AnnotationReleasedBy = "hostfleet.io/released-by"
	// ReleasedByLease is AnnotationReleasedBy's value for a lease that
	// ended.
	ReleasedByLease = "lease-ended"
	// ReleasedByMaintenance prefixes AnnotationReleasedBy's value for a
	// claim released for a HostMaintenance: maintenance/<cluster>/<name>.
	ReleasedByMaintenance = "maintenance"
)

// AnnotationErase: on a claim, the erase its tenant asks for at release
// (EraseMode; never less than the Tenant's spec.erase: admission); on a
// BareMetalHost the agent's BMC driver drives, the erase its release
// requires, written by the agent with the binding and removed by the
// driver once the host has erased itself. A host carrying it is never
// bound.
const AnnotationErase = "hostfleet.io/erase"

// The release gate, on a BareMetalHost the agent's BMC driver drives:
// AnnotationRestore is the restore to its FirmwareBaselines under way
// after its release (JSON: phase, update tasks, what was found), written
// and removed by the driver; a host carrying it is never bound. A held
// host keeps it (phase "held") until its administrator removes it: the
// host is then judged again. AnnotationBaselineObserved is what its BMC
// read at inspection and when the host was last freed (JSON): what a
// tenant changed since shows as drifted.
const (
	AnnotationRestore          = "hostfleet.io/restore"
	AnnotationBaselineObserved = "hostfleet.io/baseline-observed"
)

// Maintenance: a BareMetalHost's AnnotationMaintenance names the
// HostMaintenance (on the hub, in the cluster's namespace) that holds it
// out of the pool, written by the agent; a tenant approves a maintenance
// of its claim's host with AnnotationMaintenanceApproved: "true" on the
// claim.
const (
	AnnotationMaintenance         = "hostfleet.io/maintenance"
	AnnotationMaintenanceApproved = "hostfleet.io/maintenance-approved"
)

// AnnotationExcludedHosts on a hub claim, set by the scheduler when it
// places the claim, lists as JSON the host selectors (metav1.LabelSelector)
// of the tenant's host classes that were full: the agent binds no host
// that any of them matches, so that the claim does not overrun a class it
// did not ask for. Only the hub sets it (admission).
const AnnotationExcludedHosts = "hostfleet.io/excluded-hosts"

// Taints: a BareMetalHost's AnnotationTaints (comma-separated keys, set by
// the infrastructure cluster's administrator) keeps it for the claims whose
// AnnotationTolerations name every one of them. The agent publishes the
// taints of its pools in the HostInventory.
const (
	AnnotationTaints      = "hostfleet.io/taints"
	AnnotationTolerations = "hostfleet.io/tolerations"
)

// AnnotationHardware: on a claim, what its host's hardware must be, a CEL
// expression over host, a HardwareView (hardware.Parse), such as
// host.cpu.count >= 64. A host not yet inspected meets none.
const AnnotationHardware = "hostfleet.io/hardware"

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
	// AnnotationBoundAt is when the agent bound the host to the claim that
	// holds it (RFC 3339, the agent's clock): the start of the open
	// interval in the cluster's HostUsage.
	AnnotationBoundAt = "hostfleet.io/bound-at"
	// AnnotationBoundFor is the hub namespace of the claim the interval is
	// counted for: the claim's, or, for a claim forwarded from the hub, its
	// source's.
	AnnotationBoundFor = "hostfleet.io/bound-for"
	// AnnotationBoundClaim is the UID of that claim (for a forwarded one,
	// its source's): the hub counts an interval only for a claim it placed
	// on the cluster.
	AnnotationBoundClaim = "hostfleet.io/bound-claim"
	// AnnotationUsage is the host's own record of the intervals it was
	// bound (JSON, a list of UsageInterval), added to by the agent in the
	// write that releases the host, and kept until the hub has settled them
	// (HostUsage status.settled): an interval closed while the hub is out
	// of reach waits there.
	AnnotationUsage = "hostfleet.io/usage"
)

// AnnotationDriver on a BareMetalHost ("bmclib") asks the agent's BMC
// driver to drive the host (no baremetal-operator manages it).
const (
	AnnotationDriver = "hostfleet.io/driver"
	// DriverBMCLib is the value of AnnotationDriver for the agent's driver.
	DriverBMCLib = "bmclib"
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

// AnnotationPaused is baremetal-operator's pause annotation
// (baremetalhost.metal3.io/paused). On a claim it freezes the claim's host:
// see ReasonPaused.
const AnnotationPaused = "baremetalhost.metal3.io/paused"
