package hardwarecopy_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/hardwarecopy"
	"github.com/hostfleet/hostfleet/internal/setup"
)

func TestMain(m *testing.M) { planes.Main(m) }

func TestStale(t *testing.T) {
	cp := func(cluster string) *metal3api.HardwareData {
		return &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{hostfleetv1alpha1.LabelCluster: cluster}}}
	}
	claim := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{UID: "u1", Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "c1"}}}
	for _, tc := range []struct {
		name   string
		copy   *metal3api.HardwareData
		exists bool
		uid    string
		want   string
	}{
		{"its claim's, made by its cluster's agent", cp("c1"), true, "u1", ""},
		{"made by another cluster's agent", cp("c2"), true, "u1", `made by the agent of cluster "c2", and the claim is placed on "c1"`},
		{"not labelled", cp(""), true, "u1", `made by the agent of cluster ""`},
		{"for an earlier claim of the same name", cp("c1"), true, "u0", "an earlier claim of the same name"},
		{"claim gone", cp("c1"), false, "u1", "its claim is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := claim
			if !tc.exists {
				c = &metal3api.HostClaim{}
			}
			got := hardwarecopy.Stale(tc.copy, c, tc.exists, tc.uid)
			if tc.want == "" {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(got).To(ContainSubstring(tc.want))
		})
	}
}

// TestRemovesCopiesThatAreNotTheClaims: a copy made under a claim's name by
// another cluster's agent is removed (and the claim says so); the true copy
// stays.
func TestRemovesCopiesThatAreNotTheClaims(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	f.ManagerForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&hardwarecopy.Reconciler{Client: mgr.GetClient()}).SetupWithManager(context.Background(), mgr, setup.Options{})
	})
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}})).To(Succeed())
	claim := func(name string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name,
			Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "c1"}}}
		g.Expect(hub.Create(ctx, c)).To(Succeed())
		return c
	}
	copyOf := func(c *metal3api.HostClaim, cluster string, uid types.UID) *metal3api.HardwareData {
		hw := &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name,
			Labels: map[string]string{hostfleetv1alpha1.LabelClaimUID: string(uid), hostfleetv1alpha1.LabelCluster: cluster}},
			Spec: metal3api.HardwareDataSpec{HardwareDetails: &metal3api.HardwareDetails{RAMMebibytes: 1024}}}
		g.Expect(hub.Create(ctx, hw)).To(Succeed())
		return hw
	}
	gone := func(hw *metal3api.HardwareData) func() bool {
		return func() bool {
			return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(hw), &metal3api.HardwareData{}))
		}
	}

	forgedFor := claim("forged")
	forged := copyOf(forgedFor, "c2", forgedFor.UID)
	trueFor := claim("true")
	kept := copyOf(trueFor, "c1", trueFor.UID)
	earlier := copyOf(claim("recreated"), "c1", "an-earlier-uid")
	orphan := copyOf(&metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "no-claim"}}, "c1", "u")

	g.Eventually(gone(forged)).WithTimeout(20*time.Second).Should(BeTrue(), "made by c2's agent for a claim on c1")
	g.Eventually(gone(earlier)).WithTimeout(20*time.Second).Should(BeTrue(), "made for an earlier claim of the same name")
	g.Eventually(gone(orphan)).WithTimeout(20*time.Second).Should(BeTrue(), "its claim is gone")
	g.Consistently(gone(kept)).WithTimeout(3*time.Second).Should(BeFalse(), "the true copy stays")
	g.Eventually(func() ([]string, error) { return planes.Events(ctx, hub, forgedFor) }).WithTimeout(20 * time.Second).
		Should(ContainElement(ContainSubstring(`HardwareDataCopyRemoved: removed HardwareData copy forged: it was made by the agent of cluster "c2"`)))

	t.Log("a claim moved to another cluster loses the copy its old cluster's agent made")
	g.Eventually(func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(trueFor), trueFor); err != nil {
			return err
		}
		trueFor.Labels[hostfleetv1alpha1.LabelCluster] = "c3"
		return hub.Update(ctx, trueFor)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(gone(kept)).WithTimeout(20 * time.Second).Should(BeTrue())
}
