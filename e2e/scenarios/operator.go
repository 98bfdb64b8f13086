package scenarios

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	operatorv1alpha1 "github.com/hostfleet/hostfleet/operator/api/v1alpha1"
)

// installOperatorFrom applies a tree's operator kustomize base (this
// repository's, or a release's worktree), deploy/operator, to a plane as
// `kubectl apply -k` would, with the image a user pins in an overlay, and
// waits for the pods to run that image. Applied again with another
// tree and image, it upgrades the operator.
func (e *fleet) installOperatorFrom(plane, root, ref string) {
	e.t.Helper()
	g := NewWithT(e.t)
	ctx := context.Background()
	c := e.Client(plane)
	overlay, err := os.MkdirTemp(e.Dir(), "operator-overlay-"+plane+"-")
	g.Expect(err).NotTo(HaveOccurred())
	base, err := filepath.Rel(overlay, filepath.Join(root, "deploy", "operator"))
	g.Expect(err).NotTo(HaveOccurred())
	repo, tag, _ := strings.Cut(ref, ":")
	g.Expect(os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), fmt.Appendf(nil,
		"resources:\n- %s\nimages:\n- name: %s\n  newTag: %q\n", base, repo, tag), 0o644)).To(Succeed())
	out, err := exec.Command(Tool(e.t, "kustomize", "kustomize"), "build", overlay).Output()
	g.Expect(err).NotTo(HaveOccurred(), "kustomize build %s/deploy/operator with image %s", root, ref)
	objs, err := planes.Decode(out)
	g.Expect(err).NotTo(HaveOccurred())
	for _, u := range objs {
		g.Expect(c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("kubectl"), client.ForceOwnership)).To(Succeed(), "%s %s", u.GetKind(), u.GetName())
	}
	e.expectDeployment(plane, "hostfleet-operator", "hostfleet-operator", ref)
}

// expectHubAvailable waits for a HostfleetHub to be Applied and Available:
// the hub's Deployment, rendered by the operator, run on a node.
func (e *fleet) expectHubAvailable(plane, name string) *operatorv1alpha1.HostfleetHub {
	e.t.Helper()
	start := time.Now()
	h := &operatorv1alpha1.HostfleetHub{}
	NewWithT(e.t).Eventually(func(g Gomega) {
		g.Expect(e.Client(plane).Get(context.Background(), client.ObjectKey{Name: name}, h)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(h.Status.Conditions, operatorv1alpha1.ConditionApplied)).To(BeTrue(), "%v", h.Status.Conditions)
		g.Expect(meta.IsStatusConditionTrue(h.Status.Conditions, operatorv1alpha1.ConditionAvailable)).To(BeTrue(), "%v", h.Status.Conditions)
		g.Expect(h.Status.ObservedGeneration).To(Equal(h.Generation))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "HostfleetHub %s on %s", name, plane)
	e.t.Logf("HostfleetHub %s is Available on %s, its hub in %s (%s)", name, plane, h.Status.Namespace, time.Since(start).Round(100*time.Millisecond))
	return h
}

// uninstallHub deletes a HostfleetHub and waits until the operator has
// removed the hub: the HostfleetHub gone, Hostfleet's CRDs gone from the hub,
// and no hub process left on the plane that ran it.
func (e *fleet) uninstallHub(plane, name, namespace string) {
	e.t.Helper()
	g := NewWithT(e.t)
	ctx := context.Background()
	c := e.Client(plane)
	start := time.Now()
	h := &operatorv1alpha1.HostfleetHub{}
	h.Name = name
	g.Expect(c.Delete(ctx, h)).To(Succeed())
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKey{Name: name}, h) }).
		WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Satisfy(apierrors.IsNotFound), "the operator uninstalls the hub")
	hub := e.Client("hub")
	g.Eventually(func(g Gomega) {
		for _, crd := range []string{"tenants.hostfleet.io", "hostinventories.hostfleet.io", "clustertenancies.hostfleet.io"} {
			g.Expect(hub.Get(ctx, client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{})).To(Satisfy(apierrors.IsNotFound), crd)
		}
		g.Expect(e.Running(plane, namespace, "hostfleet-hub")).To(BeEmpty(), "no hub process left")
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	e.t.Logf("HostfleetHub %s uninstalled from %s (%s)", name, plane, time.Since(start).Round(100*time.Millisecond))
}
