package hoststatus

import (
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hostfleet/hostfleet/agent/hostspec"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// HardwareCopy is the hub copy of a host's HardwareData made by the agent of
// cluster: in the claim's namespace, named after the claim, owned by it,
// labelled with the cluster (admission lets an agent write only copies
// labelled with its own), holding only the hardware details and the GPUs
// and firmware the BMC driver listed (which carry nothing of the host's BMC
// address or credentials).
func HardwareCopy(c *metal3api.HostClaim, hw *metal3api.HardwareData, cluster string) *metal3api.HardwareData {
	labels := hostspec.ClaimLabels(c)
	labels[hostfleetv1alpha1.LabelCluster] = cluster
	annotations := map[string]string{hostfleetv1alpha1.AnnotationSourceUID: string(hw.UID)}
	for _, k := range []string{hardware.AnnotationGPUs, hardware.AnnotationFirmware} {
		if v := hw.Annotations[k]; v != "" {
			annotations[k] = v
		}
	}
	return &metal3api.HardwareData{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   c.Namespace,
			Name:        c.Name,
			Labels:      labels,
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: metal3api.GroupVersion.String(), Kind: "HostClaim", Name: c.Name, UID: c.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: metal3api.HardwareDataSpec{HardwareDetails: hw.Spec.HardwareDetails.DeepCopy()},
	}
}

// CopyIsCurrent reports whether a hub copy is the one the agent of cluster
// makes from this HardwareData now: made from it (source UID), by that
// cluster's agent (label), with exactly its hardware details. Anything else
// (a re-inspection, or a copy forged or edited by someone else) is replaced.
func CopyIsCurrent(copy, hw *metal3api.HardwareData, cluster string) bool {
	return copy.Annotations[hostfleetv1alpha1.AnnotationSourceUID] == string(hw.UID) &&
		copy.Labels[hostfleetv1alpha1.LabelCluster] == cluster &&
		copy.Annotations[hardware.AnnotationGPUs] == hw.Annotations[hardware.AnnotationGPUs] &&
		copy.Annotations[hardware.AnnotationFirmware] == hw.Annotations[hardware.AnnotationFirmware] &&
		equality.Semantic.DeepEqual(copy.Spec.HardwareDetails, hw.Spec.HardwareDetails)
}
