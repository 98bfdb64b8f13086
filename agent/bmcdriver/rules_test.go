package bmcdriver

import (
	"fmt"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestDriven(t *testing.T) {
	g := NewWithT(t)
	h := func(a map[string]string) *metal3api.BareMetalHost {
		return &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Annotations: a}}
	}
	g.Expect(Driven(h(map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}), false)).To(BeTrue())
	g.Expect(Driven(h(nil), false)).To(BeFalse())
	g.Expect(Driven(h(nil), true)).To(BeTrue())
	g.Expect(Driven(h(map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib, metal3api.PausedAnnotation: ""}), true)).To(BeFalse())
	g.Expect(Driven(h(map[string]string{metal3api.DetachedAnnotation: ""}), true)).To(BeFalse())
}

func TestDrivenIn(t *testing.T) {
	g := NewWithT(t)
	h := func(ns string) *metal3api.BareMetalHost {
		return &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: ns,
			Annotations: map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}}}
	}
	g.Expect(DrivenIn(h("hosts"), false, nil)).To(BeTrue(), "no namespaces given: every namespace")
	g.Expect(DrivenIn(h("hosts"), false, []string{"hosts", "edge"})).To(BeTrue())
	g.Expect(DrivenIn(h("other"), false, []string{"hosts", "edge"})).To(BeFalse(), "its credentials are out of the agent's reach")
	g.Expect(DrivenIn(h("other"), true, []string{"hosts"})).To(BeFalse(), "--bmh-driver=all stays within the namespaces")
}

func TestBackoff(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Backoff(0)).To(Equal(2 * time.Second))
	g.Expect(Backoff(1)).To(Equal(2 * time.Second))
	g.Expect(Backoff(3)).To(Equal(8 * time.Second))
	g.Expect(Backoff(100)).To(Equal(5 * time.Minute))
}

// TestRetry: a host's errors back off, but a host asked to be off that was
// last seen on (a fence) is tried at least every FenceRetry: its BMC, back
// after two minutes down, is obeyed within seconds, not minutes.
func TestRetry(t *testing.T) {
	host := func(online, poweredOn bool, errors int) *metal3api.BareMetalHost {
		h := &metal3api.BareMetalHost{Spec: metal3api.BareMetalHostSpec{Online: online}}
		h.Status.PoweredOn, h.Status.ErrorCount = poweredOn, errors
		return h
	}
	for _, tc := range []struct {
		name string
		h    *metal3api.BareMetalHost
		want time.Duration
	}{
		{"first error", host(true, true, 1), 2 * time.Second},
		{"errors for two minutes, on as asked", host(true, true, 7), 128 * time.Second},
		{"errors for two minutes, off as asked", host(false, false, 7), 128 * time.Second},
		{"errors for two minutes, asked off, still on: a fence", host(false, true, 7), FenceRetry},
		{"a fence's first error", host(false, true, 1), 2 * time.Second},
		{"asked on, still off", host(true, false, 7), 128 * time.Second},
	} {
		if got := Retry(tc.h); got != tc.want {
			t.Errorf("%s: Retry = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestRebootRequest(t *testing.T) {
	g := NewWithT(t)
	g.Expect(RebootRequest(nil)).To(Equal(Reboot{}))
	g.Expect(RebootRequest(map[string]string{"reboot.metal3.io": ""})).To(Equal(Reboot{Requested: true, Keys: []string{"reboot.metal3.io"}}))
	g.Expect(RebootRequest(map[string]string{"reboot.metal3.io": `{"mode":"hard"}`})).To(Equal(Reboot{Requested: true, Hard: true, Keys: []string{"reboot.metal3.io"}}))
	g.Expect(RebootRequest(map[string]string{"reboot.metal3.io/remediation": ""})).To(Equal(Reboot{Requested: true, HoldOff: true}))
	g.Expect(RebootRequest(map[string]string{"reboot.metal3.iox": ""}).Requested).To(BeFalse())
}

func TestValidateImage(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ValidateImage(nil)).To(Succeed())
	g.Expect(ValidateImage(&metal3api.Image{URL: "http://x/live.iso", DiskFormat: ptr.To("live-iso")})).To(Succeed())
	g.Expect(ValidateImage(&metal3api.Image{URL: "http://x/disk.qcow2", DiskFormat: ptr.To("qcow2")})).To(MatchError(ContainSubstring("has format qcow2")))
	g.Expect(ValidateImage(&metal3api.Image{URL: "http://x/disk.img"})).To(MatchError(ContainSubstring("has format (none)")))
}

func TestDeprovision(t *testing.T) {
	g := NewWithT(t)
	h := &metal3api.BareMetalHost{}
	h.Status.Provisioning.Image.URL = "http://x/a.iso"
	g.Expect(Deprovision(h)).To(BeTrue(), "no image")
	h.Spec.Image = &metal3api.Image{URL: "http://x/a.iso"}
	g.Expect(Deprovision(h)).To(BeFalse())
	h.Spec.Image.URL = "http://x/b.iso"
	g.Expect(Deprovision(h)).To(BeTrue(), "another image")
}

// TestNextPoll: the polls of hosts that all settle at one instant (an
// agent's start) spread evenly over the interval, and each host keeps its
// offset, polled once per interval.
func TestNextPoll(t *testing.T) {
	g := NewWithT(t)
	const hosts, every = 10000, time.Minute
	now := time.Date(2026, 12, 7, 10, 0, 0, 123456789, time.UTC)
	perSecond := make([]int, every/time.Second)
	for i := range hosts {
		uid := types.UID(fmt.Sprintf("3f0c9a1e-0000-4000-8000-%012d", i))
		wait := NextPoll(uid, now, every)
		g.Expect(wait).To(BeNumerically(">", 0))
		g.Expect(wait).To(BeNumerically("<=", every))
		perSecond[int(wait/time.Second)]++
		next := now.Add(wait)
		g.Expect(NextPoll(uid, next, every)).To(Equal(every), "polled at its offset: the next poll one interval later")
		late := next.Add(700 * time.Millisecond) // a poll that took its time
		g.Expect(late.Add(NextPoll(uid, late, every))).To(Equal(next.Add(every)), "back at its offset")
	}
	mean := hosts / len(perSecond)
	for s, n := range perSecond {
		g.Expect(n).To(BeNumerically("~", mean, mean/4), "second %d of the interval: %d polls (of %d)", s, n, hosts)
	}
	g.Expect(NextPoll("a", now, 0)).To(BeZero())
}
