//go:build linux

package pods_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/e2e/harness/pods"
	"github.com/hostfleet/hostfleet/e2e/harness/registry"
)

// podImage is the image the tests run: podtest, built static, as user
// 65532, pushed to the runner's registry.
const podImage = "example.com/tests/podtest:v1"

// rootImage is the same program running as root.
const rootImage = "example.com/tests/podtest:root"

type runnerEnv struct {
	c      client.Client
	runner *pods.Runner
}

func startRunner(t *testing.T) *runnerEnv {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the pod runner needs root (mount and network namespaces); run the e2e tests as root")
	}
	g := NewWithT(t)
	fleet := planes.ForTestWith(t, planes.Options{CRDSets: []string{}, ForPods: true}, "p")
	fleet.StartControllerManagerForTest(t, "p")
	plane := fleet.Plane("p")

	bin := filepath.Join(t.TempDir(), "podtest")
	build := exec.Command("go", "build", "-o", bin, "./podtest")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	reg := registry.Start()
	t.Cleanup(reg.Close)
	for ref, user := range map[string]string{podImage: "65532:65532", rootImage: ""} {
		img, err := registry.Binary(bin, "/podtest", user, "/podtest")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(reg.Push(ref, img)).To(Succeed())
	}

	port, _ := strconv.Atoi(mustURL(t, plane.Config.Host).Port())
	runner, err := pods.Start(context.Background(), pods.Options{
		Name:         "p",
		Config:       plane.Config,
		Registry:     reg.Host,
		ForwardPorts: []int{port},
		Dir:          t.TempDir(),
		Logf:         t.Logf,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		runner.Stop()
		if t.Failed() {
			for _, l := range runner.Logs() {
				b, _ := os.ReadFile(l)
				t.Logf("---- %s\n%s", filepath.Base(l), b)
			}
		}
	})
	return &runnerEnv{c: plane.Client, runner: runner}
}

func TestRunner(t *testing.T) {
	e := startRunner(t)
	t.Run("RunsADeploymentAsAPod", func(t *testing.T) { testRunsADeploymentAsAPod(t, e) })
	t.Run("Liveness", func(t *testing.T) { testLiveness(t, e) })
	t.Run("RefusesRoot", func(t *testing.T) { testRefusesRoot(t, e) })
}

// deployment is a Deployment of one podtest container in namespace ns.
func deployment(ns, name, image string, edit func(*corev1.Container)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	c := corev1.Container{Name: "main", Image: image, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	if edit != nil {
		edit(&c)
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}},
		},
	}
}

func testRunsADeploymentAsAPod(t *testing.T, e *runnerEnv) {
	g := NewWithT(t)
	c, runner := e.c, e.runner
	ctx := context.Background()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "creds"},
		StringData: map[string]string{"password": "s3cret"}})).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "settings"},
		Data: map[string]string{"color": "blue"}})).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "runner-test"}})).To(Succeed())

	labels := map[string]string{"app": "podtest"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "podtest"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "runner-test",
					SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
					Containers: []corev1.Container{{
						Name:            "main",
						Image:           podImage,
						SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)},
						WorkingDir:      "/config",
						Env: []corev1.EnvVar{
							{Name: "MY_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "color"}}},
							{Name: "GREETING", Value: "$(COLOR) sky in $(MY_NAMESPACE)"},
						},
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "creds", MountPath: "/var/run/creds", ReadOnly: true},
							{Name: "scratch", MountPath: "/config"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
						{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	g.Expect(c.Create(ctx, d)).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "podtest"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromString("http")}}}})).To(Succeed())

	// The Deployment becomes available once the readiness probe passes.
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(1))
		g.Expect(d.Status.Conditions).To(ContainElement(And(
			HaveField("Type", appsv1.DeploymentAvailable), HaveField("Status", corev1.ConditionTrue))))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	pod := onlyPod(ctx, g, c)
	g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
	g.Expect(pod.OwnerReferences).To(ConsistOf(HaveField("UID", d.UID)))
	base := "http://" + pod.Status.PodIP + ":8080"
	get := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			return "error: " + err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	// What the process sees: env, volumes, in-cluster access as its service account.
	g.Expect(get("/env?name=GREETING")).To(Equal("blue sky in demo"))
	g.Expect(get("/file?path=/var/run/creds/password")).To(Equal("s3cret"))
	g.Expect(get("/file?path=/var/run/secrets/kubernetes.io/serviceaccount/namespace")).To(Equal("demo"))
	g.Expect(get("/whoami")).To(ContainSubstring(`"username":"system:serviceaccount:demo:runner-test"`))
	g.Expect(pod.Status.ContainerStatuses[0].ImageID).To(HavePrefix(podImage+"@sha256:"), "pulled from the registry")

	// The image's user and the container's working directory; a read-only
	// root, and writable volumes.
	g.Expect(get("/id")).To(Equal("65532:65532 /config"))
	g.Expect(get("/write?path=/podtest-was-here&data=x")).To(ContainSubstring("read-only file system"))
	g.Expect(get("/write?path=/config/note&data=x")).To(BeEmpty())
	g.Expect(get("/file?path=/config/note")).To(Equal("x"))
	g.Expect(get("/write?path=/var/run/creds/password&data=x")).To(ContainSubstring("read-only file system"), "a readOnly volume mount")
	g.Expect(get("/file?path=/etc/hostname")).To(Equal(pod.Name + "\n"))
	g.Expect(get("/file?path=/bin/sh")).To(ContainSubstring("no such file"), "the image's files, not the host's")

	// The Service has an EndpointSlice at the pod's address, with the target port.
	g.Eventually(func(g Gomega) {
		slices := &discoveryv1.EndpointSliceList{}
		g.Expect(c.List(ctx, slices, client.InNamespace("demo"), client.MatchingLabels{discoveryv1.LabelServiceName: "podtest"})).To(Succeed())
		g.Expect(slices.Items).To(HaveLen(1))
		g.Expect(slices.Items[0].Endpoints).To(ConsistOf(And(
			HaveField("Addresses", ConsistOf(pod.Status.PodIP)), HaveField("Conditions.Ready", HaveValue(BeTrue())))))
		g.Expect(slices.Items[0].Ports).To(ConsistOf(HaveField("Port", HaveValue(BeEquivalentTo(8080)))))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	// A changed Secret reaches the volume.
	secret := &corev1.Secret{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "creds"}, secret)).To(Succeed())
	secret.Data["password"] = []byte("rotated")
	g.Expect(c.Update(ctx, secret)).To(Succeed())
	g.Eventually(func() string { return get("/file?path=/var/run/creds/password") }).WithTimeout(10 * time.Second).Should(Equal("rotated"))

	// A process that exits is restarted, and the restart is counted.
	_ = get("/exit")
	g.Eventually(func(g Gomega) {
		p := onlyPod(ctx, g, c)
		g.Expect(p.Status.ContainerStatuses).To(ConsistOf(And(HaveField("RestartCount", BeEquivalentTo(1)), HaveField("Ready", BeTrue()))))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(get("/env?name=COLOR")).To(Equal("blue"))

	// Deleting the Deployment stops the process; garbage collection takes the Pod.
	g.Expect(c.Delete(ctx, d)).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, err := http.Get(base + "/readyz")
		g.Expect(err).To(HaveOccurred())
		list := &corev1.PodList{}
		g.Expect(c.List(ctx, list, client.InNamespace("demo"))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(runner.Running("demo", "podtest")).To(BeEmpty())
}

func onlyPod(ctx context.Context, g Gomega, c client.Client) *corev1.Pod {
	return podOf(ctx, g, c, "demo", "podtest")
}

// podOf is the only pod of an app.
func podOf(ctx context.Context, g Gomega, c client.Client, ns, app string) *corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"app": app})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	return &list.Items[0]
}

// testLiveness: a failing liveness probe restarts the container, which
// starts with a fresh writable root.
func testLiveness(t *testing.T, e *runnerEnv) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "live"}})).To(Succeed())
	d := deployment("live", "live", rootImage, func(c *corev1.Container) {
		c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1, FailureThreshold: 2}
	})
	g.Expect(e.c.Create(ctx, d)).To(Succeed())
	var base string
	g.Eventually(func(g Gomega) {
		p := podOf(ctx, g, e.c, "live", "live")
		g.Expect(p.Status.ContainerStatuses).To(ConsistOf(HaveField("Ready", BeTrue())))
		base = "http://" + p.Status.PodIP + ":8080"
	}).WithTimeout(30 * time.Second).Should(Succeed())
	resp, err := http.Get(base + "/write?path=/unhealthy&data=x")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "the root is writable without readOnlyRootFilesystem (by root)")
	resp.Body.Close()
	g.Eventually(func(g Gomega) {
		p := podOf(ctx, g, e.c, "live", "live")
		g.Expect(p.Status.ContainerStatuses).To(ConsistOf(And(HaveField("RestartCount", BeEquivalentTo(1)), HaveField("Ready", BeTrue()))))
	}).WithTimeout(30*time.Second).Should(Succeed(), "restarted by its liveness probe")
	// Without a readiness probe a container is Ready once started, maybe
	// before it listens: ask until it answers.
	g.Eventually(func(g Gomega) {
		resp, err := http.Get(base + "/healthz")
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "a new container: the old writable layer is gone")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		p := podOf(ctx, g, e.c, "live", "live")
		g.Expect(p.Status.ContainerStatuses).To(ConsistOf(HaveField("RestartCount", BeEquivalentTo(1))))
	}).WithTimeout(3 * time.Second).Should(Succeed())
}

// testRefusesRoot: under runAsNonRoot, an image that runs as root, or a
// runAsUser of 0, is not started, and the Pod says why; an image the
// registry does not have waits in ErrImagePull.
func testRefusesRoot(t *testing.T, e *runnerEnv) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "strict"}})).To(Succeed())
	nonRoot := func(c *corev1.Container) { c.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)} }
	g.Expect(e.c.Create(ctx, deployment("strict", "root-image", rootImage, nonRoot))).To(Succeed())
	g.Expect(e.c.Create(ctx, deployment("strict", "root-user", podImage, func(c *corev1.Container) {
		nonRoot(c)
		c.SecurityContext.RunAsUser = ptr.To[int64](0)
	}))).To(Succeed())
	g.Expect(e.c.Create(ctx, deployment("strict", "missing", "example.com/tests/nothing:v1", nil))).To(Succeed())
	g.Expect(e.c.Create(ctx, deployment("strict", "root-allowed", rootImage, nil))).To(Succeed())

	waiting := func(app, reason, msg string) {
		g.Eventually(func(g Gomega) {
			p := podOf(ctx, g, e.c, "strict", app)
			g.Expect(p.Status.ContainerStatuses).To(ConsistOf(HaveField("State.Waiting", And(
				HaveField("Reason", reason), HaveField("Message", ContainSubstring(msg))))))
			g.Expect(p.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.PodReady),
				HaveField("Status", corev1.ConditionFalse), HaveField("Message", ContainSubstring(msg)))))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
	waiting("root-image", "CreateContainerConfigError", "container has runAsNonRoot and image will run as root")
	waiting("root-user", "CreateContainerConfigError", "container's runAsUser breaks non-root policy")
	waiting("missing", "ErrImagePull", "example.com/tests/nothing:v1")
	g.Eventually(func(g Gomega) {
		p := podOf(ctx, g, e.c, "strict", "root-allowed")
		g.Expect(p.Status.ContainerStatuses).To(ConsistOf(HaveField("Ready", BeTrue())))
		resp, err := http.Get("http://" + p.Status.PodIP + ":8080/id")
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		g.Expect(string(b)).To(Equal("0:0 /"), "without runAsNonRoot, the image's root user runs")
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
