package hostspec

import (
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func claim() *metal3api.HostClaim {
	return &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "c", UID: "u1"}}
}

var host = &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h"}}

func TestSecretRefs(t *testing.T) {
	g := NewWithT(t)
	c := claim()
	refs, err := SecretRefs(c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(BeEmpty())

	c.Spec.UserData = &corev1.SecretReference{Name: "ud"}
	c.Spec.MetaData = &corev1.SecretReference{Name: "md", Namespace: "tenant-a"}
	refs, err = SecretRefs(c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(HaveLen(2))
	g.Expect(refs[0]).To(Equal(SecretRef{Role: UserData, Name: "ud", Copy: CopyName(c, UserData)}))
	g.Expect(refs[1].Role).To(Equal(MetaData))

	c.Spec.NetworkData = &corev1.SecretReference{Name: "nd", Namespace: "tenant-b"}
	_, err = SecretRefs(c)
	g.Expect(err).To(MatchError(ContainSubstring("spec.networkData names secret tenant-b/nd: secrets must be in the claim's namespace tenant-a")))
	var re *RefError
	g.Expect(err).To(BeAssignableToTypeOf(re))
	g.Expect(err.(*RefError).Role.SyncFailureReason()).To(Equal(metal3api.BadNetworkDataSecretReason))
}

func TestCopyNameIsStableAndDistinct(t *testing.T) {
	g := NewWithT(t)
	a := claim()
	g.Expect(CopyName(a, UserData)).To(Equal(CopyName(claim(), UserData)))
	g.Expect(CopyName(a, UserData)).NotTo(Equal(CopyName(a, MetaData)))
	b := claim()
	b.UID = "u2"
	g.Expect(CopyName(a, UserData)).NotTo(Equal(CopyName(b, UserData)), "a recreated claim gets new copies")
	b = claim()
	b.Namespace = "tenant-b"
	g.Expect(CopyName(a, UserData)).NotTo(Equal(CopyName(b, UserData)))
	g.Expect(len(CopyName(a, NetworkData))).To(BeNumerically("<=", 63))
}

func TestBound(t *testing.T) {
	g := NewWithT(t)
	c := claim()
	c.Spec.PoweredOn = true
	c.Spec.Image = &metal3api.Image{URL: "http://img/os.qcow2", Checksum: "abc", ChecksumType: metal3api.SHA256, DiskFormat: ptr.To("qcow2")}
	c.Spec.UserData = &corev1.SecretReference{Name: "ud"}
	refs, _ := SecretRefs(c)
	u := Bound(c, host, refs, false)
	g.Expect(u.GetName()).To(Equal("h"))
	g.Expect(u.GetNamespace()).To(Equal("hosts"))
	g.Expect(u.Object["spec"]).To(Equal(map[string]interface{}{
		"online":   true,
		"image":    map[string]interface{}{"url": "http://img/os.qcow2", "checksum": "abc", "checksumType": "sha256", "format": "qcow2"},
		"userData": map[string]interface{}{"name": CopyName(c, UserData), "namespace": "hosts"},
	}))

	c.Spec.Image = nil
	c.Spec.CustomDeploy = &metal3api.CustomDeploy{Method: "install_coreos"}
	c.Spec.UserData = nil
	g.Expect(Bound(c, host, nil, false).Object["spec"]).To(Equal(map[string]interface{}{
		"online": true, "customDeploy": map[string]interface{}{"method": "install_coreos"},
	}))
	g.Expect(Released(host).Object["spec"]).To(Equal(map[string]interface{}{"online": false}))
}

func TestSecretCopy(t *testing.T) {
	g := NewWithT(t)
	c := claim()
	hub := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "ud", Labels: map[string]string{"x": "y"}},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"value": []byte("#cloud-config")}}
	ref := SecretRef{Role: UserData, Name: "ud", Copy: CopyName(c, UserData)}
	cp := SecretCopy(c, ref, hub, "hosts")
	g.Expect(*cp.Namespace).To(Equal("hosts"))
	g.Expect(*cp.Name).To(Equal(ref.Copy))
	g.Expect(cp.Data).To(Equal(hub.Data))
	g.Expect(cp.Labels).To(Equal(map[string]string{
		hostfleetv1alpha1.LabelClaimNamespace: "tenant-a", hostfleetv1alpha1.LabelClaimName: "c", hostfleetv1alpha1.LabelClaimUID: "u1", hostfleetv1alpha1.LabelSecretRole: "userdata",
	}), "hub labels are not copied")
}

func TestSettled(t *testing.T) {
	for state, want := range map[metal3api.ProvisioningState]bool{
		metal3api.StateAvailable: true, metal3api.StateReady: true, metal3api.StateInspecting: true,
		metal3api.StateProvisioned: false, metal3api.StateDeprovisioning: false, metal3api.StateProvisioning: false,
	} {
		h := host.DeepCopy()
		h.Status.Provisioning.State = state
		NewWithT(t).Expect(Settled(h)).To(Equal(want), string(state))
	}
	h := host.DeepCopy()
	h.Status.Provisioning.State = metal3api.StateAvailable
	h.Spec.Image = &metal3api.Image{URL: "x"}
	NewWithT(t).Expect(Settled(h)).To(BeFalse(), "an image still set will be provisioned")
	NewWithT(t).Expect(Releasing(h)).To(Equal("waiting for its image to be removed"))
	h.Spec.Image = nil
	h.Status.PoweredOn = true
	NewWithT(t).Expect(Settled(h)).To(BeFalse(), "a host its BMC reports on still runs the previous system")
	NewWithT(t).Expect(Releasing(h)).To(Equal("waiting for its BMC to report it off"))
	h.Status.Provisioning.State = metal3api.StateDeprovisioning
	NewWithT(t).Expect(Releasing(h)).To(Equal("waiting for it to deprovision (deprovisioning)"))
}

func TestReboots(t *testing.T) {
	g := NewWithT(t)
	c := claim()
	c.Annotations = map[string]string{
		"reboot.metal3.io":        `{"mode":"hard"}`,
		"reboot.metal3.io/maint":  "",
		"reboot.metal3.io/remedy": `{"mode":"soft"}`,
		"other.io/x":              "y",
	}
	v, ok := OneShotReboot(c)
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal(`{"mode":"hard"}`))
	g.Expect(PersistentReboots(c)).To(Equal(map[string]string{"reboot.metal3.io/maint": "", "reboot.metal3.io/remedy": `{"mode":"soft"}`}))
	u := Bound(c, host, nil, false)
	g.Expect(u.GetAnnotations()).To(Equal(map[string]string{"reboot.metal3.io/maint": "", "reboot.metal3.io/remedy": `{"mode":"soft"}`}),
		"the one-shot reboot is not an owned field")
	delete(c.Annotations, "reboot.metal3.io/maint")
	delete(c.Annotations, "reboot.metal3.io/remedy")
	g.Expect(Bound(c, host, nil, false).GetAnnotations()).To(BeEmpty())
}

func TestDetach(t *testing.T) {
	g := NewWithT(t)
	c := claim()
	g.Expect(WantsDetach(c)).To(BeFalse())
	c.Annotations = map[string]string{metal3api.DetachedAnnotation: ""}
	g.Expect(WantsDetach(c)).To(BeTrue())
	g.Expect(Bound(c, host, nil, false).GetAnnotations()).To(BeEmpty(), "not allowed: not passed on")
	g.Expect(Bound(c, host, nil, true).GetAnnotations()).To(Equal(map[string]string{metal3api.DetachedAnnotation: ""}))
}

func TestUpToDate(t *testing.T) {
	g := NewWithT(t)
	c := claim()
	c.Spec.PoweredOn = true
	c.Spec.Image = &metal3api.Image{URL: "http://img", Checksum: "abc"}
	c.Spec.UserData = &corev1.SecretReference{Name: "ud"}
	c.Annotations = map[string]string{"reboot.metal3.io/k": ""}
	refs, _ := SecretRefs(c)
	want := Bound(c, host, refs, false)

	h := host.DeepCopy()
	g.Expect(UpToDate(h, want)).To(BeFalse(), "a fresh host needs the apply")
	h.Spec.Online = true
	h.Spec.Image = &metal3api.Image{URL: "http://img", Checksum: "abc"}
	h.Spec.UserData = &corev1.SecretReference{Name: CopyName(c, UserData), Namespace: "hosts"}
	h.Annotations = map[string]string{"reboot.metal3.io/k": "", "someone.else/x": "y"}
	h.Spec.BMC.Address = "ipmi://x" // not ours
	g.Expect(UpToDate(h, want)).To(BeTrue())
	g.Expect(ReferencedCopies(h)).To(Equal([]string{CopyName(c, UserData)}))

	for name, mut := range map[string]func(*metal3api.BareMetalHost){
		"image changed":          func(h *metal3api.BareMetalHost) { h.Spec.Image.URL = "http://other" },
		"extra field we own":     func(h *metal3api.BareMetalHost) { h.Spec.CustomDeploy = &metal3api.CustomDeploy{Method: "m"} },
		"power differs":          func(h *metal3api.BareMetalHost) { h.Spec.Online = false },
		"reboot key missing":     func(h *metal3api.BareMetalHost) { delete(h.Annotations, "reboot.metal3.io/k") },
		"stale reboot key":       func(h *metal3api.BareMetalHost) { h.Annotations["reboot.metal3.io/old"] = "" },
		"secret reference drops": func(h *metal3api.BareMetalHost) { h.Spec.UserData = nil },
	} {
		changed := h.DeepCopy()
		mut(changed)
		g.Expect(UpToDate(changed, want)).To(BeFalse(), name)
	}
}
