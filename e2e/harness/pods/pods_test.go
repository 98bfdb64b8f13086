//go:build linux

package pods_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/e2e/harness/pods"
)

// servePod is what the test binary does when the runner starts it as a pod:
// it answers questions about what it sees from inside.
func servePod() {
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat("/config/not-ready"); err == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(r.URL.Query().Get("path"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_, _ = w.Write(b)
	})
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, os.Getenv(r.URL.Query().Get("name")))
	})
	mux.HandleFunc("/whoami", func(w http.ResponseWriter, r *http.Request) {
		// In-cluster config: KUBERNETES_SERVICE_HOST/PORT, token and ca.crt.
		cfg, err := rest.InClusterConfig()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp, err := c.Post(cfg.Host+"/apis/authentication.k8s.io/v1/selfsubjectreviews", "application/json",
			strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(w, resp.Body)
	})
	mux.HandleFunc("/exit", func(http.ResponseWriter, *http.Request) { os.Exit(3) })
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Println("serving on :8080")
	if err := srv.ListenAndServe(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("PODS_TEST_POD") == "1" {
		servePod()
		return
	}
	os.Exit(m.Run())
}

func TestRunnerRunsADeploymentAsAPod(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the pod runner needs root (mount and network namespaces); run the e2e tests as root")
	}
	g := NewWithT(t)
	fleet := planes.ForTestWith(t, planes.Options{CRDSets: []string{}, ForPods: true}, "p")
	fleet.StartControllerManagerForTest(t, "p")
	plane := fleet.Plane("p")
	c := plane.Client
	ctx := context.Background()

	self, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	port, _ := strconv.Atoi(mustURL(t, plane.Config.Host).Port())
	runner, err := pods.Start(ctx, pods.Options{
		Name:         "p",
		Config:       plane.Config,
		Images:       map[string]pods.Image{"podtest": {Binary: self, Path: "/podtest", Entrypoint: []string{"/podtest"}}},
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
					Containers: []corev1.Container{{
						Name:  "main",
						Image: "example.com/tests/podtest:v1",
						Env: []corev1.EnvVar{
							{Name: "PODS_TEST_POD", Value: "1"},
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
	list := &corev1.PodList{}
	g.Expect(c.List(ctx, list, client.InNamespace("demo"))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	return &list.Items[0]
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
