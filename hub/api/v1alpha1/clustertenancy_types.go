package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenancyName names the ClusterTenancy in each cluster's namespace.
const TenancyName = "tenancy"

// ServedTenant is what a cluster's agent needs of one tenant.
type ServedTenant struct {
	// Name is the Tenant's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespaces are the tenant's hub namespaces (the Tenant's
	// status.namespaces).
	// +optional
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`
	// NamespaceLabels are the labels each of Namespaces has on the hub:
	// what the agent matches its HostDeployPolicies' hasLabels against.
	// Agents read no Namespace on the hub.
	// +optional
	// +listType=map
	// +listMapKey=name
	NamespaceLabels []NamespaceLabels `json:"namespaceLabels,omitempty"`

	// LabelSyncPrefixes are the tenant's label sync prefixes (the Tenant's
	// spec.labelSyncPrefixes).
	// +optional
	// +listType=set
	LabelSyncPrefixes []string `json:"labelSyncPrefixes,omitempty"`

	// Erase is the tenant's spec.erase: the least a host bound to its
	// claims has erased when the claim lets it go.
	// +optional
	Erase EraseMode `json:"erase,omitempty"`

	// Healing is the tenant's spec.healing.
	// +optional
	Healing *Healing `json:"healing,omitempty"`

	// OnlyWorkloadCluster, in workloadTenants, says the cluster is the
	// tenant's only workload cluster: claims that name none are its.
	// +optional
	OnlyWorkloadCluster bool `json:"onlyWorkloadCluster,omitempty"`
}

// NamespaceLabels are the labels of one hub namespace.
type NamespaceLabels struct {
	// Name is the namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Labels are its labels.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// ClusterTenancySpec is the tenants a cluster serves, as the hub's tenant
// controller last saw them.
type ClusterTenancySpec struct {
	// ClusterName is the managed cluster; it equals the namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable"
	ClusterName string `json:"clusterName"`

	// Tenants are the tenants whose cluster set holds the cluster: its
	// agent serves their claims.
	// +optional
	// +listType=map
	// +listMapKey=name
	Tenants []ServedTenant `json:"tenants,omitempty"`

	// WorkloadTenants are the tenants whose workload cluster it is
	// (ManagedCluster label hostfleet.io/tenant): its agent copies their
	// claims' labels to its Nodes.
	// +optional
	// +listType=map
	// +listMapKey=name
	WorkloadTenants []ServedTenant `json:"workloadTenants,omitempty"`

	// FirmwareBaselines are the hub's FirmwareBaselines: what the agent
	// holds a released host to before it is free again.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	FirmwareBaselines []ServedBaseline `json:"firmwareBaselines,omitempty"`
}

// ServedBaseline is one FirmwareBaseline as its agent reads it.
type ServedBaseline struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string               `json:"name"`
	Spec FirmwareBaselineSpec `json:"spec"`
}

// Baselines are the FirmwareBaselines the ClusterTenancy carries.
// Nil-safe.
func (c *ClusterTenancy) Baselines() []FirmwareBaseline {
	if c == nil {
		return nil
	}
	out := make([]FirmwareBaseline, 0, len(c.Spec.FirmwareBaselines))
	for _, b := range c.Spec.FirmwareBaselines {
		out = append(out, FirmwareBaseline{ObjectMeta: metav1.ObjectMeta{Name: b.Name}, Spec: b.Spec})
	}
	return out
}

// ClusterTenancy is what a cluster's agent needs of the tenants: written
// by the hub in the cluster's namespace (named TenancyName), only when a
// tenant's namespaces, label sync prefixes or clusters change, and read by
// the agent, which sees no Tenant. Its size does not grow with the fleet,
// and the Tenants' claim counts never rewrite it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=hostfleet
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Tenants",type=string,JSONPath=`.spec.tenants[*].name`
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.spec.workloadTenants[*].name`
type ClusterTenancy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ClusterTenancySpec `json:"spec"`
}

// Served are the tenants the cluster serves in role: WorkloadTenants for
// RoleWorkload, Tenants otherwise. Nil-safe.
func (c *ClusterTenancy) Served(role string) []ServedTenant {
	if c == nil {
		return nil
	}
	if role == RoleWorkload {
		return c.Spec.WorkloadTenants
	}
	return c.Spec.Tenants
}

// Tenant is the tenant named name among Served(role), or nil.
func (c *ClusterTenancy) Tenant(role, name string) *ServedTenant {
	served := c.Served(role)
	for i := range served {
		if served[i].Name == name {
			return &served[i]
		}
	}
	return nil
}

// ClusterTenancyList is a list of ClusterTenancies.
//
// +kubebuilder:object:root=true
type ClusterTenancyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTenancy `json:"items"`
}

func init() {
	objects = append(objects, &ClusterTenancy{}, &ClusterTenancyList{})
}
