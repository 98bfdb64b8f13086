package claim_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// healScene is a hub and infra-1 whose tenant a replaces failed hosts
// after a 2 s grace, with the named hosts available and no
// baremetal-operator: the test writes the hosts' status as it would. The
// agent gives a fence 3 s.
func healScene(t *testing.T, g Gomega, hosts ...string) (hub, infra client.Client) {
	t.Helper()
	f, hub, infra := servedScene(t, hostfleetv1alpha1.ServedTenant{Healing: &hostfleetv1alpha1.Healing{
		Action: hostfleetv1alpha1.HealingReplace, Grace: &metav1.Duration{Duration: 2 * time.Second}}})
	for i, name := range hosts {
		h := bmh(name, i, nil)
		mustCreate(t, infra, h)
		h.Status.Provisioning.State, h.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(context.Background(), h)).To(Succeed())
	}
	startAgent(t, f, "infra-1", 2, func(o *app.Options) { o.FenceTimeout = 3 * time.Second })
	return hub, infra
}

// hostStatus changes a host's status as baremetal-operator would.
func hostStatus(g Gomega, infra client.Client, name string, change func(*metal3api.BareMetalHost)) {
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		h := &metal3api.BareMetalHost{}
		if err := infra.Get(context.Background(), client.ObjectKey{Namespace: hostsNS, Name: name}, h); err != nil {
			return err
		}
		change(h)
		return infra.Status().Update(context.Background(), h)
	})).To(Succeed())
}

// provision waits for the agent to ask the host for its claim's image and
// power, then writes them provisioned, as baremetal-operator would: the
// claim may say Associated before the agent's host write lands.
func provision(g Gomega, infra client.Client, name string) {
	g.Eventually(func(g Gomega) {
		h := &metal3api.BareMetalHost{}
		g.Expect(infra.Get(context.Background(), client.ObjectKey{Namespace: hostsNS, Name: name}, h)).To(Succeed())
		g.Expect(h.Spec.Image).NotTo(BeNil(), "the agent asks the claim's image")
		g.Expect(h.Spec.Online).To(BeTrue(), "the agent asks the host on")
		h.Status.Provisioning.State, h.Status.PoweredOn = metal3api.StateProvisioned, true
		h.Status.Provisioning.Image = *h.Spec.Image
		g.Expect(infra.Status().Update(context.Background(), h)).To(Succeed())
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// healthyAndReady waits for the claim to say its host is healthy and
// Ready.
func healthyAndReady(g Gomega, hub client.Client, c *metal3api.HostClaim) {
	g.Eventually(func(g Gomega) {
		g.Expect(healthOf(g, hub, c).Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// criticalOn waits for a driven host's HardwareHealthy to say its BMC
// reports it Critical, in these words.
func criticalOn(g Gomega, infra client.Client, name, message string) {
	g.Eventually(func(g Gomega) {
		h := &metal3api.BareMetalHost{}
		g.Expect(infra.Get(context.Background(), client.ObjectKey{Namespace: hostsNS, Name: name}, h)).To(Succeed())
		hh := meta.FindStatusCondition(h.Status.Conditions, hostfleetv1alpha1.ConditionHardwareHealthy)
		g.Expect(hh).NotTo(BeNil())
		g.Expect(hh.Reason).To(Equal(hostfleetv1alpha1.ReasonHealthCritical))
		g.Expect(hh.Message).To(Equal(message))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func powerFault(h *metal3api.BareMetalHost) {
	h.Status.OperationalStatus, h.Status.ErrorType = metal3api.OperationalStatusError, metal3api.PowerManagementError
	h.Status.ErrorMessage = "the BMC does not answer"
}

// boundHost waits for the claim to be bound and returns its host's name.
func boundHost(g Gomega, hub client.Client, c *metal3api.HostClaim) string {
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(context.Background(), client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.BareMetalHost).NotTo(BeNil())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionAssociated).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return c.Status.BareMetalHost.Name
}

func healthOf(g Gomega, hub client.Client, c *metal3api.HostClaim) metav1.Condition {
	g.Expect(hub.Get(context.Background(), client.ObjectKeyFromObject(c), c)).To(Succeed())
	return condition(c, hostfleetv1alpha1.ConditionHostHealthy)
}

func imageClaim(name string) *metal3api.HostClaim {
	c := hubClaim(name, "infra-1", nil)
	c.Spec.PoweredOn = true
	c.Spec.Image = &metal3api.Image{URL: "http://images.example.com/os.qcow2", Checksum: "http://images.example.com/os.qcow2.sha256"}
	return c
}

// boundHostNamed waits for the claim to be bound to the named host.
func boundHostNamed(g Gomega, hub client.Client, c *metal3api.HostClaim, name string) string {
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(context.Background(), client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.BareMetalHost).NotTo(BeNil())
		g.Expect(c.Status.BareMetalHost.Name).To(Equal(name))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return c.Status.BareMetalHost.Name
}

func eventReasons(g Gomega, hub client.Client) []string {
	var events corev1.EventList
	g.Expect(hub.List(context.Background(), &events, client.InNamespace(tenantNS))).To(Succeed())
	var out []string
	for _, e := range events.Items {
		out = append(out, e.Reason)
	}
	return out
}

// replacing is tenant a's policy in the driven scenes: Replace after 2 s.
func replacing() *hostfleetv1alpha1.Healing {
	return &hostfleetv1alpha1.Healing{Action: hostfleetv1alpha1.HealingReplace, Grace: &metav1.Duration{Duration: 2 * time.Second}}
}

// watchful: the agent reads each driven host's power every second, and
// waits a minute for a fence; one claim's host is not a rack.
func watchful(o *app.Options) {
	o.BMCPoll, o.BMCTimeout, o.FenceTimeout = time.Second, 3*time.Second, time.Minute
	o.BreakerMaxPercent = 100
}

// redfishScene is a hub and infra-1 serving tenant a (st), with hosts the
// agent's BMC driver drives through emulated Redfish BMCs (each started
// with o, labelled name: <host>) and an image server, and the agent
// started with opts.
func redfishScene(t *testing.T, st hostfleetv1alpha1.ServedTenant, o redfish.Options, hosts []string, opts ...func(*app.Options)) (
	hub, infra client.Client, bmcs map[string]*redfish.BMC, iso *httptest.Server, f *planes.Fleet) {
	t.Helper()
	f, hub, infra = servedScene(t, st)
	iso = redfish.ImageServer()
	t.Cleanup(iso.Close)
	bmcs = map[string]*redfish.BMC{}
	o.Username, o.Password, o.EthernetInterfacesOnly = "admin", "secret", true
	for i, name := range hosts {
		b := redfish.Start(o)
		t.Cleanup(b.Close)
		bmcs[name] = b
		h := bmh(name, i, map[string]string{"name": name})
		h.Annotations = map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}
		h.Spec.BMC.Address = "redfish-virtualmedia+http://" + b.HostPort() + redfish.SystemPath
		mustCreate(t, infra, h)
	}
	startAgent(t, f, "infra-1", 2, opts...)
	return hub, infra, bmcs, iso, f
}
