package hosted_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/hosted"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
)

// TestLeastPrivilege bootstraps the agent's identity on a real API server
// and shows what it may and may not do, then renews its token with that
// identity alone.
func TestLeastPrivilege(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "infra-1")
	admin := f.Plane("infra-1").Client
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())
	g.Expect(admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "bmc"},
		StringData: map[string]string{"username": "admin", "password": "s3cret"}})).To(Succeed())
	h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0"},
		Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "ipmi://127.0.0.1:6230", CredentialsName: "bmc"}}}
	g.Expect(admin.Create(ctx, h)).To(Succeed())

	id := hosted.Identity{Namespace: "hostfleet-agent", Name: hostfleetv1alpha1.AgentManagedRole,
		TokenFile: filepath.Join(t.TempDir(), "token"), TTL: 10 * time.Minute}
	g.Expect(hosted.Bootstrap(ctx, f.Plane("infra-1").Config, id)).To(Succeed())
	g.Expect(hosted.Bootstrap(ctx, f.Plane("infra-1").Config, id)).To(Succeed(), "bootstrap is idempotent")
	for _, obj := range []client.Object{&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}} {
		g.Expect(f.Plane("infra-1").Client.Get(ctx, client.ObjectKey{Name: id.Name}, obj)).To(Succeed())
		g.Expect(obj.GetOwnerReferences()).To(ConsistOf(And(HaveField("Kind", "Namespace"), HaveField("Name", id.Namespace))),
			"%T goes with the agent's namespace", obj)
	}
	cfg := id.Config(f.Plane("infra-1").Config)
	g.Expect(cfg.CertData).To(BeEmpty(), "no bootstrap credentials are kept")
	agent, err := client.New(cfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	t.Log("what the agent needs, it may do")
	var hosts metal3api.BareMetalHostList
	g.Expect(agent.List(ctx, &hosts)).To(Succeed())
	g.Expect(hosts.Items).To(HaveLen(1))
	g.Expect(agent.List(ctx, &metal3api.HostDeployPolicyList{})).To(Succeed())
	g.Expect(agent.List(ctx, &metal3api.HardwareDataList{})).To(Succeed())
	orig := hosts.Items[0].DeepCopy()
	hosts.Items[0].Spec.Online = true
	g.Expect(agent.Patch(ctx, &hosts.Items[0], client.MergeFrom(orig))).To(Succeed())
	cp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "hostfleet-x-userdata"}, StringData: map[string]string{"userData": "#cloud-config"}}
	g.Expect(agent.Create(ctx, cp)).To(Succeed())
	g.Expect(agent.Delete(ctx, cp)).To(Succeed())

	t.Log("anything else is refused")
	forbidden := func(err error) {
		g.ExpectWithOffset(1, apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	}
	forbidden(agent.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: "bmc"}, &corev1.Secret{}))
	forbidden(agent.List(ctx, &corev1.SecretList{}))
	forbidden(agent.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "x"}}))
	forbidden(agent.Delete(ctx, h))
	forbidden(agent.Create(ctx, &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h1"}}))
	forbidden(agent.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "escalate"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: hostfleetv1alpha1.AgentServiceAccount, Namespace: "hostfleet-agent"}}}))
	g.Expect(admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "hostfleet-agent", Name: "other"}})).To(Succeed())
	forbidden(agent.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "hostfleet-agent", Name: "other"}},
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{}}))

	t.Log("with the BMC driver, BMC credentials are readable in the namespaces it drives, and only there")
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}})).To(Succeed())
	g.Expect(admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "bmc"},
		StringData: map[string]string{"username": "admin", "password": "other"}})).To(Succeed())
	withBMC := id
	withBMC.Features = permissions.Features{BMCDriver: true}
	withBMC.BMCNamespaces = []string{"hosts"}
	g.Expect(hosted.Bootstrap(ctx, f.Plane("infra-1").Config, withBMC)).To(Succeed())
	g.Eventually(func() error {
		return agent.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: "bmc"}, &corev1.Secret{})
	}).WithTimeout(10*time.Second).Should(Succeed(), "the credentials of the hosts it drives")
	forbidden(agent.Get(ctx, client.ObjectKey{Namespace: "elsewhere", Name: "bmc"}, &corev1.Secret{}))
	forbidden(agent.List(ctx, &corev1.SecretList{}, client.InNamespace("hosts")))
	forbidden(agent.List(ctx, &corev1.SecretList{}))

	t.Log("with --local-claims, a local claim's secrets are readable in the namespaces an administrator names, and only there: never cluster-wide")
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "claims"}})).To(Succeed())
	g.Expect(admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "claims", Name: "ud"},
		StringData: map[string]string{"userData": "#cloud-config"}})).To(Succeed())
	forbidden(agent.Get(ctx, client.ObjectKey{Namespace: "claims", Name: "ud"}, &corev1.Secret{}))
	withLocal := withBMC
	withLocal.Features.LocalClaims, withLocal.LocalClaimNamespaces = true, []string{"claims"}
	g.Expect(hosted.Bootstrap(ctx, f.Plane("infra-1").Config, withLocal)).To(Succeed())
	g.Eventually(func() error {
		return agent.Get(ctx, client.ObjectKey{Namespace: "claims", Name: "ud"}, &corev1.Secret{})
	}).WithTimeout(10*time.Second).Should(Succeed(), "the data of the local claims it serves")
	forbidden(agent.Get(ctx, client.ObjectKey{Namespace: "elsewhere", Name: "bmc"}, &corev1.Secret{}))
	forbidden(agent.List(ctx, &corev1.SecretList{}, client.InNamespace("claims")))
	g.Expect(agent.List(ctx, &metal3api.HostClaimList{})).To(Succeed(), "claims cluster-wide: the forwarded ones arrive in namespaces made on the way")

	t.Log("the agent renews its own token, without the bootstrap credentials")
	before, err := os.ReadFile(id.TokenFile)
	g.Expect(err).NotTo(HaveOccurred())
	r := &hosted.Refresher{Identity: id, Config: cfg, Every: 500 * time.Millisecond}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- r.Start(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	g.Eventually(func() string {
		b, _ := os.ReadFile(id.TokenFile)
		return string(b)
	}).WithTimeout(10 * time.Second).ShouldNot(Equal(string(before)))
	g.Expect(agent.List(ctx, &metal3api.BareMetalHostList{})).To(Succeed(), "the client picks the new token up")
	info, err := os.Stat(id.TokenFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
}
