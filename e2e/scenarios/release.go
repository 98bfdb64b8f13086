package scenarios

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/programs/chaos"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	operatorv1alpha1 "github.com/hostfleet/hostfleet/operator/api/v1alpha1"
)

// release is the project's last release: a git worktree of the commit
// docs/CHANGELOG.md names, in the fleet's scratch directory (its deploy/
// bundles), and the images hack/images built there, loaded into the
// clusters.
type release struct {
	Version, Commit string
	// Root is the worktree.
	Root string
	// Images are its operator's, hub's and agent's references.
	Images map[string]string
}

// changelogRelease is a release's heading and the commit it names.
var changelogRelease = regexp.MustCompile("(?m)^## (v[0-9]+\\.[0-9]+\\.[0-9]+)\\s+Commit `([0-9a-f]{40})`")

// LastRelease is the newest release docs/CHANGELOG.md names, and its commit.
func LastRelease() (version, commit string, err error) {
	data, err := os.ReadFile(filepath.Join(Root(), "docs", "CHANGELOG.md"))
	if err != nil {
		return "", "", err
	}
	m := changelogRelease.FindSubmatch(data)
	if m == nil {
		return "", "", fmt.Errorf("docs/CHANGELOG.md names no release: a heading \"## vX.Y.Z\" then \"Commit `<sha>`\"")
	}
	return string(m[1]), string(m[2]), nil
}

// release builds the last release, once: a worktree of its commit (git
// tags need not travel with the repository; the commit does), and its
// images for this machine's architecture.
func (e *fleet) release() *release {
	if e.last != nil {
		return e.last
	}
	e.t.Helper()
	version, commit, err := LastRelease()
	if err != nil {
		e.t.Fatal(err)
	}
	start := time.Now()
	dir := filepath.Join(e.Dir(), "release-"+version)
	e.git("worktree", "add", "--detach", dir, commit)
	e.top.Cleanup(func() { _ = exec.Command("git", append(gitArgs(), "worktree", "remove", "--force", dir)...).Run() })
	cmd := exec.Command("go", "run", "./hack/images", "-out", filepath.Join(dir, "bin", "images"),
		"-version", version, "-revision", commit, "-arch", runtime.GOARCH)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("build %s's images from commit %s: %v\n%s", version, commit, err, out)
	}
	e.last = &release{Version: version, Commit: commit, Root: dir, Images: e.LoadImages(e.t, filepath.Join(dir, "bin", "images"))}
	e.t.Logf("release %s: images built from commit %s in a worktree (%s): %v", version, commit[:12], time.Since(start).Round(time.Second), e.last.Images)
	return e.last
}

// gitArgs run git in the repository, whoever owns its checkout (make
// test runs as root).
func gitArgs() []string { return []string{"-c", "safe.directory=*", "-C", Root()} }

// git runs git in the repository.
func (e *fleet) git(args ...string) {
	e.t.Helper()
	if out, err := exec.Command("git", append(gitArgs(), args...)...).CombinedOutput(); err != nil {
		e.t.Fatalf("git %s: %v\n%s (the upgrade scenarios need the repository's history)", strings.Join(args, " "), err, out)
	}
}

// helm runs the tool cache's helm against a plane.
func (e *fleet) helm(plane string, args ...string) {
	e.t.Helper()
	start := time.Now()
	out, err := exec.Command(Tool(e.t, "helm", "helm"), append(args, "--kubeconfig", e.Kubeconfig(plane))...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("helm %s on %s: %v\n%s", strings.Join(args, " "), plane, err, out)
	}
	e.t.Logf("helm %s (on %s, %s)", strings.Join(args[:2], " "), plane, time.Since(start).Round(100*time.Millisecond))
}

// helmOperator installs (or upgrades to) the operator's chart from a
// tree's deploy/helm with an image, as `helm upgrade --install` does.
func (e *fleet) helmOperator(plane, root, ref string) {
	repo, tag, _ := strings.Cut(ref, ":")
	e.helm(plane, "upgrade", "--install", "hostfleet-operator", filepath.Join(root, "deploy", "helm", "hostfleet-operator"),
		"--namespace", "hostfleet-operator", "--create-namespace", "--wait=false",
		"--set", "image.repository="+repo, "--set", "image.tag="+tag)
	e.expectDeployment(plane, "hostfleet-operator", "hostfleet-operator", ref)
}

// expectDeployment waits until a Deployment runs an image: its template
// names it and its pods have been replaced.
func (e *fleet) expectDeployment(plane, namespace, name, image string) {
	e.t.Helper()
	start := time.Now()
	NewWithT(e.t).Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(e.Client(plane).Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(image))
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.AvailableReplicas).To(BeNumerically(">=", 1))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "Deployment %s/%s on %s runs %s", namespace, name, plane, image)
	e.t.Logf("Deployment %s/%s on %s runs %s (%s)", namespace, name, plane, image, time.Since(start).Round(100*time.Millisecond))
}

// served is what must not change for a claim through an upgrade: its host,
// the host's binding, and when its Ready and Associated last changed.
type served struct {
	Host, HostHolder       string
	Ready, Associated      metav1.Time
	ReadyStatus, HostState string
}

// servedNow reads a claim (Ready, on cluster) and its host.
func (e *fleet) servedNow(g Gomega, name, cluster string) served {
	ctx := context.Background()
	c := &metal3api.HostClaim{}
	g.Expect(e.Client("hub").Get(ctx, client.ObjectKey{Namespace: "tenant-acme", Name: name}, c)).To(Succeed())
	g.Expect(c.Status.BareMetalHost).NotTo(BeNil(), "claim %s is bound", name)
	ready := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionReady)
	assoc := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(assoc).NotTo(BeNil())
	h := &metal3api.BareMetalHost{}
	g.Expect(e.Client(cluster).Get(ctx, client.ObjectKey{Namespace: c.Status.BareMetalHost.Namespace, Name: c.Status.BareMetalHost.Name}, h)).To(Succeed())
	return served{Host: h.Namespace + "/" + h.Name, HostHolder: h.Annotations[hostfleetv1alpha1.AnnotationClaimUID],
		Ready: ready.LastTransitionTime, Associated: assoc.LastTransitionTime, ReadyStatus: string(ready.Status),
		HostState: string(h.Status.Provisioning.State)}
}

// expectServedAsBefore checks that claims kept their hosts and their Ready
// never changed since before: any flap of Ready or of the binding moves a
// condition's lastTransitionTime.
func (e *fleet) expectServedAsBefore(before map[string]served, cluster string) {
	e.t.Helper()
	g := NewWithT(e.t)
	for name, was := range before {
		g.Expect(e.servedNow(g, name, cluster)).To(Equal(was), "claim %s through the upgrade: same host, bound to it, Ready since before", name)
	}
}

// setAgentImage pins the agents of a HostfleetHub to an image ("": the
// operator's release's).
func (e *fleet) setAgentImage(plane, hub, image string) {
	e.t.Helper()
	ctx := context.Background()
	NewWithT(e.t).Eventually(func() error {
		h := &operatorv1alpha1.HostfleetHub{}
		if err := e.Client(plane).Get(ctx, client.ObjectKey{Name: hub}, h); err != nil {
			return err
		}
		h.Spec.Agent.Image = image
		return e.Client(plane).Update(ctx, h)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// upgradeStep upgrades a live fleet from the last release to this tree
// through the operator's kustomize bundle: the hub first, its agents held
// at the release (version skew: hub N, agents N-1) while a new claim is
// bound, then the agents. No claim's Ready flaps and no host is released.
func (e *fleet) upgradeStep() {
	rel := e.release()
	g := NewWithT(e.t)
	before := map[string]served{"web-1": e.servedNow(g, "web-1", "infra-1")}
	e.t.Logf("from %s: web-1 on %s", rel.Version, before["web-1"].Host)

	e.setAgentImage("hub", "hub", rel.Images["hostfleet-agent"]) // hold the agents back
	e.installOperatorFrom("hub", Root(), e.Image("hostfleet-operator"))
	e.expectDeployment("hub", "hostfleet-system", "hostfleet-hub", e.Image("hostfleet-hub"))
	g.Eventually(func(g Gomega) {
		h := &operatorv1alpha1.HostfleetHub{}
		g.Expect(e.Client("hub").Get(context.Background(), client.ObjectKey{Name: "hub"}, h)).To(Succeed())
		g.Expect(h.Status.Version).NotTo(Equal(rel.Version))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the operator of this tree applied the hub and says so")
	e.expectHubAvailable("hub", "hub")
	e.expectDeployment("infra-1", addonNamespace, hostfleetv1alpha1.AddonName, rel.Images["hostfleet-agent"])

	// Skew: a claim bound by the release's agent under this tree's hub.
	e.expectClaimOfSizeReady("skew-1", "infra-1", "large") // web-1 holds the medium host
	before["skew-1"] = e.servedNow(g, "skew-1", "infra-1")

	e.setAgentImage("hub", "hub", "")
	e.expectDeployment("infra-1", addonNamespace, hostfleetv1alpha1.AddonName, e.Image("hostfleet-agent"))
	e.expectAddonAvailable("infra-1")
	e.expectServedAsBefore(before, "infra-1")
	e.deleteClaim("skew-1")
	e.expectInvariants("infra-1")
}

// expectInvariants waits until the invariants make chaos checks hold on
// the hub and the named clusters, and the fleet is at rest.
func (e *fleet) expectInvariants(clusters ...string) {
	e.t.Helper()
	infras := map[string]client.Client{}
	for _, c := range clusters {
		infras[c] = e.Client(c)
	}
	var last chaos.Check
	NewWithT(e.t).Eventually(func(g Gomega) {
		var err error
		last, err = chaos.Invariants(context.Background(), e.Client("hub"), "tenant-acme", infras)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last.Converged()).To(BeTrue(), last.String())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	e.t.Logf("the invariants of make chaos hold: %s", last)
}

// deleteClaim deletes a tenant's claim and waits until it is gone (its
// host released).
func (e *fleet) deleteClaim(name string) {
	e.t.Helper()
	ctx := context.Background()
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: name}}
	g := NewWithT(e.t)
	g.Expect(e.Client("hub").Delete(ctx, c)).To(Succeed())
	g.Eventually(func() error { return e.Client("hub").Get(ctx, client.ObjectKeyFromObject(c), c) }).
		WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Satisfy(apierrors.IsNotFound), "claim %s released and gone", name)
}
