package binder

import (
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Consumer is how a host's consumerRef names the claims this agent binds:
// hub claims, or claims local to the infrastructure cluster. Both are
// written as apiVersion hostfleet.io/v1alpha1, kind HostClaim, so that no
// other HostClaim controller on the cluster takes the binding for one of
// its own: baremetal-operator's matches consumerRefs of group metal3.io
// only, so it never adopts such a host, never clears its consumerRef when
// a claim of the same name goes, and never picks it while it is bound. A
// host bound to a hub claim also carries the hub's name in
// hostfleet.io/hub; one bound to a local claim carries none. Either way the
// claim's UID is in hostfleet.io/claim-uid, so a recreated claim of the
// same name never inherits a host.
type Consumer struct {
	APIVersion string
	Kind       string
	// Hub is the hub's name for hub claims, "" for local claims.
	Hub string
	// Legacy is an apiVersion also recognised, for hosts bound before the
	// current one was written (local claims' hosts once carried the
	// upstream metal3.io/v1alpha1); the agent rewrites it (Migrate).
	Legacy string
}

// HubConsumer names claims on the hub called hub.
func HubConsumer(hub string) Consumer {
	return Consumer{APIVersion: hostfleetv1alpha1.GroupVersion.String(), Kind: hostfleetv1alpha1.ConsumerKind, Hub: hub}
}

// LocalConsumer names upstream HostClaims on the infrastructure cluster itself.
func LocalConsumer() Consumer {
	return Consumer{APIVersion: hostfleetv1alpha1.GroupVersion.String(), Kind: hostfleetv1alpha1.ConsumerKind,
		Legacy: metal3api.GroupVersion.String()}
}

// Names reports whether a consumerRef is of this kind of claim.
func (c Consumer) Names(ref *corev1.ObjectReference) bool {
	return ref != nil && ref.Kind == c.Kind && (ref.APIVersion == c.APIVersion || c.Legacy != "" && ref.APIVersion == c.Legacy)
}

// Ref is the consumerRef written on a host bound to the claim.
func (c Consumer) Ref(claim *metal3api.HostClaim) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: c.APIVersion, Kind: c.Kind, Namespace: claim.Namespace, Name: claim.Name}
}

// Annotations are written on a host bound to the claim.
func (c Consumer) Annotations(claim *metal3api.HostClaim) map[string]string {
	a := map[string]string{hostfleetv1alpha1.AnnotationClaimUID: string(claim.UID)}
	if c.Hub != "" {
		a[hostfleetv1alpha1.AnnotationHub] = c.Hub
	}
	return a
}

// Bound reports whether this agent bound the host to a claim of this
// consumer's kind: its consumerRef is of that kind, it carries a claim's
// UID (a host another HostClaim controller bound carries none of this
// agent's) and the hub's name, or, for a local claim, no hub's name.
func (c Consumer) Bound(h *metal3api.BareMetalHost) bool {
	return c.Names(h.Spec.ConsumerRef) && h.Annotations[hostfleetv1alpha1.AnnotationClaimUID] != "" &&
		h.Annotations[hostfleetv1alpha1.AnnotationHub] == c.Hub
}

// Holds reports whether this agent bound the host to this claim.
func (c Consumer) Holds(h *metal3api.BareMetalHost, claim *metal3api.HostClaim) bool {
	ref := h.Spec.ConsumerRef
	return c.Bound(h) && ref.Namespace == claim.Namespace && ref.Name == claim.Name &&
		h.Annotations[hostfleetv1alpha1.AnnotationClaimUID] == string(claim.UID)
}

// IsLegacy reports whether a host this agent bound carries the Legacy
// apiVersion, which the agent rewrites to the current one (a host bound
// to a local claim before its consumerRef moved out of group metal3.io,
// where baremetal-operator's HostClaim controller could take it).
func (c Consumer) IsLegacy(h *metal3api.BareMetalHost) bool {
	return c.Legacy != "" && c.Bound(h) && h.Spec.ConsumerRef.APIVersion == c.Legacy
}

// Upstream reports whether a consumerRef is upstream metal3's HostClaim
// (group metal3.io, kind HostClaim): what baremetal-operator's HostClaim
// controller writes, and recognises as its own.
func Upstream(ref *corev1.ObjectReference) bool {
	return ref != nil && ref.Kind == "HostClaim" && ref.GroupVersionKind().Group == metal3api.GroupVersion.Group
}

// BoundByOther reports whether another HostClaim controller bound the host
// to the claim: an upstream consumerRef naming the claim without the
// claim's UID from this agent.
func BoundByOther(h *metal3api.BareMetalHost, claim *metal3api.HostClaim) bool {
	ref := h.Spec.ConsumerRef
	return Upstream(ref) && ref.Namespace == claim.Namespace && ref.Name == claim.Name &&
		h.Annotations[hostfleetv1alpha1.AnnotationClaimUID] != string(claim.UID)
}
