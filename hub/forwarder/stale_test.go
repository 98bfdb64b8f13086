package forwarder_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/forwarder"
)

// TestWorkOfAGoneClaim: a forwarded claim that goes without the forwarder
// withdrawing it (its finalizer forced off here; a DELETE crossing the
// finalizer does the same) has its work deleted, and so its target.
func TestWorkOfAGoneClaim(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub, infra, _ := fleet(t, g)
	src := remoteClaim("gone", "infra-1", nil)
	g.Expect(hub.Create(ctx, src)).To(Succeed())
	target := &metal3api.HostClaim{}
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: forwarder.TargetNamespace(tenantNS), Name: "gone"}, target)).To(Succeed())
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(src), src)).To(Succeed())
		g.Expect(src.Finalizers).To(ContainElement(hostfleetv1alpha1.ForwarderFinalizer))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	g.Eventually(func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(src), src); err != nil {
			return err
		}
		src.Finalizers = nil
		if err := hub.Update(ctx, src); err != nil {
			return err
		}
		// Deleted as it is, before the forwarder puts its finalizer back.
		return hub.Delete(ctx, src, client.Preconditions{ResourceVersion: &src.ResourceVersion})
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var works workv1.ManifestWorkList
		g.Expect(hub.List(ctx, &works, client.InNamespace("infra-1"))).To(Succeed())
		g.Expect(works.Items).To(BeEmpty())
		g.Expect(apierrors.IsNotFound(infra.Get(ctx, client.ObjectKeyFromObject(target), target))).To(BeTrue(), "the target goes with the work")
	}).WithTimeout(60 * time.Second).Should(Succeed())
}
