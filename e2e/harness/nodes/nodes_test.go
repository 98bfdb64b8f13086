//go:build linux

package nodes_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/nodes"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/e2e/harness/registry"
)

// TestMain runs the test, and everything it starts, at nice -10, as the
// local end-to-end suite does: other packages share the cores.
func TestMain(m *testing.M) {
	if err := planes.ReniceProcess(os.Getpid(), -10); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// build builds one of this package's programs, static, into dir.
func build(t *testing.T, pkg, dir string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// TestNode: a plane with one real node runs a hardened Deployment as a
// real cluster would: the image pulled from the in-process registry, an
// init container, a projected token used through the kubernetes Service
// (kube-proxy), an exec liveness probe and an HTTP readiness probe,
// capabilities dropped, seccomp, limits and a read-only root; its logs
// through the API server. Stopped, the node leaves nothing behind on the
// host.
func TestNode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("nodes run containers in namespaces of their own: run the test as root")
	}
	g := NewWithT(t)
	ctx := context.Background()
	host, err := nodes.PrepareHost()
	g.Expect(err).NotTo(HaveOccurred())
	reg, err := registry.StartOn(nodes.HostAddress)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(reg.Close)
	bin := t.TempDir()
	g.Expect(nodes.PushPause(reg, bin)).To(Succeed())
	img, err := registry.Binary(build(t, "./nodetest", bin), "/nodetest", "65532", "/nodetest")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reg.Push("example.com/hostfleet/nodetest:latest", img)).To(Succeed())
	mirrors, err := reg.Upstreams()
	g.Expect(err).NotTo(HaveOccurred())

	f, err := planes.Start(ctx, planes.Options{Dir: t.TempDir(), ForNodes: true, CRDSets: []string{}}, "node-1")
	g.Expect(err).NotTo(HaveOccurred())
	var node *nodes.Node
	t.Cleanup(func() {
		if t.Failed() && node != nil {
			for _, l := range node.Logs() {
				b, _ := os.ReadFile(l)
				t.Logf("--- %s ---\n%s", l, tailLines(string(b), 30))
			}
		}
		g.Expect(f.Stop()).To(Succeed())
		if node != nil {
			g.Expect(node.Leftovers()).To(BeEmpty(), "nothing of the node remains")
		}
		g.Expect(host.Restore()).To(Succeed())
		g.Expect(host.Leftovers()).To(BeEmpty(), "nothing of the nodes remains on the host")
	})
	_, err = f.StartControllerManager("node-1")
	g.Expect(err).NotTo(HaveOccurred())
	start := time.Now()
	node, err = f.StartNode(ctx, "node-1", planes.NodeOptions{Index: 201, Registry: reg.Host, Mirrors: mirrors,
		PauseImage: nodes.PauseImage})
	g.Expect(err).NotTo(HaveOccurred())
	kubelet, containerd := node.Versions()
	t.Logf("node Ready in %s: %s, %s", time.Since(start).Round(100*time.Millisecond), kubelet, containerd)
	shares, err := os.ReadFile("/sys/fs/cgroup/cpu/hostfleet-node-1/cpu.shares")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimSpace(string(shares))).To(Equal("9548"), "the node's pods weigh together what a nice -10 process does")

	c := f.Plane("node-1").Client
	g.Expect(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nodetest"}})).To(Succeed())
	g.Expect(c.Create(ctx, reader())).To(Succeed())
	g.Expect(c.Create(ctx, readerBinding())).To(Succeed())
	start = time.Now()
	g.Expect(c.Create(ctx, deployment())).To(Succeed())
	var pod corev1.Pod
	g.Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(c.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"app": "nodetest"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		pod = pods.Items[0]
		g.Expect(pod.Spec.NodeName).To(Equal("node-1"))
		g.Expect(pod.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionTrue))),
			"%v", pod.Status.ContainerStatuses)
	}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	t.Logf("pod %s Ready in %s at %s", pod.Name, time.Since(start).Round(100*time.Millisecond), pod.Status.PodIP)
	g.Expect(pod.Status.PodIP).To(HavePrefix("10.200.201."))

	cs, err := kubernetes.NewForConfig(f.Plane("node-1").Config)
	g.Expect(err).NotTo(HaveOccurred())
	logs, err := cs.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{Container: "nodetest"}).DoRaw(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "logs through the API server and the kubelet")
	g.Expect(string(logs)).To(ContainSubstring("listed 1 pods of default through https://10.0.0.1:443"))
	g.Consistently(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&pod), &pod)).To(Succeed())
		g.Expect(pod.Status.ContainerStatuses[0].RestartCount).To(BeZero(), "the liveness probe passes")
	}).WithTimeout(5 * time.Second).Should(Succeed())
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// deployment runs nodetest hardened: an init container writing into an
// emptyDir, the main container reading it.
func deployment() *appsv1.Deployment {
	labels := map[string]string{"app": "nodetest"}
	hardened := &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	limits := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("200m")}}
	shared := []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nodetest"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "nodetest",
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Volumes: []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
					InitContainers: []corev1.Container{{Name: "init", Image: "example.com/hostfleet/nodetest:latest", ImagePullPolicy: corev1.PullIfNotPresent,
						Args: []string{"-mode=init"}, SecurityContext: hardened, Resources: limits, VolumeMounts: shared}},
					Containers: []corev1.Container{{Name: "nodetest", Image: "example.com/hostfleet/nodetest:latest", ImagePullPolicy: corev1.PullIfNotPresent,
						SecurityContext: hardened, Resources: limits, VolumeMounts: shared,
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
							PeriodSeconds: 1},
						LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/nodetest", "-mode=probe"}}},
							PeriodSeconds: 2},
					}},
				},
			},
		},
	}
}

// reader lets nodetest list the pods of its namespace.
func reader() *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nodetest"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}}}
}

func readerBinding() *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nodetest"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "nodetest"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "nodetest"}}}
}
