package bmcdriver_test

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// onPowerOnRecord is a client whose hook runs around each status write
// that remembers a power-on (an online host, PowerChanging True); update
// makes the write. Other writes pass.
type onPowerOnRecord struct {
	client.Client
	hook func(ctx context.Context, h *metal3api.BareMetalHost, update func() error) error
}

func (c *onPowerOnRecord) Status() client.SubResourceWriter {
	return &onPowerOnWriter{SubResourceWriter: c.Client.Status(), c: c}
}

type onPowerOnWriter struct {
	client.SubResourceWriter
	c *onPowerOnRecord
}

func (w *onPowerOnWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	update := func() error { return w.SubResourceWriter.Update(ctx, obj, opts...) }
	h, ok := obj.(*metal3api.BareMetalHost)
	if !ok || !h.Spec.Online {
		return update()
	}
	if c := powerChanging(h); c == nil || c.Status != metav1.ConditionTrue {
		return update()
	}
	return w.c.hook(ctx, h, update)
}

// loseAnswer loses the API server's answer to the first write that
// remembers a power-on, as client-go reports a connection cut after the
// request went out.
func loseAnswer(lost *atomic.Bool) func(context.Context, *metal3api.BareMetalHost, func() error) error {
	return func(_ context.Context, _ *metal3api.BareMetalHost, update func() error) error {
		err := update()
		if err == nil && lost.CompareAndSwap(false, true) {
			return fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", io.ErrUnexpectedEOF)
		}
		return err
	}
}

// TestLostAnswer: the answer to the write that remembers a power-on is
// lost; the write landed, the command was not sent. The driver sends it
// once it reads its record back, at once rather than after the minute a
// sent command has to land, and only once.
func TestLostAnswer(t *testing.T) {
	f := planes.ForTest(t, "infra")
	c := f.Plane("infra").Client
	var lost atomic.Bool
	lossy := &onPowerOnRecord{hook: loseAnswer(&lost)}
	f.ManagerForTest(t, "infra", func(mgr ctrl.Manager) error {
		lossy.Client = mgr.GetClient()
		return (&bmcdriver.Reconciler{Client: lossy, Poll: 2 * time.Second, Power: bmcdriver.Timing{Wait: time.Minute},
			BMC: bmc.Options{Timeout: 3 * time.Second}}).SetupWithManager(context.Background(), mgr, setup.Options{Managed: mgr})
	})
	e := env{t: t, g: NewWithT(t), ctx: context.Background(), c: c}
	g := e.g
	g.Expect(c.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())
	b := redfish.Start(redfish.Options{})
	defer b.Close()
	h := e.host("a", b, "password")
	e.state(h, metal3api.StateAvailable)
	resets := len(b.Resets())

	start := time.Now()
	e.update(h, func(h *metal3api.BareMetalHost) { h.Spec.Online = true })
	g.Eventually(b.Power).WithTimeout(20 * time.Second).Should(Equal("On"))
	took := time.Since(start)
	t.Logf("powered on %s after the answer was lost", took.Round(10*time.Millisecond))
	g.Expect(lost.Load()).To(BeTrue(), "the answer was lost")
	g.Expect(took).To(BeNumerically("<", 20*time.Second), "not after the minute a sent command waits")
	g.Eventually(func(g Gomega) {
		g.Expect(e.get(g, h).Status.PoweredOn).To(BeTrue())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(b.Resets()[resets:]).To(Equal([]string{"On"}), "sent once")
	g.Expect(b.Repeats()).To(BeEmpty())
}
