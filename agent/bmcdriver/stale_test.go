package bmcdriver_test

import (
	"context"
	"sync"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// lagging is a cache that falls behind once: the read after the status
// write that remembers a power-on gives the host as it was before that
// write (read from the API server itself), as a loaded API server's watch
// delivers late.
type lagging struct {
	onPowerOnRecord
	direct        client.Client
	mu            sync.Mutex
	done          bool
	stale, served *metal3api.BareMetalHost
}

func newLagging(direct client.Client) *lagging {
	c := &lagging{direct: direct}
	c.hook = func(ctx context.Context, h *metal3api.BareMetalHost, update func() error) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		before := &metal3api.BareMetalHost{}
		if err := c.direct.Get(ctx, client.ObjectKeyFromObject(h), before); err != nil {
			return err
		}
		err := update()
		if err == nil && !c.done {
			c.done, c.stale = true, before
		}
		return err
	}
	return c
}

func (c *lagging) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := obj.(*metal3api.BareMetalHost); ok && c.stale != nil {
		c.stale.DeepCopyInto(h)
		c.stale, c.served = nil, c.stale
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestCacheBehindItsWrites: the host read after the write that remembers
// a provisioning's power-on is the host before it. The driver waits for
// its own write rather than insert the media and boot again.
func TestCacheBehindItsWrites(t *testing.T) {
	f := planes.ForTest(t, "infra")
	c := f.Plane("infra").Client
	lag := newLagging(c)
	f.ManagerForTest(t, "infra", func(mgr ctrl.Manager) error {
		lag.Client = mgr.GetClient()
		return (&bmcdriver.Reconciler{Client: lag, Poll: 2 * time.Second, BMC: bmc.Options{Timeout: 3 * time.Second}}).
			SetupWithManager(context.Background(), mgr, setup.Options{Managed: mgr})
	})
	e := env{t: t, g: NewWithT(t), ctx: context.Background(), c: c}
	g := e.g
	g.Expect(c.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())
	iso := redfish.ImageServer()
	defer iso.Close()
	b := redfish.Start(redfish.Options{})
	defer b.Close()
	h := e.host("a", b, "password")
	e.state(h, metal3api.StateAvailable)

	e.update(h, func(h *metal3api.BareMetalHost) {
		h.Spec.Online = true
		h.Spec.Image = &metal3api.Image{URL: iso.URL + "/live.iso", DiskFormat: ptr.To("live-iso")}
		h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "HostClaim", Namespace: "tenant", Name: "a"}
	})
	e.state(h, metal3api.StateProvisioned)
	lag.mu.Lock()
	g.Expect(lag.served).NotTo(BeNil(), "a stale host was read")
	g.Expect(lag.served.Status.Provisioning.State).To(Equal(metal3api.StateAvailable))
	lag.mu.Unlock()
	var inserts []string
	for _, a := range b.Actions() {
		if len(a) > 11 && a[:11] == "InsertMedia" {
			inserts = append(inserts, a)
		}
	}
	g.Expect(inserts).To(HaveLen(1), "the media inserted once: %v", b.Actions())
	g.Expect(b.Resets()).To(Equal([]string{"On"}))
}
