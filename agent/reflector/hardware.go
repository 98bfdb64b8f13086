package reflector

import (
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hostfleet/hostfleet/agent/hostspec"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// HardwareCopy is the hub copy of a host's HardwareData: in the claim's
// namespace, named after the claim, owned by it, holding only the hardware
// details (which carry nothing of the host's BMC address or credentials).
func HardwareCopy(c *metal3api.HostClaim, hw *metal3api.HardwareData) *metal3api.HardwareData {
	return &metal3api.HardwareData{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   c.Namespace,
			Name:        c.Name,
			Labels:      hostspec.ClaimLabels(c),
			Annotations: map[string]string{hostfleetv1alpha1.AnnotationSourceUID: string(hw.UID)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: metal3api.GroupVersion.String(), Kind: "HostClaim", Name: c.Name, UID: c.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: metal3api.HardwareDataSpec{HardwareDetails: hw.Spec.HardwareDetails.DeepCopy()},
	}
}

// CopyIsCurrent reports whether a hub copy was made from this HardwareData.
func CopyIsCurrent(copy, hw *metal3api.HardwareData) bool {
	return copy.Annotations[hostfleetv1alpha1.AnnotationSourceUID] == string(hw.UID)
}
