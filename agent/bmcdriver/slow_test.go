package bmcdriver_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// slowPower: commands are re-sent after 20 s and a soft power-off has 15
// s (the emulators' changes take 2–10 s).
var slowPower = bmcdriver.Timing{Wait: 20 * time.Second, SoftOff: 15 * time.Second, Settle: 10 * time.Second, Poll: 250 * time.Millisecond}

// slowEnv is a plane whose BMC driver can be stopped and started again.
type slowEnv struct {
	env
	f      *planes.Fleet
	timing bmcdriver.Timing
	stop   func() error
}

// startSlow starts a plane and the driver for a test that mostly waits on
// slow BMCs: such tests run in parallel with each other.
func startSlow(t *testing.T, timing bmcdriver.Timing) *slowEnv {
	t.Parallel()
	f := planes.ForTest(t, "infra")
	c := f.Plane("infra").Client
	e := &slowEnv{env: env{t: t, g: NewWithT(t), ctx: context.Background(), c: c}, f: f, timing: timing}
	e.g.Expect(c.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())
	e.startDriver()
	t.Cleanup(func() {
		if e.stop != nil {
			_ = e.stop()
		}
	})
	return e
}

func (e *slowEnv) startDriver() {
	stop, err := e.f.StartManager("infra", func(mgr ctrl.Manager) error {
		return (&bmcdriver.Reconciler{Client: mgr.GetClient(), Poll: 2 * time.Second, Power: e.timing,
			Recorder: mgr.GetEventRecorder("hostfleet-agent"), BMC: bmc.Options{Timeout: 10 * time.Second}}).SetupWithManager(context.Background(), mgr, setup.Options{Managed: mgr})
	})
	e.g.Expect(err).NotTo(HaveOccurred())
	e.stop = stop
}

func (e *slowEnv) stopDriver() {
	e.g.Expect(e.stop()).To(Succeed())
	e.stop = nil
}

// powerChanging is the host's PowerChanging condition (nil if none).
func powerChanging(h *metal3api.BareMetalHost) *metav1.Condition {
	return meta.FindStatusCondition(h.Status.Conditions, hostfleetv1alpha1.ConditionPowerChanging)
}

// settle waits until the host's power change is done and the host says
// powered on (or off) as the BMC does. All along it checks that the host
// never says it settled on the new power before the BMC reports it (the
// host is read first, so the BMC cannot have moved since without a
// command, and a command is remembered on the host before it is sent). It
// returns the time it took, and whether the host was seen recording the
// change while still saying the old power and the BMC still changing.
func (e *slowEnv) settle(h *metal3api.BareMetalHost, b *redfish.BMC, on bool) (took time.Duration, sawChange bool) {
	e.t.Helper()
	start := time.Now()
	want := map[bool]string{true: "On", false: "Off"}[on]
	e.g.Eventually(func(g Gomega) {
		e.get(g, h)
		bmcPower := b.Power()
		c := powerChanging(h)
		g.Expect(c).NotTo(BeNil())
		if c.Status == metav1.ConditionFalse && h.Status.PoweredOn == on {
			e.g.Expect(bmcPower).To(Equal(want), "host %s says it is settled powered %s: the BMC must report it", h.Name, want)
		}
		if c.Status == metav1.ConditionTrue && h.Status.PoweredOn != on && strings.HasPrefix(bmcPower, "Powering") {
			sawChange = true
			g.Expect(c.Message).To(MatchRegexp(`sent once, last at \S+; the BMC reports`))
		}
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
		g.Expect(h.Status.PoweredOn).To(Equal(on))
		g.Expect(bmcPower).To(Equal(want))
	}).WithPolling(50 * time.Millisecond).WithTimeout(60 * time.Second).Should(Succeed())
	return time.Since(start), sawChange
}

// TestSlowBMC drives a host through a BMC that takes seconds to change
// power: the host's status follows the BMC's reports, never the commands;
// each change is one command; a soft power-off is forced after its bound;
// a reboot is one reset; a released host is available only once it is off;
// an agent restarted mid-change does not send again.
func TestSlowBMC(t *testing.T) {
	e := startSlow(t, slowPower)
	g := e.g
	img := images(t)
	lat := redfish.Latency{PowerChange: 3 * time.Second, MediaInsert: time.Second, Inventory: time.Second}
	b := redfish.Start(redfish.Options{Latency: lat, EthernetInterfacesOnly: true})
	defer b.Close()
	h := e.host("slow", b, "password")
	e.state(h, metal3api.StateAvailable)

	t.Log("provisioning: provisioned only once the BMC reports the host on; one On")
	e.update(h, func(h *metal3api.BareMetalHost) {
		h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "HostClaim", Namespace: "tenant-a", Name: "c"}
		h.Spec.Image = liveISO(img.URL + "/live.iso")
		h.Spec.Online = true
	})
	g.Eventually(func(g Gomega) {
		e.get(g, h)
		if h.Status.Provisioning.State == metal3api.StateProvisioned {
			return
		}
		if b.Power() == "PoweringOn" {
			g.Expect(h.Status.PoweredOn).To(BeFalse(), "not on before the BMC says so")
		}
		g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateProvisioned))
	}).WithPolling(50 * time.Millisecond).WithTimeout(60 * time.Second).Should(Succeed())
	g.Expect(b.Power()).To(Equal("On"), "provisioned: the BMC reported the host on; actions %v; host %+v %v", b.Actions(), h.Status.Conditions, h.Annotations)
	g.Expect(h.Status.PoweredOn).To(BeTrue())
	g.Expect(b.Resets()).To(Equal([]string{"On"}))

	t.Log("online: false: one GracefulShutdown; the host says on until the BMC says off")
	e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Online = false })
	took, saw := e.settle(h, b, false)
	g.Expect(saw).To(BeTrue(), "the BMC was seen powering off while the host still said on")
	g.Expect(b.Resets()).To(Equal([]string{"On", "GracefulShutdown"}))
	t.Logf("power off confirmed in %s", took.Round(100*time.Millisecond))

	t.Log("online: true: one On")
	e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Online = true })
	e.settle(h, b, true)
	g.Expect(b.Resets()).To(Equal([]string{"On", "GracefulShutdown", "On"}))

	t.Log(`reboot.metal3.io {"mode":"hard"}: one ForceRestart, no On after it`)
	e.update(h, func(h *metal3api.BareMetalHost) { h.Annotations[metal3api.RebootAnnotationPrefix] = `{"mode":"hard"}` })
	g.Eventually(func(g Gomega) {
		g.Expect(b.Resets()).To(HaveLen(4))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	e.settle(h, b, true)
	g.Expect(h.Annotations).NotTo(HaveKey(metal3api.RebootAnnotationPrefix))
	g.Expect(powerChanging(h).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(b.Resets()).To(Equal([]string{"On", "GracefulShutdown", "On", "ForceRestart"}))

	t.Log("reboot.metal3.io (soft, the default): a soft power-off, then On")
	e.update(h, func(h *metal3api.BareMetalHost) { h.Annotations[metal3api.RebootAnnotationPrefix] = "" })
	g.Eventually(func(g Gomega) {
		g.Expect(b.Resets()).To(HaveLen(6))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	e.settle(h, b, true)
	g.Expect(b.Resets()[4:]).To(Equal([]string{"GracefulShutdown", "On"}))

	t.Log("an agent restarted mid-change waits for the BMC instead of sending again")
	e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Online = false })
	g.Eventually(func(g Gomega) {
		g.Expect(powerChanging(e.get(g, h)).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(b.Power()).To(Equal("PoweringOff"))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	e.stopDriver()
	e.startDriver()
	e.settle(h, b, false)
	g.Expect(b.Resets()[6:]).To(Equal([]string{"GracefulShutdown"}))

	t.Log("release: the image goes; available only once the BMC reports the host off and the media is out")
	e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Online = true })
	e.settle(h, b, true)
	e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Image, h.Spec.ConsumerRef, h.Spec.Online = nil, nil, false })
	g.Eventually(func(g Gomega) {
		e.get(g, h)
		if h.Status.Provisioning.State == metal3api.StateAvailable {
			// Read after the host: the BMC cannot have moved since.
			g.Expect(b.Power()).To(Equal("Off"), "available: the BMC reported the host off")
			inserted, _, _ := b.Media()
			g.Expect(inserted).To(BeFalse())
		}
		g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateAvailable))
	}).WithPolling(50 * time.Millisecond).WithTimeout(60 * time.Second).Should(Succeed())
	g.Expect(b.Resets()[7:]).To(Equal([]string{"On", "ForceOff"}), "a released host is forced off at once")

	t.Log("Events on the host say what was sent and what the BMC reported")
	g.Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(e.c.List(e.ctx, &list, client.InNamespace("hosts"))).To(Succeed())
		reasons := map[string]bool{}
		for _, ev := range list.Items {
			if ev.Regarding.Name == "slow" {
				reasons[ev.Reason] = true
			}
		}
		g.Expect(reasons).To(HaveKey("PowerCommandSent"))
		g.Expect(reasons).To(HaveKey("PowerChanged"))
		g.Expect(reasons).To(HaveKey("InspectionComplete"))
		g.Expect(reasons).To(HaveKey("ProvisioningComplete"))
		g.Expect(reasons).To(HaveKey("DeprovisioningComplete"))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestSoftPowerOffThenHard: an operating system that ignores the ACPI power
// button gets a GracefulShutdown, then, after the soft power-off bound, one
// ForceOff.
func TestSoftPowerOffThenHard(t *testing.T) {
	timing := slowPower
	timing.SoftOff = 3 * time.Second
	e := startSlow(t, timing)
	g := e.g
	b := redfish.Start(redfish.Options{Latency: redfish.Latency{PowerChange: 2 * time.Second}, GracefulShutdownIgnored: true, PoweredOn: true})
	defer b.Close()
	h := e.host("stubborn", b, "password")
	e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Online = true })
	e.state(h, metal3api.StateAvailable)
	e.settle(h, b, true)
	e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Online = false })
	took, _ := e.settle(h, b, false)
	g.Expect(b.Resets()).To(Equal([]string{"GracefulShutdown", "ForceOff"}))
	g.Expect(took).To(BeNumerically(">=", timing.SoftOff), "forced only once the soft power-off had its time")
	g.Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(e.c.List(e.ctx, &list, client.InNamespace("hosts"))).To(Succeed())
		g.Expect(list.Items).To(ContainElement(And(HaveField("Reason", "SoftPowerOffTimedOut"), HaveField("Type", corev1.EventTypeWarning))))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestTwentyPowerChanges: ten hosts whose BMCs take 2 to 10 s to change
// power, each powered on and off again: twenty changes, each one command,
// each confirmed by the BMC.
func TestTwentyPowerChanges(t *testing.T) {
	e := startSlow(t, slowPower)
	const n = 10
	hosts := make([]*metal3api.BareMetalHost, n)
	bmcs := make([]*redfish.BMC, n)
	for i := range hosts {
		bmcs[i] = redfish.Start(redfish.Options{Latency: redfish.Latency{PowerChange: time.Duration(2+i*8/(n-1)) * time.Second}})
		defer bmcs[i].Close()
		hosts[i] = e.host("h"+string(rune('a'+i)), bmcs[i], "password")
	}
	for _, h := range hosts {
		e.state(h, metal3api.StateAvailable)
	}
	var mu sync.Mutex
	var took []time.Duration
	var wg sync.WaitGroup
	for i := range hosts {
		wg.Add(1)
		go func(h *metal3api.BareMetalHost, b *redfish.BMC) {
			defer wg.Done()
			for _, on := range []bool{true, false} {
				e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Online = on })
				d, _ := e.settle(h, b, on)
				mu.Lock()
				took = append(took, d)
				mu.Unlock()
			}
		}(hosts[i].DeepCopy(), bmcs[i])
	}
	wg.Wait()
	commands := 0
	for _, b := range bmcs {
		e.g.Expect(b.Resets()).To(Equal([]string{"On", "GracefulShutdown"}), "one command per change")
		commands += len(b.Resets())
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("%d power changes on BMCs taking 2–10 s: request → confirmed median %s, max %s; %d BMC power commands sent",
		len(took), took[len(took)/2].Round(100*time.Millisecond), took[len(took)-1].Round(100*time.Millisecond), commands)
	e.g.Expect(took).To(HaveLen(2 * n))
}

// TestStuckPowerChange: a BMC that accepts a power-on and never finishes
// it (and refuses the re-sends meanwhile). The command is re-sent after the
// wait, doubling; after three sends that did not land the host is in error
// saying what to check, and the claim-facing condition still says what is
// under way.
func TestStuckPowerChange(t *testing.T) {
	timing := slowPower
	timing.Wait = time.Second
	e := startSlow(t, timing)
	g := e.g
	b := redfish.Start(redfish.Options{Latency: redfish.Latency{PowerChange: time.Hour}})
	defer b.Close()
	h := e.host("stuck", b, "password")
	e.state(h, metal3api.StateAvailable)
	e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Online = true })
	e.failing(h, metal3api.PowerManagementError, "powering on since ")
	g.Expect(h.Status.ErrorMessage).To(MatchRegexp(`^the BMC at 127\.0\.0\.1:\d+: powering on since \S+: the BMC still reports PoweringOn after 4 × On; check the BMC's event log, the server's power supply and whether something else changes its power \(sent again every 8s\); the last one failed: .*409`))
	g.Expect(h.Status.PoweredOn).To(BeFalse(), "never reported on")
	g.Expect(powerChanging(h).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(b.Resets()).To(Equal([]string{"On"}), "the re-sends were refused mid-transition, as real BMCs do")
	g.Expect(b.Actions()).To(ContainElements("Reset On refused: PoweringOn"))

	t.Log("the BMC gets there: the error clears")
	b.SetPowerForTest("On")
	e.settle(h, b, true)
	e.state(h, metal3api.StateAvailable)
}
