// Package hardening says whether a pod runs as a real node expects of
// Hostfleet's deployables: every container non-root, on a read-only root
// filesystem, with every capability dropped and no privilege escalation,
// under the runtime's default seccomp profile, and within memory and CPU
// limits. The tests of every renderer (the operator's hub Deployment, the
// add-on's agent, the kustomize base and the Helm chart) call it.
package hardening

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Check lists what in a pod spec falls short, each naming the container
// (or "pod") and what to set; nothing when the pod is hardened.
func Check(spec *corev1.PodSpec) []string {
	var out []string
	psc := spec.SecurityContext
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		out = append(out, "pod: securityContext.seccompProfile.type RuntimeDefault")
	}
	podNonRoot := psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		sc := c.SecurityContext
		if !podNonRoot && (sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) {
			out = append(out, fmt.Sprintf("container %s: runAsNonRoot", c.Name))
		}
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			out = append(out, fmt.Sprintf("container %s: readOnlyRootFilesystem", c.Name))
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			out = append(out, fmt.Sprintf("container %s: allowPrivilegeEscalation false", c.Name))
		}
		if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			out = append(out, fmt.Sprintf("container %s: capabilities.drop [ALL]", c.Name))
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU} {
			if _, ok := c.Resources.Limits[r]; !ok {
				out = append(out, fmt.Sprintf("container %s: resources.limits.%s", c.Name, r))
			}
		}
	}
	return out
}
