package isolation_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestFirmwareBaselineIsTheAdministrators: a FirmwareBaseline is the hub
// administrator's alone. A tenant admin, who creates claims in her
// namespace, can neither read nor write one; an agent whose cluster serves
// her tenant, which reads her claims, cannot write one. A baseline the
// schema refuses says what to fix.
func TestFirmwareBaselineIsTheAdministrators(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTestWith(t, planes.Options{Dir: t.TempDir()}, "hub")
	hub := f.Plane("hub").Client
	f.HubForTest(t, "hub")
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "lab"}},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
			Admins: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	alice := user(g, f, "alice", "system:authenticated")
	agent := user(g, f, hostfleetv1alpha1.AgentHubUser("c1"), hostfleetv1alpha1.AgentHubGroup("c1"), hostfleetv1alpha1.AgentSharedGroup, "system:authenticated")

	t.Log("each identity holds its own rights: alice creates a claim, c1's agent reads tenant a's claims")
	g.Eventually(func() error {
		return alice.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web"}})
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func() error { return agent.List(ctx, &metal3api.HostClaimList{}, client.InNamespace("tenant-a")) }).
		WithTimeout(30 * time.Second).Should(Succeed())

	sum := "sha256:" + strings.Repeat("0f", 32)
	fw := func() *hostfleetv1alpha1.FirmwareBaseline {
		return &hostfleetv1alpha1.FirmwareBaseline{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}, Spec: hostfleetv1alpha1.FirmwareBaselineSpec{
			Components:   map[string]hostfleetv1alpha1.FirmwareImage{"bios": {Version: "1.2.3", URL: "https://images.example/bios-1.2.3.bin", Checksum: sum}},
			BIOSSettings: map[string]string{"SecureBoot": "Enabled"}, BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{Allowed: []string{}}}}
	}
	forbidden := func(err error, what string) {
		g.ExpectWithOffset(1, apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", what, err)
	}
	t.Log("neither a tenant nor an agent writes a baseline; a tenant does not read one")
	forbidden(alice.Create(ctx, fw()), "alice creates")
	forbidden(agent.Create(ctx, fw()), "the agent creates")
	g.Expect(hub.Create(ctx, fw())).To(Succeed())
	forbidden(alice.Get(ctx, client.ObjectKey{Name: "fleet"}, &hostfleetv1alpha1.FirmwareBaseline{}), "alice reads")
	forbidden(alice.List(ctx, &hostfleetv1alpha1.FirmwareBaselineList{}), "alice lists")
	b := fw()
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "fleet"}, b)).To(Succeed())
	b.Spec.BIOSSettings["SecureBoot"] = "Disabled"
	forbidden(agent.Update(ctx, b), "the agent updates")
	forbidden(agent.Delete(ctx, b), "the agent deletes")
	forbidden(alice.Delete(ctx, b), "alice deletes")

	t.Log("what the schema refuses says what to fix")
	bad := fw()
	bad.Name = "bad"
	bad.Spec.Components = map[string]hostfleetv1alpha1.FirmwareImage{"cpld": {Version: "1", URL: "ftp://images.example/x.bin", Checksum: "md5:0"}}
	err := hub.Create(ctx, bad)
	g.Expect(err).To(MatchError(And(ContainSubstring("a component is bios, bmc or nic:<Id>"), ContainSubstring("must be http:// or https://"),
		ContainSubstring("the checksum is the image's digest"))))
}
