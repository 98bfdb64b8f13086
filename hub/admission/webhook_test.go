package admission_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/admission"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestWebhook shows, on a real API server calling the hub's webhook, a
// hardware requirement that does not compile or costs too much refused with
// what to fix, on a claim and on a Tenant; a claim admitted with one while
// the hub was away still updated, as long as the requirement stays; the
// certificate kept across restarts; and, with the hub gone, claims admitted
// unchecked (failure policy Ignore).
func TestWebhook(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	admin := f.Plane("hub").Client
	const bad = `host.cpu.cores >= 4`
	claim := func(name, expr string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name}}
		if expr != "" {
			c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationHardware: expr}
		}
		return c
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hostfleet-system"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}},
		claim("before", bad), // admitted: no hub yet
	} {
		g.Expect(admin.Create(ctx, o)).To(Succeed())
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	g.Expect(l.Close()).To(Succeed())
	opts := admission.WebhookOptions{BindAddress: "127.0.0.1:" + port, URL: "https://127.0.0.1:" + port}
	g.Expect(opts.Validate()).To(BeEmpty())
	start := func() (stop func() error) {
		stop, err := f.StartManager("hub", func(mgr ctrl.Manager) error {
			w := &admission.Webhook{Options: opts, Namespace: "hostfleet-system", Reader: mgr.GetAPIReader(), Client: mgr.GetClient()}
			server, err := w.Server()
			if err != nil {
				return err
			}
			return errors.Join(mgr.Add(server), mgr.Add(w))
		})
		g.Expect(err).NotTo(HaveOccurred())
		return stop
	}
	stop := start()
	t.Cleanup(func() { _ = stop() })

	refused := func(err error, says string) {
		g.Expect(err).To(MatchError(And(ContainSubstring(`admission webhook "hardware.`), ContainSubstring(says), ContainSubstring("fix the expression"))))
	}
	// The configuration is applied once the certificate is read; the API
	// server then calls the webhook on each create.
	g.Eventually(func() error { return admin.Create(ctx, claim("malformed", bad), client.DryRunAll) }).
		WithTimeout(30*time.Second).Should(MatchError(ContainSubstring("does not compile")), "a malformed requirement is refused")
	refused(admin.Create(ctx, claim("costly", `host.disks.exists(d, host.nics.exists(n, d.sizeGiB == n.speedGbps))`)), "may cost")
	g.Expect(admin.Create(ctx, claim("fine", `host.cpu.count >= 32`))).To(Succeed())
	g.Expect(admin.Create(ctx, claim("plain", ""))).To(Succeed())

	before := &metal3api.HostClaim{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "before"}, before)).To(Succeed())
	before.Labels = map[string]string{"edited": "yes"}
	g.Expect(admin.Update(ctx, before)).To(Succeed(), "the requirement is unchanged: the claim can still be edited (and lose its finalizers)")
	before.Annotations[hostfleetv1alpha1.AnnotationHardware] = `host.cpu.count >= "4"`
	refused(admin.Update(ctx, before), "does not compile")

	tenant := &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
		Quotas: []hostfleetv1alpha1.ClassQuota{{Name: "gpu", MaxClaims: 1, HostSelector: hostfleetv1alpha1.ClassSelector{Hardware: `host.gpus.size()`}}}}}
	refused(admin.Create(ctx, tenant.DeepCopy()), "hostSelector.hardware")
	tenant.Spec.Quotas[0].HostSelector.Hardware = `host.gpus.size() > 0`
	g.Expect(admin.Create(ctx, tenant)).To(Succeed())

	fw := &hostfleetv1alpha1.FirmwareBaseline{ObjectMeta: metav1.ObjectMeta{Name: "r750"}, Spec: hostfleetv1alpha1.FirmwareBaselineSpec{
		Hardware: `host.system.product = "R750"`, BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{Allowed: []string{}}}}
	g.Expect(admin.Create(ctx, fw.DeepCopy())).To(MatchError(And(ContainSubstring(`admission webhook "hardware.firmwarebaselines`),
		ContainSubstring("spec.hardware: the requirement does not compile"))), "a baseline's expression is checked as a claim's")
	fw.Spec.Hardware = `host.system.product == "R750"`
	fw.Spec.Components = map[string]hostfleetv1alpha1.FirmwareImage{"bios": {Version: "1.2.3", URL: "https://images.example/bios-1.2.3", Checksum: "sha256:" + strings.Repeat("0", 64)}}
	g.Expect(admin.Create(ctx, fw)).To(Succeed())

	// Cluster c1 has R750s: a baseline for every host that wants another
	// BIOS would want two of them.
	r750 := hostfleetv1alpha1.HardwareView{System: hostfleetv1alpha1.HardwareSystem{Product: "R750"}}
	hardware.Normalize(&r750)
	inv := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"}, Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "c1"}}
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}})).To(Succeed())
	g.Expect(admin.Create(ctx, inv)).To(Succeed())
	inv.Status.Profiles = []hostfleetv1alpha1.HardwareProfile{{Name: hardware.Profile(&r750), Hardware: r750}}
	g.Expect(admin.Status().Update(ctx, inv)).To(Succeed())
	all := &hostfleetv1alpha1.FirmwareBaseline{ObjectMeta: metav1.ObjectMeta{Name: "all"}, Spec: hostfleetv1alpha1.FirmwareBaselineSpec{
		Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": {Version: "2.0.0", URL: "https://images.example/bios-2.0.0", Checksum: "sha256:" + strings.Repeat("0", 64)}}}}
	g.Eventually(func() error { return admin.Create(ctx, all.DeepCopy(), client.DryRunAll) }).WithTimeout(10*time.Second).Should(MatchError(And(
		ContainSubstring("baselines r750 and all want bios at 1.2.3 and 2.0.0"), ContainSubstring("both select the hosts of cluster c1, profile "),
		ContainSubstring("narrow their spec.hardware"))), "two baselines that select the same hosts with different versions")
	all.Spec.Hardware = `host.system.product != "R750"`
	g.Expect(admin.Create(ctx, all)).To(Succeed(), "not the R750s: no conflict")

	// A second hub (a restart, another replica) serves the same certificate.
	ca := func() []byte {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Name: admission.WebhookName}, c)).To(Succeed())
		return c.Webhooks[0].ClientConfig.CABundle
	}
	first := ca()
	g.Expect(stop()).To(Succeed())
	g.Expect(admin.Create(ctx, claim("while-away", bad))).To(Succeed(), "the hub is away: admitted unchecked, refused at placement")
	stop = start()
	g.Eventually(func() error { return admin.Create(ctx, claim("malformed", bad), client.DryRunAll) }).
		WithTimeout(30*time.Second).Should(MatchError(ContainSubstring("does not compile")), "the restarted hub serves again")
	g.Expect(ca()).To(Equal(first), "the certificate is kept in Secret %s", admission.WebhookSecret)
}

// TestCertificates shows the webhook's certificate covering its names, IPs
// included, and renewed before its end.
func TestCertificates(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	data, err := admission.Certificates([]string{"hostfleet-hub.hostfleet-system.svc", "127.0.0.1"}, now)
	g.Expect(err).NotTo(HaveOccurred())
	cert := data[corev1.TLSCertKey]
	g.Expect(admission.Serves(cert, []string{"hostfleet-hub.hostfleet-system.svc", "127.0.0.1"}, now)).To(BeTrue())
	g.Expect(admission.Serves(cert, []string{"other.hostfleet-system.svc"}, now)).To(BeFalse(), "another name: made again")
	g.Expect(admission.Serves(cert, []string{"127.0.0.1"}, now.Add(4*365*24*time.Hour+300*24*time.Hour))).To(BeFalse(), "near its end: renewed")
	g.Expect(admission.Serves([]byte("not PEM"), nil, now)).To(BeFalse())
}

// TestWebhookOptions shows the flags refused with what to fix.
func TestWebhookOptions(t *testing.T) {
	for _, tc := range []struct {
		o    admission.WebhookOptions
		says string
	}{
		{admission.WebhookOptions{}, ""},
		{admission.WebhookOptions{BindAddress: ":9443", Service: "hostfleet-system/hostfleet-hub-webhook"}, ""},
		{admission.WebhookOptions{BindAddress: ":9443", Service: "hostfleet-system/hostfleet-hub-webhook:8443"}, ""},
		{admission.WebhookOptions{BindAddress: ":9443"}, "exactly one of --webhook-service and --webhook-url"},
		{admission.WebhookOptions{BindAddress: "9443", URL: "https://a"}, "must be host:port"},
		{admission.WebhookOptions{BindAddress: ":9443", URL: "http://a"}, "must be an https URL"},
		{admission.WebhookOptions{BindAddress: ":9443", Service: "hub"}, "must be namespace/name"},
		{admission.WebhookOptions{BindAddress: ":9443", Service: "a/b:x"}, "the port must be a number"},
	} {
		t.Run(tc.o.BindAddress+tc.o.Service+tc.o.URL, func(t *testing.T) {
			g := NewWithT(t)
			errs := tc.o.Validate()
			if tc.says == "" {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(errs).To(ContainElement(MatchError(ContainSubstring(tc.says))))
		})
	}
}
