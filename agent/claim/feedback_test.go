package claim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// bmoPowerWait bounds a power change that baremetal-operator (test mode)
// makes. Its host reconciles end with "requeue now" while anything is under
// way, and its work queue delays each such requeue twice as long as the
// previous one (5 ms × 2^n, reset only by a reconcile that asks for
// nothing), so a change late in a long test would wait minutes for its next
// reconcile. Waits on power therefore nudge the host (see powerWait).
const bmoPowerWait = 2 * time.Minute

// TestHostFeedback: labels, HardwareData and reboots between a bound host and
// its hub claim, with the real baremetal-operator driving the host.
func TestHostFeedback(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub", "infra-1")
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	f.StartBMOForTest(t, "infra-1")
	mustCreate(t, hub,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		// Tenant a, served by infra-1, syncs example.com.
		planes.Tenancy("infra-1", hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{tenantNS}, LabelSyncPrefixes: []string{"example.com"}}),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
	)
	hostInfra(t, infra)
	mustCreate(t, infra, bmh("h0", 0, map[string]string{"example.com/rack": "r1", "example.com/gpu": "yes", "other.org/owner": "ops"}))
	waitAvailable(g, infra, "h0")
	startAgent(t, f, "infra-1", 2)

	c := hubClaim("db", "infra-1", nil)
	c.Labels["app"] = "db"
	c.Labels[hostfleetv1alpha1.LabelBoundHost] = "forged"
	c.Spec.PoweredOn = true
	mustCreate(t, hub, c)
	key := client.ObjectKeyFromObject(c)

	t.Log("labels under the tenant's prefixes are mirrored; the bound-host hint tells the truth")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(c.Labels).To(Equal(map[string]string{
			hostfleetv1alpha1.LabelCluster: "infra-1", "app": "db", hostfleetv1alpha1.LabelBoundHost: "h0",
			"example.com/rack": "r1", "example.com/gpu": "yes",
		}))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	h := &metal3api.BareMetalHost{}
	hostKey := client.ObjectKey{Namespace: hostsNS, Name: "h0"}
	mutate(g, infra, hostKey, h, func(h *metal3api.BareMetalHost) {
		h.Labels["example.com/rack"] = "r2"
		delete(h.Labels, "example.com/gpu")
	})
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(c.Labels).To(HaveKeyWithValue("example.com/rack", "r2"))
		g.Expect(c.Labels).NotTo(HaveKey("example.com/gpu"))
		g.Expect(c.Labels).NotTo(HaveKey("other.org/owner"))
		g.Expect(c.Labels).To(HaveKeyWithValue("app", "db"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("HardwareData is copied to the hub, owned by the claim, without BMC details")
	hwCopy := &metal3api.HardwareData{}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(c.Status.HardwareData).To(Equal(&metal3api.ObjectReference{Namespace: tenantNS, Name: "db"}))
		g.Expect(hub.Get(ctx, key, hwCopy)).To(Succeed())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(hwCopy.OwnerReferences).To(HaveLen(1))
	g.Expect(hwCopy.OwnerReferences[0].UID).To(Equal(c.UID))
	g.Expect(hwCopy.Spec.HardwareDetails).NotTo(BeNil())
	g.Expect(hwCopy.Spec.HardwareDetails.RAMMebibytes).To(BeNumerically(">", 0))
	raw, err := json.Marshal(hwCopy)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).NotTo(ContainSubstring("ipmi://"))
	g.Expect(string(raw)).NotTo(ContainSubstring("127.0.0.1:6230"))
	g.Expect(string(raw)).NotTo(ContainSubstring("secret"), "nor the BMC password")
	var hubClaimJSON metal3api.HostClaim
	g.Expect(hub.Get(ctx, key, &hubClaimJSON)).To(Succeed())
	raw, _ = json.Marshal(hubClaimJSON)
	g.Expect(string(raw)).NotTo(ContainSubstring("ipmi://"))

	g.Expect(hwCopy.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "infra-1"), "labelled with the cluster whose agent made it")

	t.Log("a copy forged with the right labels but invented hardware is repaired: the content is checked, not only the source")
	forged := &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: hwCopy.Namespace, Name: hwCopy.Name,
		Labels: hwCopy.Labels, Annotations: hwCopy.Annotations},
		Spec: metal3api.HardwareDataSpec{HardwareDetails: &metal3api.HardwareDetails{RAMMebibytes: 1, Hostname: "invented"}}}
	// The agent makes its copy again as soon as it is gone: delete it until
	// the forged one gets in first.
	g.Eventually(func() error {
		gone := &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: hwCopy.Namespace, Name: hwCopy.Name}}
		if err := hub.Delete(ctx, gone); client.IgnoreNotFound(err) != nil {
			return err
		}
		return hub.Create(ctx, forged)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	want := hwCopy.Spec.HardwareDetails.RAMMebibytes
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, hwCopy)).To(Succeed())
		g.Expect(hwCopy.UID).NotTo(Equal(forged.UID))
		g.Expect(hwCopy.Spec.HardwareDetails.RAMMebibytes).To(Equal(want))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("a re-inspection replaces the copy: copies are never edited")
	infraHW := &metal3api.HardwareData{}
	g.Expect(infra.Get(ctx, hostKey, infraHW)).To(Succeed())
	oldCopyUID, oldSourceUID := hwCopy.UID, infraHW.UID
	mutate(g, infra, hostKey, h, func(h *metal3api.BareMetalHost) { h.Annotations[metal3api.InspectAnnotationPrefix] = "" })
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, hostKey, infraHW)).To(Succeed())
		g.Expect(infraHW.UID).NotTo(Equal(oldSourceUID), "baremetal-operator re-inspected and recreated its HardwareData")
		g.Expect(hub.Get(ctx, key, hwCopy)).To(Succeed())
		g.Expect(hwCopy.UID).NotTo(Equal(oldCopyUID))
		g.Expect(hwCopy.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationSourceUID, string(infraHW.UID)))
	}).WithTimeout(120 * time.Second).Should(Succeed())
	// baremetal-operator's fixture provisioner reports an inspection as
	// started only once per host, so after a refresh it never clears
	// inspect.metal3.io and would inspect forever: clear it as an
	// administrator would, and let the host settle.
	mutate(g, infra, hostKey, h, func(h *metal3api.BareMetalHost) { delete(h.Annotations, metal3api.InspectAnnotationPrefix) })
	waitAvailable(g, infra, "h0")

	t.Log("a persistent reboot.metal3.io/<key> holds the host off until the key goes")
	powerWait(g, infra, hostKey, func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(c.Status.PoweredOn).To(BeTrue())
	})
	// The host is not provisioned: baremetal-operator honours reboot requests
	// on such hosts only with "force" (upstream semantics, passed through as is).
	setAnnotation(g, hub, key, "reboot.metal3.io/maintenance", `{"force":true}`)
	powerWait(g, infra, hostKey, func(g Gomega) {
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Annotations).To(HaveKey("reboot.metal3.io/maintenance"))
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(c.Status.PoweredOn).To(BeFalse())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Reason).To(Equal(hostfleetv1alpha1.ReasonPowerPending))
	})
	setAnnotation(g, hub, key, "reboot.metal3.io/maintenance", "-")
	powerWait(g, infra, hostKey, func(g Gomega) {
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Annotations).NotTo(HaveKey("reboot.metal3.io/maintenance"))
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(c.Status.PoweredOn).To(BeTrue())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	})

	t.Log("a one-shot reboot.metal3.io is handed to the host once and removed from the claim")
	setAnnotation(g, hub, key, "reboot.metal3.io", `{"mode":"hard","force":true}`)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, c)).To(Succeed())
		g.Expect(c.Annotations).NotTo(HaveKey("reboot.metal3.io"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var events corev1.EventList
		g.Expect(hub.List(ctx, &events, client.InNamespace(tenantNS))).To(Succeed())
		reasons := []string{}
		for _, e := range events.Items {
			reasons = append(reasons, e.Reason)
		}
		g.Expect(reasons).To(ContainElement("RebootRequested"))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	// baremetal-operator performs it and clears the host annotation.
	powerWait(g, infra, hostKey, func(g Gomega) {
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Annotations).NotTo(HaveKey("reboot.metal3.io"))
		g.Expect(h.Status.PoweredOn).To(BeTrue())
	})

	t.Log("release deletes the HardwareData copy")
	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	// The release waits for baremetal-operator to power the host off.
	powerWait(g, infra, hostKey, func(g Gomega) {
		g.Expect(apierrors.IsNotFound(hub.Get(ctx, key, &metal3api.HardwareData{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(hub.Get(ctx, key, &metal3api.HostClaim{}))).To(BeTrue())
	})
}

// powerWait waits for check while baremetal-operator carries out a power
// change, touching an annotation of the host before each try (at most once a
// second): baremetal-operator reconciles a host at once when its annotations
// change, so the wait does not depend on its requeue backoff.
func powerWait(g Gomega, infra client.Client, host client.ObjectKey, check func(Gomega)) {
	tries := 0
	g.Eventually(func(g Gomega) {
		tries++
		nudge := fmt.Sprintf(`{"metadata":{"annotations":{"test.hostfleet.io/nudge":"%d"}}}`, tries)
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: host.Namespace, Name: host.Name}}
		g.Expect(infra.Patch(context.Background(), h, client.RawPatch(types.MergePatchType, []byte(nudge)))).To(Succeed())
		check(g)
	}).WithPolling(time.Second).WithTimeout(bmoPowerWait).Should(Succeed())
}

// mutate gets obj, applies fn and updates it, again on conflicts: controllers
// write the same objects.
func mutate[T client.Object](g Gomega, c client.Client, key client.ObjectKey, obj T, fn func(T)) {
	g.Eventually(func() error {
		if err := c.Get(context.Background(), key, obj); err != nil {
			return err
		}
		fn(obj)
		return c.Update(context.Background(), obj)
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// setAnnotation sets (value "-": removes) an annotation on a hub claim.
func setAnnotation(g Gomega, c client.Client, key client.ObjectKey, k, v string) {
	mutate(g, c, key, &metal3api.HostClaim{}, func(claim *metal3api.HostClaim) {
		if claim.Annotations == nil {
			claim.Annotations = map[string]string{}
		}
		if v == "-" {
			delete(claim.Annotations, k)
		} else {
			claim.Annotations[k] = v
		}
	})
}
