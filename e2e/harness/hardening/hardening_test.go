package hardening

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestCheck(t *testing.T) {
	g := NewWithT(t)
	hardened := func() *corev1.PodSpec {
		return &corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "c",
				SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("1")}}}},
		}
	}
	g.Expect(Check(hardened())).To(BeEmpty())
	for _, tc := range []struct {
		name string
		mut  func(*corev1.PodSpec)
		want string
	}{
		{"no seccomp", func(p *corev1.PodSpec) { p.SecurityContext.SeccompProfile = nil }, "pod: securityContext.seccompProfile.type RuntimeDefault"},
		{"may run as root", func(p *corev1.PodSpec) { p.SecurityContext.RunAsNonRoot = nil }, "container c: runAsNonRoot"},
		{"writable root", func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr.To(false) }, "container c: readOnlyRootFilesystem"},
		{"escalation", func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil }, "container c: allowPrivilegeEscalation false"},
		{"capabilities kept", func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.Capabilities = nil }, "container c: capabilities.drop [ALL]"},
		{"no memory limit", func(p *corev1.PodSpec) { delete(p.Containers[0].Resources.Limits, corev1.ResourceMemory) }, "container c: resources.limits.memory"},
		{"an init container without limits", func(p *corev1.PodSpec) {
			init := p.Containers[0]
			init.Name, init.Resources = "init", corev1.ResourceRequirements{}
			p.InitContainers = []corev1.Container{init}
		}, "container init: resources.limits.cpu"},
	} {
		p := hardened()
		tc.mut(p)
		g.Expect(Check(p)).To(ContainElement(tc.want), tc.name)
	}
}
