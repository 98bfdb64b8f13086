package demo

import (
	"context"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/kubectl"
)

// heal shows a failed host replaced behind its claim
// (docs/service.md#claims-that-heal): tenant acme replaces failed hosts
// after 5 s; heal-1 is bound to one of two xl hosts of infra-3; its BMC
// fails (every request answered 500) and the host is fenced; once the BMC
// answers again and reports the host off, the host is quarantined and
// heal-1 is Ready on the other.
func (r *run) heal(ctx context.Context) error {
	infra := r.f.Plane(edge).Client
	bmcs := map[string]*redfish.BMC{}
	for i, name := range []string{"server-2", "server-3"} {
		b := redfish.Start(redfish.Options{TLS: true, Hardware: redfish.DefaultHardware(fmt.Sprintf("EDGE%04d", 2+i))})
		r.closers = append(r.closers, b.Close)
		bmcs[name] = b
		if err := create(ctx, infra, &metal3api.BareMetalHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name, Labels: map[string]string{"example.com/size": "xl", "example.com/site": "edge"},
				Annotations: map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "redfish-virtualmedia://" + b.HostPort() + redfish.SystemPath,
				CredentialsName: "bmc", DisableCertificateVerification: true}}}); err != nil {
			return err
		}
	}
	if err := r.hub.Patch(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"healing":{"action":"Replace","grace":"5s"}}}`))); err != nil {
		return fmt.Errorf("give tenant acme a healing policy: %w", err)
	}
	c := r.claim("heal-1", map[string]string{"example.com/size": "xl"}, map[string]string{})
	c.Labels = map[string]string{hostfleetv1alpha1.LabelCluster: edge}
	if err := r.create(ctx, c); err != nil {
		return err
	}
	if err := r.waitClaim(ctx, c, func(c *metal3api.HostClaim) bool {
		return c != nil && meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionReady)
	}); err != nil {
		return fmt.Errorf("heal-1 not Ready: %w", err)
	}
	failed := c.Status.BareMetalHost.Name
	r.say("")
	r.say("Tenant acme now replaces failed hosts (spec.healing: Replace, grace 5s). heal-1 is Ready on hosts/%s", failed)
	r.say("of infra-3, beside a spare xl host. hosts/%s's BMC fails (it answers 500 to everything):", failed)
	bmcs[failed].SetFaults(redfish.Faults{Status: 500})
	failedAt := time.Now()
	health := func(reason string) func(*metal3api.HostClaim) bool {
		return func(c *metal3api.HostClaim) bool {
			hc := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionHostHealthy)
			return hc != nil && hc.Reason == reason
		}
	}
	if err := r.waitClaim(ctx, c, health(hostfleetv1alpha1.ReasonFencing)); err != nil {
		return fmt.Errorf("heal-1's host not fenced: %w", err)
	}
	hc := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionHostHealthy)
	r.say("  %s later, past the grace: HostHealthy=False %s, Ready=False %s:\n  %q", time.Since(failedAt).Round(100*time.Millisecond), hc.Reason,
		meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionReady).Reason, hc.Message)
	r.say("  the BMC answers again: it powers the host off, and confirms it")
	bmcs[failed].SetFaults(redfish.Faults{})
	if err := r.waitClaim(ctx, c, func(c *metal3api.HostClaim) bool {
		return c.Status.BareMetalHost != nil && c.Status.BareMetalHost.Name != failed && health(hostfleetv1alpha1.ReasonHealthy)(c) &&
			meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionReady)
	}); err != nil {
		return fmt.Errorf("heal-1 not Ready on another host: %w", err)
	}
	hc = meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionHostHealthy)
	r.say("  heal-1 (same claim, UID %s) Ready on hosts/%s %s after the failure: HostHealthy=True %s:\n  %q",
		c.UID, c.Status.BareMetalHost.Name, time.Since(failedAt).Round(100*time.Millisecond), hc.Reason, hc.Message)
	args := []string{"quarantined", "-A", "--kubeconfig=" + r.f.Plane(edge).Kubeconfig}
	r.say("$ kubectl hostfleet quarantined -A    # on infra-3")
	if err := kubectl.Main(ctx, args, r.o.Out); err != nil {
		return fmt.Errorf("kubectl hostfleet quarantined: %w", err)
	}
	return nil
}
