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
	dropped, err := Close(h, nil, t0)
	g.Expect(err).NotTo(HaveOccurred(), "nothing open: nothing to close")
	g.Expect(dropped).To(BeEmpty())
	g.Expect(h.Annotations).To(BeEmpty())

	h.Spec.ConsumerRef = &corev1.ObjectReference{Namespace: "tenant-a", Name: "c"}
	Open(h, "tenant-a", "uid-a", t0)
	Open(h, "tenant-b", "uid-b", t0.Add(time.Minute))
	g.Expect(h.Annotations).To(Equal(map[string]string{hostfleetv1alpha1.AnnotationBoundAt: "2026-11-27T10:00:00Z",
		hostfleetv1alpha1.AnnotationBoundFor: "tenant-a", hostfleetv1alpha1.AnnotationBoundClaim: "uid-a"}), "a binding written again keeps its start and claim")
	g.Expect(Opened(h)).To(BeTrue())
	intervals, open, err := Report([]metal3api.BareMetalHost{*h}, []string{"example.com"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(open).To(Equal([]hostfleetv1alpha1.OpenUsage{{Host: "hosts/h0", Claim: "uid-a", Namespace: "tenant-a",
		Labels: map[string]string{"example.com/gpu": "yes"}, Since: metav1.NewTime(t0)}}))
	g.Expect(intervals).To(BeEmpty())

	_, err = Close(h, []string{"example.com"}, t0.Add(90*time.Minute+400*time.Millisecond))
	g.Expect(err).NotTo(HaveOccurred())
	Open(h, "tenant-b", "uid-b", t0.Add(2*time.Hour))
	_, err = Close(h, []string{"example.com"}, t0.Add(2*time.Hour+30*time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationBoundAt))
	g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationBoundClaim))
	gpu := map[string]string{"example.com/gpu": "yes"}
	first := hostfleetv1alpha1.UsageInterval{Claim: "uid-a", Namespace: "tenant-a", Host: "hosts/h0", Labels: gpu,
		Start: metav1.NewTime(t0), End: metav1.NewTime(t0.Add(90 * time.Minute))}
	second := hostfleetv1alpha1.UsageInterval{Claim: "uid-b", Namespace: "tenant-b", Host: "hosts/h0", Labels: gpu,
		Start: metav1.NewTime(t0.Add(2 * time.Hour)), End: metav1.NewTime(t0.Add(2*time.Hour + 30*time.Second))}
	intervals, open, err = Report([]metal3api.BareMetalHost{*h}, []string{"example.com"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(intervals).To(Equal([]hostfleetv1alpha1.UsageInterval{first, second}), "each interval whole, its end to the second the agent read its clock")
	g.Expect(open).To(BeEmpty())

	t.Log("settled intervals are dropped from the record, and only those")
	changed, err := Drop(h, map[string]bool{Key(first): true, "other/hosts/h9/2026-11-27T00:00:00Z": true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	rec, err := Of(h)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec).To(Equal([]hostfleetv1alpha1.UsageInterval{second}))
	changed, err = Drop(h, map[string]bool{Key(first): true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())

	h.Annotations[hostfleetv1alpha1.AnnotationUsage] = "{"
	_, _, err = Report([]metal3api.BareMetalHost{*h}, nil)
	g.Expect(err).To(MatchError(ContainSubstring("host hosts/h0: hostfleet.io/usage")))
	Open(h, "tenant-a", "uid-a", t0)
	_, err = Close(h, nil, t0.Add(time.Second))
	g.Expect(err).To(MatchError(ContainSubstring("hostfleet.io/usage")), "a record that does not parse is not overwritten")
}

func TestRecordBounded(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0"}}
	var dropped []hostfleetv1alpha1.UsageInterval
	for i := range MaxRecord + 3 {
		Open(h, "tenant-a", "uid", t0.Add(time.Duration(i)*time.Minute))
		d, err := Close(h, nil, t0.Add(time.Duration(i)*time.Minute+time.Second))
		g.Expect(err).NotTo(HaveOccurred())
		dropped = append(dropped, d...)
	}
	rec, err := Of(h)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec).To(HaveLen(MaxRecord))
	g.Expect(dropped).To(HaveLen(3))
	g.Expect(dropped[0].Start.Time).To(Equal(t0), "the oldest go first")
}

func TestLegacyRecordSkipped(t *testing.T) {
	g := NewWithT(t)
	h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0", Annotations: map[string]string{
		hostfleetv1alpha1.AnnotationUsage: `[{"period":"2026-11-26","namespace":"tenant-a","seconds":100}]`}}}
	rec, err := Of(h)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec).To(BeEmpty(), "an earlier release's sums: reported by that agent, taken over by the hub once")
	changed, err := Drop(h, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue(), "rewritten without them")
	g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationUsage))
}
