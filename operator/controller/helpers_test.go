package controller_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/app"
	"github.com/hostfleet/hostfleet/internal/setup"
	operatorv1alpha1 "github.com/hostfleet/hostfleet/operator/api/v1alpha1"
	"github.com/hostfleet/hostfleet/operator/controller"
)

// bundleIdentity installs, on a plane, the operator's ServiceAccount and RBAC
// exactly as deploy/operator/rbac.yaml has them, and returns a config with a
// token of that ServiceAccount: what the operator's pod gets.
func bundleIdentity(t *testing.T, f *planes.Fleet, plane string) *rest.Config {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	c := f.Plane(plane).Client
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hostfleet-operator"}})).To(Succeed())
	data, err := os.ReadFile("../../deploy/operator/rbac.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := planes.Decode(data)
	g.Expect(err).NotTo(HaveOccurred())
	for _, u := range objs {
		g.Expect(c.Create(ctx, u)).To(Succeed(), "%s %s", u.GetKind(), u.GetName())
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "hostfleet-operator", Name: "hostfleet-operator"}}
	g.Expect(c.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	cfg := rest.AnonymousClientConfig(f.Plane(plane).Config)
	cfg.BearerToken = tr.Status.Token
	return cfg
}

// operator runs the HostfleetHub controller on a plane, with the identity
// of cfg, until stop is called or the test ends.
func operator(t *testing.T, f *planes.Fleet, cfg *rest.Config, rel controller.Release, ttl time.Duration) (stop func()) {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: f.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&controller.Reconciler{Client: mgr.GetClient(), Scheme: f.Scheme, Release: rel, TokenTTL: ttl}).SetupWithManager(context.Background(), mgr, setup.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("operator: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

// runHub runs the hub's controllers in-process with cfg until the test ends.
func runHub(t *testing.T, cfg *rest.Config) {
	t.Helper()
	o := app.NewOptions()
	o.LeaderElectionNamespace = controller.DefaultNamespace
	o.Addon.Image = release.AgentImage
	// Its webhook, reached at an address rather than the Service (no pod
	// runs): it fills the Secret the operator made.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Webhook.BindAddress = ln.Addr().String()
	o.Webhook.URL = "https://" + o.Webhook.BindAddress
	_ = ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := app.New(ctx, cfg, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func condition(h *operatorv1alpha1.HostfleetHub, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(h.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func getHub(g Gomega, c client.Client, name string) *operatorv1alpha1.HostfleetHub {
	h := &operatorv1alpha1.HostfleetHub{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, h)).To(Succeed())
	return h
}

// serviceAccountConfig is a config holding a token of the ServiceAccount
// hostfleet-system/hostfleet-hub on the plane: what the hub's pod would get.
func serviceAccountConfig(g Gomega, c client.Client, base *rest.Config) *rest.Config {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: controller.DefaultNamespace, Name: controller.HubName}}
	g.Expect(c.SubResource("token").Create(context.Background(), sa, tr)).To(Succeed())
	cfg := rest.AnonymousClientConfig(base)
	cfg.BearerToken = tr.Status.Token
	return cfg
}
