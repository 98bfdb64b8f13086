package planes_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/planes"
)

// TestControllerManager: with kube-controller-manager, a plane garbage
// collects owned objects, deletes namespaces to the end, and gives new
// namespaces their default ServiceAccount.
func TestControllerManager(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "solo")
	f.StartControllerManagerForTest(t, "solo")
	c := f.Plane("solo").Client

	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gc"}})).To(Succeed())
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: "gc", Name: "default"}, &corev1.ServiceAccount{})
	}).WithTimeout(30*time.Second).Should(Succeed(), "the default ServiceAccount")

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "gc", Name: "owner"}}
	g.Expect(c.Create(ctx, owner)).To(Succeed())
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "gc", Name: "owned",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(true)}}}}
	g.Expect(c.Create(ctx, owned)).To(Succeed())
	g.Expect(c.Delete(ctx, owner)).To(Succeed())
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(owned), owned) }).WithTimeout(30*time.Second).
		Should(Satisfy(apierrors.IsNotFound), "garbage collected")

	ns := &corev1.Namespace{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "gc"}, ns)).To(Succeed())
	g.Expect(c.Delete(ctx, ns)).To(Succeed())
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKey{Name: "gc"}, ns) }).WithTimeout(60*time.Second).
		Should(Satisfy(apierrors.IsNotFound), "the namespace is deleted to the end")
}
