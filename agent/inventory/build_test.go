package inventory

import (
	"encoding/json"
	"fmt"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestBuild(t *testing.T) {
	g := NewWithT(t)
	host := func(ns, name string, state metal3api.ProvisioningState, labels map[string]string) metal3api.BareMetalHost {
		h := metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
		h.Status.Provisioning.State = state
		return h
	}
	taken := host("gold", "g2", metal3api.StateAvailable, map[string]string{"example.com/gpu": "yes"})
	taken.Spec.ConsumerRef = &corev1.ObjectReference{Name: "x"}
	reserved := host("plain", "p2", metal3api.StateAvailable, nil)
	reserved.Annotations = map[string]string{hostfleetv1alpha1.AnnotationTaints: "reserved"}
	held := host("plain", "p3", metal3api.StateDeprovisioning, nil)
	held.Annotations = map[string]string{hostfleetv1alpha1.AnnotationRestore: `{"phase":"held","reason":"RestoreFailed"}`}
	in := Input{
		Hosts: []metal3api.BareMetalHost{
			host("gold", "g1", metal3api.StateAvailable, map[string]string{"example.com/gpu": "yes", "secret.org/x": "1"}),
			taken,
			host("gold", "g3", metal3api.StateInspecting, map[string]string{"example.com/gpu": "yes"}),
			host("gold", "g4", metal3api.StateReady, map[string]string{"example.com/gpu": "yes", binder.FailureDomainLabel: "rack-1"}),
			host("plain", "p1", metal3api.StateAvailable, nil),
			reserved,
			held,
		},
		Policies: []metal3api.HostDeployPolicy{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "gold", Name: "p"}, Spec: metal3api.HostDeployPolicySpec{
				HostClaimNamespaces: &metal3api.HostClaimNamespaces{HasLabels: []metal3api.NameValuePair{{Name: "tier", Value: "gold"}}}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "plain", Name: "p"}, Spec: metal3api.HostDeployPolicySpec{
				HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^tenant-"}}},
		},
		Namespaces: []corev1.Namespace{
			{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{"tier": "gold"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "tenant-b"}},
		},
		Prefixes: []string{"example.com"},
	}
	got := Build(in)
	g.Expect(got.Total).To(Equal(int32(7)))
	g.Expect(got.Available).To(Equal(int32(4)))
	g.Expect(got.Held).To(Equal(int32(1)), "held by the release gate")
	g.Expect(got.Pools).To(Equal([]hostfleetv1alpha1.HostPool{
		{Labels: map[string]string{"example.com/gpu": "yes"}, FailureDomain: "rack-1", Namespaces: []string{"tenant-a"}, Total: 1, Available: 1},
		{Labels: map[string]string{"example.com/gpu": "yes"}, Namespaces: []string{"tenant-a"}, Total: 3, Available: 1},
		{Namespaces: []string{"tenant-a", "tenant-b"}, Total: 2, Available: 1, Held: 1},
		{Namespaces: []string{"tenant-a", "tenant-b"}, Taints: []string{"reserved"}, Total: 1, Available: 1},
	}))
	g.Expect(Build(in)).To(Equal(got), "deterministic")

	t.Log("with a baseline that allows no extra BMC account, each pool counts its hosts by how they stand, as their BMCs last read them")
	in.Baselines = []hostfleetv1alpha1.FirmwareBaseline{{ObjectMeta: metav1.ObjectMeta{Name: "accounts"},
		Spec: hostfleetv1alpha1.FirmwareBaselineSpec{BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{}}}}
	in.Hosts[4].Annotations = map[string]string{hostfleetv1alpha1.AnnotationBaselineObserved: `{"Accounts":["admin"],"Own":"admin"}`}
	in.Hosts[5].Annotations[hostfleetv1alpha1.AnnotationBaselineObserved] = `{"Accounts":["admin","ghost"],"Own":"admin"}`
	firmware := func(p hostfleetv1alpha1.HostPool) *hostfleetv1alpha1.FirmwareStanding { return p.Firmware }
	g.Expect(Build(in).Pools).To(HaveExactElements(
		WithTransform(firmware, Equal(&hostfleetv1alpha1.FirmwareStanding{Unknown: 1})),
		WithTransform(firmware, Equal(&hostfleetv1alpha1.FirmwareStanding{Unknown: 3})),
		WithTransform(firmware, Equal(&hostfleetv1alpha1.FirmwareStanding{Current: 1})),
		WithTransform(firmware, Equal(&hostfleetv1alpha1.FirmwareStanding{Behind: 1}))), "never read: unknown; the held host: held only")
}

// TestBuildProfiles: hosts of one hardware share a pool and the profile is
// listed once; a host not inspected is pooled without one; the inventory's
// size does not grow with its hosts.
func TestBuildProfiles(t *testing.T) {
	g := NewWithT(t)
	policy := metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "p"},
		Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^tenant-"}}}
	fleet := func(hosts, profiles int) Input {
		in := Input{Policies: []metal3api.HostDeployPolicy{policy}, Hardware: map[types.NamespacedName]Profiled{},
			Namespaces: []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}}}
		for i := range hosts {
			h := metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%d", i)}}
			h.Status.Provisioning.State = metal3api.StateAvailable
			in.Hosts = append(in.Hosts, h)
			if i%(profiles+1) == profiles {
				continue // not inspected yet
			}
			v := hardware.Of(&metal3api.HardwareDetails{CPU: metal3api.CPU{Count: 8 * (i%(profiles+1) + 1), Arch: "x86_64", Model: "Xeon"},
				RAMMebibytes: 65536, Storage: []metal3api.Storage{{Type: metal3api.NVME, SizeBytes: 960 * metal3api.GigaByte}},
				NIC: []metal3api.NIC{{SpeedGbps: 25, Model: "E810"}, {SpeedGbps: 1, Model: "I350"}}})
			in.Hardware[types.NamespacedName{Namespace: "hosts", Name: h.Name}] = Profiled{Profile: hardware.Profile(v), View: v}
		}
		return in
	}
	small := Build(fleet(6, 2))
	g.Expect(small.Pools).To(HaveLen(3))
	g.Expect(small.Profiles).To(HaveLen(2))
	for _, p := range small.Pools {
		g.Expect(p.Total).To(Equal(int32(2)), "%+v", p)
	}
	g.Expect(small.Pools).To(ContainElement(HaveField("Profile", "")), "the hosts not inspected")
	for _, p := range small.Profiles {
		g.Expect(small.Pools).To(ContainElement(HaveField("Profile", p.Name)))
	}

	size := func(st hostfleetv1alpha1.HostInventoryStatus) int {
		data, err := json.Marshal(st)
		g.Expect(err).NotTo(HaveOccurred())
		return len(data)
	}
	large, larger := Build(fleet(510, 50)), Build(fleet(5100, 50))
	g.Expect(larger.Profiles).To(HaveLen(50))
	g.Expect(larger.Pools).To(HaveLen(51))
	t.Logf("inventory of 5 100 hosts, 50 profiles: %d bytes (510 hosts: %d)", size(larger), size(large))
	g.Expect(size(larger)-size(large)).To(BeNumerically("<=", 2*len(larger.Pools)+2), "ten times the hosts adds a digit to each count, no more")
	g.Expect(size(larger)).To(BeNumerically("<", 32*1024))
}
