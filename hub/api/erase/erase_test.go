package erase

import (
	"testing"

	. "github.com/onsi/gomega"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestModes(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Max()).To(Equal(hostfleetv1alpha1.EraseNone))
	g.Expect(Max("", hostfleetv1alpha1.EraseMetadata, hostfleetv1alpha1.EraseNone)).To(Equal(hostfleetv1alpha1.EraseMetadata))
	g.Expect(Max(hostfleetv1alpha1.EraseFull, hostfleetv1alpha1.EraseMetadata)).To(Equal(hostfleetv1alpha1.EraseFull))
	g.Expect(Of(nil)).To(Equal(hostfleetv1alpha1.EraseNone))
	g.Expect(Of(map[string]string{hostfleetv1alpha1.AnnotationErase: "Metadata"})).To(Equal(hostfleetv1alpha1.EraseMetadata))
	g.Expect(Of(map[string]string{hostfleetv1alpha1.AnnotationErase: "everything"})).To(Equal(hostfleetv1alpha1.EraseFull), "unreadable asks the most")
	_, err := Parse("full")
	g.Expect(err).To(MatchError(ContainSubstring("is not one of None, Metadata, Full")))
}
