package inventory

import (
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/agent/binder"
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
	in := Input{
		Hosts: []metal3api.BareMetalHost{
			host("gold", "g1", metal3api.StateAvailable, map[string]string{"example.com/gpu": "yes", "secret.org/x": "1"}),
			taken,
			host("gold", "g3", metal3api.StateInspecting, map[string]string{"example.com/gpu": "yes"}),
			host("gold", "g4", metal3api.StateReady, map[string]string{"example.com/gpu": "yes", binder.FailureDomainLabel: "rack-1"}),
			host("plain", "p1", metal3api.StateAvailable, nil),
			reserved,
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
	g.Expect(got.Total).To(Equal(int32(6)))
	g.Expect(got.Available).To(Equal(int32(4)))
	g.Expect(got.Pools).To(Equal([]hostfleetv1alpha1.HostPool{
		{Labels: map[string]string{"example.com/gpu": "yes"}, FailureDomain: "rack-1", Namespaces: []string{"tenant-a"}, Total: 1, Available: 1},
		{Labels: map[string]string{"example.com/gpu": "yes"}, Namespaces: []string{"tenant-a"}, Total: 3, Available: 1},
		{Namespaces: []string{"tenant-a", "tenant-b"}, Total: 1, Available: 1},
		{Namespaces: []string{"tenant-a", "tenant-b"}, Taints: []string{"reserved"}, Total: 1, Available: 1},
	}))
	g.Expect(Build(in)).To(Equal(got), "deterministic")
}
