package nodelabels_test

import (
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hostfleet/hostfleet/agent/nodelabels"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func claim(name, uid string, annotations map[string]string, hw *metal3api.HardwareDetails) nodelabels.Claim {
	return nodelabels.Claim{HostClaim: &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name,
		UID: types.UID(uid), Annotations: annotations}}, Hardware: hw}
}

func node(name, providerID string, addrs ...corev1.NodeAddress) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID},
		Status: corev1.NodeStatus{Addresses: addrs}}
}

func ip(a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a}
}

func hw(hostname string, ips ...string) *metal3api.HardwareDetails {
	d := &metal3api.HardwareDetails{Hostname: hostname}
	for _, i := range ips {
		d.NIC = append(d.NIC, metal3api.NIC{Name: "eth", IP: i, MAC: "00:00:00:00:00:01"})
	}
	return d
}

func TestProviderIDMatches(t *testing.T) {
	g := NewWithT(t)
	c := claim("web-0", "1234", map[string]string{hostfleetv1alpha1.AnnotationHostUID: "bmh-5678"}, nil).HostClaim
	for id, want := range map[string]bool{
		"metal3://1234":            true,
		"metal3://bmh-5678":        true,
		"metal3://bmh-567":         false,
		"metal3://t/web-0":         true,
		"metal3://t/web-0/m3m-abc": true,
		"metal3://t/web-00":        false,
		"metal3://t/web-0x/m":      false,
		"metal3://u/web-0":         false,
		"metal3://":                false,
		"aws:///i-1234":            false,
		"":                         false,
	} {
		g.Expect(nodelabels.ProviderIDMatches(id, c)).To(Equal(want), id)
	}
}

func TestMatchAll(t *testing.T) {
	ann := func(n string) map[string]string { return map[string]string{hostfleetv1alpha1.AnnotationNode: n} }
	nodes := []corev1.Node{
		node("n1", "metal3://t/by-provider/m1", ip("10.0.0.1")),
		node("n2", "", ip("10.0.0.2"), corev1.NodeAddress{Type: corev1.NodeHostName, Address: "host-2"}),
		node("n3", "", ip("10.0.0.3")),
		node("n4", "", ip("10.0.0.3")), // the same address as n3
		node("host-5", ""),
	}
	for _, tc := range []struct {
		name   string
		claims []nodelabels.Claim
		want   map[string]nodelabels.Match
	}{{
		name:   "annotation, providerID, address, hostname address, node name",
		claims: []nodelabels.Claim{claim("a", "u1", ann("n4"), nil), claim("by-provider", "u2", nil, hw("x", "10.0.0.9")), claim("c", "u3", nil, hw("", "10.0.0.2")), claim("d", "u4", nil, hw("HOST-5"))},
		want: map[string]nodelabels.Match{
			"t/a":           {Node: "n4", Via: nodelabels.ViaAnnotation, Reason: hostfleetv1alpha1.ReasonLabelsSynced},
			"t/by-provider": {Node: "n1", Via: nodelabels.ViaProviderID, Reason: hostfleetv1alpha1.ReasonLabelsSynced},
			"t/c":           {Node: "n2", Via: nodelabels.ViaHardware, Reason: hostfleetv1alpha1.ReasonLabelsSynced},
			"t/d":           {Node: "host-5", Via: nodelabels.ViaHardware, Reason: hostfleetv1alpha1.ReasonLabelsSynced},
		},
	}, {
		name:   "the annotation decides alone, even when its Node is not there yet",
		claims: []nodelabels.Claim{claim("a", "u1", ann("late"), hw("", "10.0.0.2"))},
		want:   map[string]nodelabels.Match{"t/a": {Reason: hostfleetv1alpha1.ReasonNodeNotFound}},
	}, {
		name:   "two Nodes with the claim's address",
		claims: []nodelabels.Claim{claim("a", "u1", nil, hw("", "10.0.0.3"))},
		want:   map[string]nodelabels.Match{"t/a": {Reason: hostfleetv1alpha1.ReasonNodeAmbiguous}},
	}, {
		name:   "one Node matching two claims alike",
		claims: []nodelabels.Claim{claim("a", "u1", nil, hw("", "10.0.0.2")), claim("b", "u2", nil, hw("host-2"))},
		want: map[string]nodelabels.Match{"t/a": {Reason: hostfleetv1alpha1.ReasonNodeAmbiguous},
			"t/b": {Reason: hostfleetv1alpha1.ReasonNodeAmbiguous}},
	}, {
		name:   "a Node named by one claim is not another's by address",
		claims: []nodelabels.Claim{claim("a", "u1", ann("n2"), nil), claim("b", "u2", nil, hw("", "10.0.0.2"))},
		want: map[string]nodelabels.Match{"t/a": {Node: "n2", Via: nodelabels.ViaAnnotation, Reason: hostfleetv1alpha1.ReasonLabelsSynced},
			"t/b": {Reason: hostfleetv1alpha1.ReasonNodeAmbiguous}},
	}, {
		name:   "no HardwareData, no providerID: nothing is guessed",
		claims: []nodelabels.Claim{claim("a", "u1", nil, nil), claim("b", "u2", nil, hw("nowhere", "192.0.2.1"))},
		want: map[string]nodelabels.Match{"t/a": {Reason: hostfleetv1alpha1.ReasonNodeNotFound},
			"t/b": {Reason: hostfleetv1alpha1.ReasonNodeNotFound}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := nodelabels.MatchAll("wl", tc.claims, nodes)
			g.Expect(got).To(HaveLen(len(tc.want)))
			for k, want := range tc.want {
				g.Expect(got).To(HaveKey(k))
				m := got[k]
				g.Expect(m.Reason).To(Equal(want.Reason), "%s: %s", k, m.Message)
				g.Expect(m.Node).To(Equal(want.Node), k)
				if want.Node != "" {
					g.Expect(m.Via).To(Equal(want.Via), k)
				} else {
					g.Expect(m.Message).To(ContainSubstring("wl"), "says which cluster")
					g.Expect(m.Message).To(ContainSubstring(hostfleetv1alpha1.AnnotationNode), "says what to set")
				}
			}
		})
	}
}
