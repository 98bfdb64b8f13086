package hoststatus

import (
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestHardwareCopy: the hub copy holds the details and the GPUs and
// firmware the BMC driver listed, nothing else of the host; a copy without
// the GPUs or firmware its source now lists is not current.
func TestHardwareCopy(t *testing.T) {
	g := NewWithT(t)
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "gpu", UID: "claim-uid"}}
	gpus, fw := `[{"vendor":"NVIDIA","model":"H100"}]`, `{"bios":"2.1","bmc":"7.10"}`
	hw := &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0", UID: "hw-uid",
		Annotations: map[string]string{hardware.AnnotationGPUs: gpus, hardware.AnnotationFirmware: fw, "bmc.example/address": "10.0.0.9"}},
		Spec: metal3api.HardwareDataSpec{HardwareDetails: &metal3api.HardwareDetails{CPU: metal3api.CPU{Count: 64}}}}
	cp := HardwareCopy(c, hw, "infra-1")
	g.Expect(cp.Annotations).To(Equal(map[string]string{hostfleetv1alpha1.AnnotationSourceUID: "hw-uid", hardware.AnnotationGPUs: gpus,
		hardware.AnnotationFirmware: fw}))
	g.Expect(hardware.OfData(cp).GPUs).To(Equal([]hardware.GPU{{Vendor: "NVIDIA", Model: "H100"}}))
	g.Expect(hardware.OfData(cp).Firmware).To(Equal(map[string]string{"bios": "2.1", "bmc": "7.10"}))
	g.Expect(CopyIsCurrent(cp, hw, "infra-1")).To(BeTrue())
	for _, k := range []string{hardware.AnnotationGPUs, hardware.AnnotationFirmware} {
		cp := HardwareCopy(c, hw, "infra-1")
		delete(cp.Annotations, k)
		g.Expect(CopyIsCurrent(cp, hw, "infra-1")).To(BeFalse(), "made before %s was listed", k)
	}
}
