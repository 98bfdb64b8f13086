package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HealingAction is what happens to a claim whose host fails.
// +kubebuilder:validation:Enum=Notify;Replace
type HealingAction string

const (
	// HealingNotify only reports a failed host: the claim's HostHealthy
	// condition, a Warning Event and the agent's metric.
	HealingNotify HealingAction = "Notify"
	// HealingReplace fences a failed host (powered off, confirmed),
	// quarantines it and binds the claim to another host.
	HealingReplace HealingAction = "Replace"
)

// Healing is a tenant's policy for claims whose hosts fail: the default of
// every claim, which a claim may override within its bounds with
// AnnotationHealing.
type Healing struct {
	// Action is what a failed host leads to: Notify (the default) or
	// Replace.
	// +optional
	Action HealingAction `json:"action,omitempty"`

	// Grace is how long a host stays failed before it is replaced; a
	// claim may ask for longer, never shorter. Default 5m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(h|m|s))+$`
	Grace *metav1.Duration `json:"grace,omitempty"`

	// MaxReplacementsPerDay caps the replacements of one claim's host in
	// any 24 hours. Default 3.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MaxReplacementsPerDay *int32 `json:"maxReplacementsPerDay,omitempty"`

	// AllowUnfenced lets a claim ask (AnnotationHealing "unfenced") that
	// its host be replaced even when it cannot be confirmed off, such as
	// when its BMC does not answer. That is the tenant's risk: two machines
	// may then run the same disk image with the same addresses. Default
	// false: a host not confirmed off is never replaced.
	// +optional
	AllowUnfenced bool `json:"allowUnfenced,omitempty"`

	// NodeNotReady counts a claim's Node on the tenant's workload cluster
	// (found as for label sync: its NodeReady condition) that is not Ready
	// as a failure of the claim's host, judged as any other: the grace,
	// then Replace. Only a Node that went NotReady after the host was
	// bound counts, never the Node of a host the claim had before. It is
	// the tenant's own word: each such failure quarantines a host, within
	// the daily cap and the cluster's breaker. Default false.
	// +optional
	NodeNotReady bool `json:"nodeNotReady,omitempty"`
}

// AnnotationHealing on a claim overrides its tenant's healing policy
// within the tenant's bounds: "Notify" or "Replace", then optionally
// ",grace=<duration>" (no shorter than the tenant's) and ",unfenced" (only
// where the tenant allows it), such as "Replace,grace=10m".
const AnnotationHealing = "hostfleet.io/healing"

// AnnotationReplacements on a claim is the agent's record of the claim's
// host replacements (JSON: healing.Record): how many, and the last ones
// with when, which host failed and which took its place. Only the agent
// writes it (admission).
const AnnotationReplacements = "hostfleet.io/replacements"

// AnnotationQuarantined on a BareMetalHost keeps it out of the pool after
// the agent replaced it for a claim (JSON: healing.Quarantine: when, for
// which claim, and why). Nothing binds it until a cluster administrator
// removes the annotation (kubectl hostfleet quarantine return); its
// release, erase included, then completes as for any released host.
const AnnotationQuarantined = "hostfleet.io/quarantined"
