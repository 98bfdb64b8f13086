package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FirmwareImage is the firmware a component should run: its version, and
// the image that installs it.
type FirmwareImage struct {
	// Version is what the BMC reads back once the image is installed.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version"`
	// URL is where the BMC (Redfish SimpleUpdate's ImageURI) or
	// baremetal-operator (HostFirmwareComponents' url) fetches the image.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="the image URL must be http:// or https://: the BMC fetches it"
	URL string `json:"url"`
	// Checksum is the image's digest, "sha256:<hex>" or "sha512:<hex>".
	// +kubebuilder:validation:MaxLength=135
	// +kubebuilder:validation:XValidation:rule="self.matches('^(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})$')",message="the checksum is the image's digest: sha256:<64 hex> or sha512:<128 hex>"
	Checksum string `json:"checksum"`
}

// FirmwareBaselineSpec is what the hosts it selects must run and hold
// before a claim may have them again.
// +kubebuilder:validation:XValidation:rule="has(self.components) || has(self.biosSettings) || has(self.bmcAccounts)",message="a baseline must say something: components, biosSettings or bmcAccounts"
type FirmwareBaselineSpec struct {
	// Hardware selects the hosts, as a claim's hostfleet.io/hardware does:
	// a CEL expression over host (docs/service.md), such as
	// host.system.product == "PowerEdge R750". Empty: every host.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Hardware string `json:"hardware,omitempty"`

	// Components are the firmware wanted, by component as
	// baremetal-operator names them: bios, bmc, nic:<Id>.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k == 'bios' || k == 'bmc' || (k.startsWith('nic:') && size(k) > 4))",message="a component is bios, bmc or nic:<Id>, as baremetal-operator names them"
	Components map[string]FirmwareImage `json:"components,omitempty"`

	// BIOSSettings are the BIOS attributes wanted, name to value.
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	BIOSSettings map[string]string `json:"biosSettings,omitempty"`

	// BMCAccounts, when set, checks the hosts' BMC accounts: any but the
	// one the host's BMC credentials Secret names and those allowed is
	// removed (Redfish) or disabled (IPMI) before the host is free again.
	// +optional
	BMCAccounts *BMCAccountPolicy `json:"bmcAccounts,omitempty"`
}

// BMCAccountPolicy is which BMC accounts a host may keep.
type BMCAccountPolicy struct {
	// Allowed are the user names allowed besides the credentials' own.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	Allowed []string `json:"allowed,omitempty"`
}

// FirmwareBaselineStatus is what the hub says of the baseline.
type FirmwareBaselineStatus struct {
	// ObservedGeneration is the generation the conditions speak of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Valid (its hardware expression compiles and no other
	// baseline wants another version of a component for a host it selects).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FirmwareBaseline is what the hub administrator wants of the hosts' firmware,
// BIOS settings and BMC accounts. A host a claim released is free again
// only once it matches every baseline that selects it. Only the hub
// administrator reads or writes it: tenants and agents hold no right on it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=hostfleet,shortName=fwbaseline
// +kubebuilder:printcolumn:name="Hardware",type=string,JSONPath=`.spec.hardware`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FirmwareBaseline struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FirmwareBaselineSpec   `json:"spec,omitempty"`
	Status FirmwareBaselineStatus `json:"status,omitempty"`
}

// FirmwareBaselineList is a list of FirmwareBaselines.
//
// +kubebuilder:object:root=true
type FirmwareBaselineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FirmwareBaseline `json:"items"`
}

func init() {
	objects = append(objects, &FirmwareBaseline{}, &FirmwareBaselineList{})
}
