package kubectl_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestForgetCluster: c1 is lost for good. Its claim being deleted waits for
// c1's agent; the administrator's `kubectl hostfleet forget-cluster c1` lets
// it go, and touches neither c1's claim that is not being deleted nor c2's
// claim being deleted; an Available cluster is refused.
func TestForgetCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTestWith(t, planes.Options{Dir: t.TempDir()}, "hub")
	f.HubForTest(t, "hub")
	hub := f.Plane("hub").Client
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-f"}})).To(Succeed())
	for _, c := range []string{"c1", "c2"} {
		g.Expect(hub.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c}})).To(Succeed())
	}
	g.Expect(planes.SetClusterAvailable(ctx, hub, "c1", metav1.ConditionUnknown)).To(Succeed())
	g.Expect(planes.SetClusterAvailable(ctx, hub, "c2", metav1.ConditionTrue)).To(Succeed())
	claim := func(name, cluster string, del bool) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-f", Name: name,
			Labels: map[string]string{hostfleetv1alpha1.LabelCluster: cluster}, Finalizers: []string{hostfleetv1alpha1.AgentFinalizer}}}
		g.Expect(hub.Create(ctx, c)).To(Succeed())
		if del {
			g.Expect(hub.Delete(ctx, c)).To(Succeed())
		}
		return c
	}
	gone, kept, other := claim("gone", "c1", true), claim("kept", "c1", false), claim("other", "c2", true)
	admin := filepath.Join(t.TempDir(), "admin")
	g.Expect(planes.WriteKubeconfig(admin, f.Plane("hub").Config)).To(Succeed())

	out, err := kubectl(t, admin, "hostfleet", "forget-cluster", "c2")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("cluster c2 is Available: its agent releases the hosts of its claims itself"))

	out, err = kubectl(t, admin, "hostfleet", "forget-cluster", "c1")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("HostClaim tenant-f/gone: let go (its host on c1 is left as it is; c1's agent releases it if the cluster comes back)\n" +
		"c1: 1 claims being deleted let go; 1 claims still placed there (delete them, then run this again)\n"))
	g.Eventually(func() error { return hub.Get(ctx, client.ObjectKeyFromObject(gone), &metal3api.HostClaim{}) }).
		WithTimeout(10 * time.Second).Should(Satisfy(apierrors.IsNotFound))
	for _, c := range []*metal3api.HostClaim{kept, other} {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Finalizers).To(ConsistOf(hostfleetv1alpha1.AgentFinalizer), "%s untouched", c.Name)
	}
}
