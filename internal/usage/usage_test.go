package usage

import (
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestSplit(t *testing.T) {
	g := NewWithT(t)
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	g.Expect(Split("t", nil, at("2026-11-27T23:59:30Z"), at("2026-11-28T00:01:00Z"))).To(Equal([]hostfleetv1alpha1.UsageEntry{
		{Period: "2026-11-27", Namespace: "t", Seconds: 30}, {Period: "2026-11-28", Namespace: "t", Seconds: 60}}), "cut at UTC midnight")
	g.Expect(Split("t", nil, at("2026-11-27T10:00:00+02:00"), at("2026-11-27T10:00:10+02:00"))).To(Equal([]hostfleetv1alpha1.UsageEntry{
		{Period: "2026-11-27", Namespace: "t", Seconds: 10}}))
	g.Expect(Split("t", nil, at("2026-11-27T10:00:00Z"), at("2026-11-27T10:00:00Z"))).To(BeEmpty())
	g.Expect(Split("t", nil, time.Date(2026, 11, 27, 0, 0, 0, 900_000_000, time.UTC), time.Date(2026, 11, 27, 0, 0, 2, 100_000_000, time.UTC))).
		To(Equal([]hostfleetv1alpha1.UsageEntry{{Period: "2026-11-27", Namespace: "t", Seconds: 2}}), "whole seconds, as the start is written")
}

func TestMerge(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	gpu := map[string]string{"example.com/gpu": "yes"}
	g.Expect(Merge([]hostfleetv1alpha1.UsageEntry{
		{Period: "2026-11-27", Namespace: "a", Labels: gpu, Seconds: 10},
		{Period: "2026-11-27", Namespace: "a", Labels: map[string]string{"example.com/gpu": "yes"}, Seconds: 5},
		{Period: "2026-11-27", Namespace: "a", Seconds: 7},
		{Period: "2026-10-01", Namespace: "a", Seconds: 100},
		{Period: "2026-10-02", Namespace: "a", Seconds: 20},
		{Period: "2026-10", Namespace: "a", Seconds: 1},
		{Period: "2026-10-30", Namespace: "b", Seconds: 3},
	}, now)).To(Equal([]hostfleetv1alpha1.UsageEntry{
		{Period: "2026-10", Namespace: "a", Seconds: 121},
		{Period: "2026-10-30", Namespace: "b", Seconds: 3},
		{Period: "2026-11-27", Namespace: "a", Seconds: 7},
		{Period: "2026-11-27", Namespace: "a", Labels: gpu, Seconds: 15},
	}), "same period, namespace and labels summed; days older than 31 summed into their month")
}

func TestOpenClose(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0",
		Labels: map[string]string{"example.com/gpu": "yes", "other.io/rack": "r1"}}}
	g.Expect(Close(h, nil, t0)).To(Succeed(), "nothing open: nothing to close")
	g.Expect(h.Annotations).To(BeEmpty())

	h.Spec.ConsumerRef = &corev1.ObjectReference{Namespace: "tenant-a", Name: "c"}
	Open(h, "tenant-a", t0)
	Open(h, "tenant-b", t0.Add(time.Minute))
	g.Expect(h.Annotations).To(Equal(map[string]string{hostfleetv1alpha1.AnnotationBoundAt: "2026-11-27T10:00:00Z",
		hostfleetv1alpha1.AnnotationBoundFor: "tenant-a"}), "a binding written again keeps its start")
	st, err := Record([]metal3api.BareMetalHost{*h}, []string{"example.com"}, t0.Add(time.Hour))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Open).To(Equal([]hostfleetv1alpha1.OpenUsage{{Host: "hosts/h0", Namespace: "tenant-a",
		Labels: map[string]string{"example.com/gpu": "yes"}, Since: metav1.NewTime(t0)}}))
	g.Expect(st.Closed).To(BeEmpty())

	g.Expect(Close(h, []string{"example.com"}, t0.Add(90*time.Minute))).To(Succeed())
	Open(h, "tenant-b", t0.Add(2*time.Hour))
	g.Expect(Close(h, []string{"example.com"}, t0.Add(2*time.Hour+30*time.Second))).To(Succeed())
	g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationBoundAt))
	st, err = Record([]metal3api.BareMetalHost{*h, *h}, []string{"example.com"}, t0.Add(3*time.Hour))
	g.Expect(err).NotTo(HaveOccurred())
	gpu := map[string]string{"example.com/gpu": "yes"}
	g.Expect(st.Closed).To(Equal([]hostfleetv1alpha1.UsageEntry{
		{Period: "2026-11-27", Namespace: "tenant-a", Labels: gpu, Seconds: 2 * 5400},
		{Period: "2026-11-27", Namespace: "tenant-b", Labels: gpu, Seconds: 2 * 30},
	}), "two hosts with the same record: summed")
	g.Expect(st.Open).To(BeEmpty())

	h.Annotations[hostfleetv1alpha1.AnnotationUsage] = "{"
	_, err = Record([]metal3api.BareMetalHost{*h}, nil, t0)
	g.Expect(err).To(MatchError(ContainSubstring("host hosts/h0: hostfleet.io/usage")))
	Open(h, "tenant-a", t0)
	g.Expect(Close(h, nil, t0.Add(time.Second))).To(MatchError(ContainSubstring("hostfleet.io/usage")), "a record that does not parse is not overwritten")
}
