package v1alpha1

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EraseMode is what is erased from a host when its claim lets it go.
// +kubebuilder:validation:Enum=None;Metadata;Full
type EraseMode string

const (
	EraseNone     EraseMode = "None"
	EraseMetadata EraseMode = "Metadata"
	EraseFull     EraseMode = "Full"
)

// TenantSpec is what a hub administrator registers for a consumer of hosts.
// +kubebuilder:validation:XValidation:rule="!has(self.quotas) || self.quotas.all(q, (!has(q.hostSelector.matchLabels) || q.hostSelector.matchLabels.all(k, has(self.labelSyncPrefixes) && self.labelSyncPrefixes.exists(p, k.startsWith(p + '/')))) && (!has(q.hostSelector.matchExpressions) || q.hostSelector.matchExpressions.all(e, has(self.labelSyncPrefixes) && self.labelSyncPrefixes.exists(p, e.key.startsWith(p + '/')))))",message="a class's hostSelector may use only label keys under the tenant's labelSyncPrefixes: the hub sees no other host labels"
type TenantSpec struct {
	// Namespaces are the hub namespaces that belong to the tenant. The tenant
	// controller creates them and labels them hostfleet.io/tenant=<name>; the
	// tenant's HostClaims and their secrets live there. Empty means one
	// namespace named "tenant-<name>".
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespaces []string `json:"namespaces,omitempty"`

	// Admins are the users, groups and service accounts that manage the
	// tenant's claims: they may edit HostClaims and Secrets and view
	// HardwareData in the tenant's namespaces, and nothing else.
	// +optional
	// +listType=atomic
	Admins []rbacv1.Subject `json:"admins,omitempty"`

	// ClusterSet is the OCM ManagedClusterSet whose clusters serve the tenant.
	// The tenant controller binds it into each tenant namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ClusterSet string `json:"clusterSet"`

	// LabelSyncPrefixes are the BareMetalHost label prefixes (the part of a
	// label key before "/") that the tenant sees: labels under them are copied
	// from a bound host to its claim on the hub, and from the claim to its
	// Node on the tenant's workload clusters (ManagedClusters labelled
	// hostfleet.io/tenant=<tenant>). Removing a prefix stops syncing it:
	// labels already copied under it are left as they are.
	// The Kubernetes prefixes kubernetes.io, k8s.io, kubelet.kubernetes.io and
	// beta.kubernetes.io are refused; other sub-domains of kubernetes.io are
	// allowed, except node-role.kubernetes.io, node-restriction.kubernetes.io,
	// node.kubernetes.io and their sub-domains, which would let a host's
	// labels give its Node a role, forge a label the NodeRestriction plugin
	// keeps from kubelets, or steer the scheduler. hostfleet.io and its
	// sub-domains are refused.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self.all(p, !(p in ['kubernetes.io', 'k8s.io', 'kubelet.kubernetes.io', 'beta.kubernetes.io']))",message="kubernetes.io, k8s.io, kubelet.kubernetes.io and beta.kubernetes.io are reserved for Kubernetes; use your own prefix (sub-domains such as example.kubernetes.io are allowed)"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !['node-role.kubernetes.io', 'node-restriction.kubernetes.io', 'node.kubernetes.io'].exists(r, p == r || p.endsWith('.' + r)))",message="node-role.kubernetes.io, node-restriction.kubernetes.io, node.kubernetes.io and their sub-domains steer Nodes: a host label there could give a Node a role, forge a label the NodeRestriction admission plugin keeps from kubelets, or steer the scheduler; use your own prefix"
	// +kubebuilder:validation:XValidation:rule="self.all(p, p != 'hostfleet.io' && !p.endsWith('.hostfleet.io'))",message="hostfleet.io and its sub-domains are Hostfleet's own labels and cannot be synced from hosts"
	LabelSyncPrefixes []string `json:"labelSyncPrefixes,omitempty"`

	// MaxClaims caps the number of HostClaims in each of the tenant's
	// namespaces. It is enforced at admission with a ResourceQuota. Unset
	// means no cap.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxClaims *int32 `json:"maxClaims,omitempty"`

	// Erase is what a host bound to one of the tenant's claims has erased
	// when the claim lets it go, at least: Metadata (partition tables and
	// file system signatures: baremetal-operator's automatedCleaningMode
	// metadata, or the agent's erase image), Full (every disk: the
	// agent's erase image; hosts that cannot are not bound) or None. A
	// claim may ask for more (hostfleet.io/erase), never less; an
	// infrastructure cluster's agent may enforce more (--erase). Unset:
	// None.
	// +optional
	Erase EraseMode `json:"erase,omitempty"`

	// MaxLeaseDuration caps how long a claim may hold a host, counted from
	// the claim's creation to its lease end (hostfleet.io/lease-until). A
	// claim with no end gets this one; an end beyond it is refused at
	// admission. Unset: no cap, and a claim without an end keeps its host
	// until it is deleted.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(h|m|s))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="maxLeaseDuration is a Go duration of at least 1m, such as 720h"
	MaxLeaseDuration *metav1.Duration `json:"maxLeaseDuration,omitempty"`

	// LeaseWarning is how long before a lease ends its claim says
	// LeaseExpiring (a condition and an Event). Default 1h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(h|m|s))+$`
	LeaseWarning *metav1.Duration `json:"leaseWarning,omitempty"`

	// Healing is what happens to the tenant's claims whose hosts fail
	// (docs/service.md#claims-that-heal). Unset: Notify.
	// +optional
	Healing *Healing `json:"healing,omitempty"`

	// Quotas cap the tenant's claims per host class. A claim counts
	// against every class whose hostSelector matches its bound host's
	// labels or, before it is bound, the labels its own hostSelector asks
	// for. A claim that would take a class over its maxClaims is not
	// placed (ClassQuotaExceeded) until the class has room; a claim that
	// does not ask for a full class is kept off its hosts. Selector keys
	// must be under the tenant's labelSyncPrefixes: the hub sees no other
	// host labels.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Quotas []ClassQuota `json:"quotas,omitempty"`
}

// ClassSelector selects hosts by label, as a metav1.LabelSelector does (the
// requirements are ANDed), and by hardware; bounded, so that admission can
// check it.
// +kubebuilder:validation:XValidation:rule="has(self.matchLabels) || has(self.matchExpressions) || has(self.hardware)",message="a class's hostSelector selects something: give matchLabels, matchExpressions or hardware"
type ClassSelector struct {
	// MatchLabels are labels a host of the class carries, with these
	// values.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// MatchExpressions are requirements on a host's labels.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	MatchExpressions []ClassRequirement `json:"matchExpressions,omitempty"`

	// Hardware selects hosts by their hardware, as a claim's
	// hostfleet.io/hardware does: a CEL expression over host (the
	// hardware view v1), such as "host.gpus.size() > 0". A claim is of
	// the class when its host's hardware profile meets it; before it is
	// bound, when every profile of the fleet that meets the claim's own
	// requirement meets it.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Hardware string `json:"hardware,omitempty"`
}

// ClassRequirement is one requirement of a ClassSelector.
// +kubebuilder:validation:XValidation:rule="(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",message="In and NotIn take values; Exists and DoesNotExist take none"
type ClassRequirement struct {
	// Key is the label key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Key string `json:"key"`
	// Operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// Values, for In and NotIn.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	Values []string `json:"values,omitempty"`
}

// LabelSelector is the selector as a metav1.LabelSelector.
func (s ClassSelector) LabelSelector() *metav1.LabelSelector {
	out := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, e := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: e.Values})
	}
	return out
}

// ClassQuota caps the claims of one class of hosts.
type ClassQuota struct {
	// Name names the class in conditions, metrics and kubectl hostfleet.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// HostSelector selects the class's hosts by their labels.
	HostSelector ClassSelector `json:"hostSelector"`

	// MaxClaims is how many of the tenant's claims the class may hold.
	// +kubebuilder:validation:Minimum=0
	MaxClaims int32 `json:"maxClaims"`
}

// TenantStatus is what the tenant controller observed and made.
type TenantStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready says whether the namespaces, RBAC and cluster set
	// binding exist; its message says what is missing or wrong.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Namespaces are the tenant namespaces that exist now.
	// +optional
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`

	// Clusters are the managed clusters currently in the tenant's cluster
	// set. Admission policies read them (the Tenant is their parameter).
	// +optional
	// +listType=set
	Clusters []string `json:"clusters,omitempty"`

	// UnavailableClusters are those of Clusters whose ManagedCluster is not
	// Available: only while its cluster is listed here (or has left the
	// set) may anyone but the hub and the cluster's agent strip the
	// finalizers of a claim placed there (kubectl hostfleet
	// forget-cluster; admission policy hostfleet-claim-finalizers).
	// +optional
	// +listType=set
	UnavailableClusters []string `json:"unavailableClusters,omitempty"`

	// WorkloadClusters are the managed clusters labelled
	// hostfleet.io/tenant=<this tenant>: clusters whose Nodes run on the
	// tenant's hosts. Their agents (workload role) may read the tenant's
	// claims and HardwareData copies and report NodeLabelsSynced on its
	// claims, and copy the claims' prefixed labels to the Nodes.
	// +optional
	// +listType=set
	WorkloadClusters []string `json:"workloadClusters,omitempty"`

	// Claims is the number of HostClaims in the tenant's namespaces.
	// +optional
	Claims int32 `json:"claims,omitempty"`

	// ReadyClaims is the number of those claims whose Ready condition is True.
	// +optional
	ReadyClaims int32 `json:"readyClaims,omitempty"`

	// Classes are the tenant's claims per host class (spec.quotas), as
	// the scheduler counts them.
	// +optional
	// +listType=map
	// +listMapKey=name
	Classes []ClassUsage `json:"classes,omitempty"`
}

// ClassUsage is how many claims a host class holds.
type ClassUsage struct {
	// Name is the class's name in spec.quotas.
	Name string `json:"name"`
	// Claims are the claims counting against the class.
	Claims int32 `json:"claims"`
	// MaxClaims is the class's cap.
	MaxClaims int32 `json:"maxClaims"`
}

// Tenant registers a consumer of hosts on the hub: its namespaces, its
// administrators, the clusters that serve it and the host labels it sees.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=hostfleet
// +kubebuilder:printcolumn:name="ClusterSet",type=string,JSONPath=`.spec.clusterSet`
// +kubebuilder:printcolumn:name="MaxClaims",type=integer,JSONPath=`.spec.maxClaims`
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.status.workloadClusters`,priority=1
// +kubebuilder:printcolumn:name="Claims",type=integer,JSONPath=`.status.claims`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantSpec   `json:"spec"`
	Status TenantStatus `json:"status,omitempty"`
}

// DefaultNamespaces is the namespaces of the tenant: spec.namespaces, or
// "tenant-<name>" when that is empty.
func (t *Tenant) DefaultNamespaces() []string {
	if len(t.Spec.Namespaces) > 0 {
		return t.Spec.Namespaces
	}
	return []string{"tenant-" + t.Name}
}

// TenantList is a list of Tenants.
//
// +kubebuilder:object:root=true
type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenant `json:"items"`
}

func init() {
	objects = append(objects, &Tenant{}, &TenantList{})
}
