package exclusion

import (
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

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
	g.Expect(Matches(sels, labels.Set{"example.com/gpu": "yes"})).To(BeTrue())
	g.Expect(Matches(sels, labels.Set{"example.com/size": "large"})).To(BeTrue())
	g.Expect(Matches(sels, labels.Set{"example.com/size": "small"})).To(BeFalse())

	c.Annotations[hostfleetv1alpha1.AnnotationExcludedHosts] = "[{"
	_, err = Of(c)
	g.Expect(err).To(MatchError(ContainSubstring(hostfleetv1alpha1.AnnotationExcludedHosts)), "the agent then binds nothing")
	sels, err = Of(&metal3api.HostClaim{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Matches(sels, labels.Set{"a": "b"})).To(BeFalse())
}
