package claim_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/baseline"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestServedHostJudgedOnRelease: on a cluster whose ClusterTenancy carries
// a FirmwareBaseline, a host baremetal-operator serves is marked to be
// judged in the write that releases it; the agent's release gate asks
// baremetal-operator to put Secure Boot back on (HostFirmwareSettings), and
// the next claim binds the host only once it has (this test writes the
// status as baremetal-operator does). What the first tenant left is told on the
// host only: the next tenant's claim and Events say nothing of it.
func TestServedHostJudgedOnRelease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub", "infra-1")
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	ct := planes.Tenancy("infra-1", hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{tenantNS}})
	ct.Spec.FirmwareBaselines = []hostfleetv1alpha1.ServedBaseline{{Name: "secure-boot",
		Spec: hostfleetv1alpha1.FirmwareBaselineSpec{BIOSSettings: map[string]string{"SecureBoot": "Enabled"}}}}
	mustCreate(t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}}, ct,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}})
	hostInfra(t, infra)
	h := bmh("served", 0, map[string]string{"name": "served"})
	hfs := &metal3api.HostFirmwareSettings{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: "served"},
		Spec: metal3api.HostFirmwareSettingsSpec{Settings: metal3api.DesiredSettingsMap{}}}
	mustCreate(t, infra, h, hfs)
	h.Status.Provisioning.State, h.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
	g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	hfs.Status.Settings = metal3api.SettingsMap{"SecureBoot": "Enabled"}
	g.Expect(infra.Status().Update(ctx, hfs)).To(Succeed())
	startAgent(t, f, "infra-1", 2)

	first := hubClaim("first", "infra-1", map[string]string{"name": "served"})
	mustCreate(t, hub, first)
	boundHostNamed(g, hub, first, "served")
	t.Log("its tenant turns Secure Boot off, then lets the host go")
	g.Eventually(func() error {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(hfs), hfs)).To(Succeed())
		hfs.Status.Settings["SecureBoot"] = "Disabled"
		return infra.Status().Update(ctx, hfs)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(hub.Delete(ctx, first)).To(Succeed())
	next := hubClaim("next", "infra-1", map[string]string{"name": "served"})
	mustCreate(t, hub, next)
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
		v, ok := h.Annotations[hostfleetv1alpha1.AnnotationRestore]
		g.Expect(baseline.ProgressOf(v, ok).Phase).To(Equal(baseline.PhaseVerify))
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(hfs), hfs)).To(Succeed())
		g.Expect(hfs.Spec.Settings).To(HaveKeyWithValue("SecureBoot", intstr.FromString("Enabled")), "baremetal-operator is asked")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(next), next)).To(Succeed())
		g.Expect(next.Status.BareMetalHost).To(BeNil())
	}).WithTimeout(3*time.Second).Should(Succeed(), "not bound while baremetal-operator restores it")

	t.Log("baremetal-operator applies it: the next claim binds the host")
	g.Eventually(func() error {
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(hfs), hfs)).To(Succeed())
		hfs.Status.Settings["SecureBoot"] = "Enabled"
		meta.SetStatusCondition(&hfs.Status.Conditions, metav1.Condition{Type: string(metal3api.FirmwareSettingsChangeDetected), Status: metav1.ConditionFalse, Reason: "Success"})
		return infra.Status().Update(ctx, hfs)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	boundHostNamed(g, hub, next, "served")

	t.Log("what the first tenant left is said on the host, on the infrastructure cluster; the next tenant's claim and Events say nothing of it")
	var infraEvents, hubEvents eventsv1.EventList
	g.Eventually(func(g Gomega) {
		g.Expect(infra.List(ctx, &infraEvents, client.InNamespace(hostsNS))).To(Succeed())
		g.Expect(infraEvents.Items).To(ContainElement(And(HaveField("Reason", "BaselineRestored"), HaveField("Note", ContainSubstring("BIOS setting SecureBoot behind")))))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(next), next)).To(Succeed())
	data, err := json.Marshal(next)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).NotTo(Or(ContainSubstring("SecureBoot"), ContainSubstring("drifted"), ContainSubstring("restor")))
	g.Expect(hub.List(ctx, &hubEvents, client.InNamespace(tenantNS))).To(Succeed())
	for _, e := range hubEvents.Items {
		g.Expect(e.Note).NotTo(Or(ContainSubstring("SecureBoot"), ContainSubstring("drifted")), "Event %s on %s", e.Reason, e.Regarding.Name)
	}
}
