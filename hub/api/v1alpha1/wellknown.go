package v1alpha1

import "strings"

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

	// LabelTenant marks the hub namespaces that belong to a tenant; its value
	// is the Tenant's name.
	LabelTenant = "hostfleet.io/tenant"
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
)

// AnnotationAllowDetach on a HostDeployPolicy ("true") lets the claims it
// admits detach their hosts with baremetalhost.metal3.io/detached; without it
// the agent does not pass that annotation on.
const AnnotationAllowDetach = "hostfleet.io/allow-detach"

// ConsumerKind is the kind written in the consumerRef of a BareMetalHost held
// by a hub claim, with apiVersion GroupVersion.String() and the claim's hub
// namespace and name.
const ConsumerKind = "HostClaim"

// AgentFinalizer is put on hub claims by the agent that binds them; it is
// removed only after the host has been released.
const AgentFinalizer = "hostfleet.io/agent"

// Condition types on hub HostClaims. Ready summarises the others.
const (
	ConditionScheduled                = "Scheduled"
	ConditionAssociated               = "Associated"
	ConditionSynchronized             = "Synchronized"
	ConditionProvisioned              = "Provisioned"
	ConditionAvailableForProvisioning = "AvailableForProvisioning"
	ConditionForwarded                = "Forwarded"
	ConditionReady                    = "Ready"
)

// Condition reasons. They are CamelCase and stable: tools may match on them.
const (
	// ReasonHostAssociated: a BareMetalHost is bound to the claim.
	ReasonHostAssociated = "BareMetalHostAssociated"
	// ReasonNoHostAvailable: no free BareMetalHost matches the claim yet.
	ReasonNoHostAvailable = "NoBareMetalHostAvailable"
	// ReasonNoDeployPolicy: no HostDeployPolicy on the cluster admits the
	// claim's namespace.
	ReasonNoDeployPolicy = "NoHostDeployPolicy"
	// ReasonInvalidSelector: the claim's hostSelector cannot be evaluated.
	ReasonInvalidSelector = "InvalidHostSelector"
	// ReasonBinding: a host is reserved for the claim and being bound.
	ReasonBinding = "Binding"
	// ReasonReleasing: the claim is being deleted and its host released.
	ReasonReleasing = "Releasing"
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
