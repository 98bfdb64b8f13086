package exclusion

import (
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestRoundTrip(t *testing.T) {
	g := NewWithT(t)
	v, err := Encode(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v).To(BeEmpty(), "nothing excluded: no annotation")

	v, err = Encode([]hostfleetv1alpha1.ClassSelector{{MatchLabels: map[string]string{"example.com/gpu": "yes"}},
		{MatchExpressions: []hostfleetv1alpha1.ClassRequirement{{Key: "example.com/size", Operator: metav1.LabelSelectorOpIn, Values: []string{"large"}}}}})
	g.Expect(err).NotTo(HaveOccurred())
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{hostfleetv1alpha1.AnnotationExcludedHosts: v}}}
	sels, err := Of(c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Matches(sels, labels.Set{"example.com/gpu": "yes"}, "c1", "", nil)).To(BeTrue())
	g.Expect(Matches(sels, labels.Set{"example.com/size": "large"}, "c1", "", nil)).To(BeTrue())
	g.Expect(Matches(sels, labels.Set{"example.com/size": "small"}, "c1", "", nil)).To(BeFalse())

	c.Annotations[hostfleetv1alpha1.AnnotationExcludedHosts] = "[{"
	_, err = Of(c)
	g.Expect(err).To(MatchError(ContainSubstring(hostfleetv1alpha1.AnnotationExcludedHosts)), "the agent then binds nothing")
	sels, err = Of(&metal3api.HostClaim{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Matches(sels, labels.Set{"a": "b"}, "c1", "", nil)).To(BeFalse())
}

// TestHardware: a class by hardware excludes the hosts whose hardware
// meets it, by their view (and profile, when named), whatever their
// labels when it names none; hosts not inspected are not excluded.
func TestHardware(t *testing.T) {
	g := NewWithT(t)
	v, err := Encode([]hostfleetv1alpha1.ClassSelector{{Hardware: "host.gpus.size() > 0"},
		{MatchLabels: map[string]string{"example.com/rack": "r1"}, Hardware: "host.cpu.count >= 64"}})
	g.Expect(err).NotTo(HaveOccurred())
	sels, err := Of(&metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{hostfleetv1alpha1.AnnotationExcludedHosts: v}}})
	g.Expect(err).NotTo(HaveOccurred())
	gpu := &hardware.View{CPU: hardware.CPU{Count: 32}, GPUs: []hardware.GPU{{Vendor: "NVIDIA", Model: "H100"}}}
	big := &hardware.View{CPU: hardware.CPU{Count: 128}}
	for _, v := range []*hardware.View{gpu, big} {
		hardware.Normalize(v)
	}
	g.Expect(Matches(sels, labels.Set{}, "c1", "", gpu)).To(BeTrue())
	g.Expect(Matches(sels, labels.Set{}, "c1", hardware.Profile(gpu), gpu)).To(BeTrue())
	g.Expect(Matches(sels, labels.Set{}, "c1", "", big)).To(BeFalse(), "not on rack r1")
	g.Expect(Matches(sels, labels.Set{"example.com/rack": "r1"}, "c1", "", big)).To(BeTrue())
	g.Expect(Matches(sels, labels.Set{"example.com/rack": "r1"}, "c1", "", nil)).To(BeFalse(), "not inspected")

	_, err = Compile([]hostfleetv1alpha1.ClassSelector{{Hardware: "host.cpu.cores > 1"}})
	g.Expect(err).To(HaveOccurred())
}
