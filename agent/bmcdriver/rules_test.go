package bmcdriver

import (
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
