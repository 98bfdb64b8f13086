package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// churn creates, updates and deletes claims at random, at a steady rate,
// as a busy tenant would; every write is retried until it lands.
type churn struct {
	hub client.Client
	// bmcs are the hosts' BMCs (host-N's is bmcs[N]): a tenant adds a BMC
	// account in-band on its host before it deletes its claim.
	bmcs    []*redfish.BMC
	rng     *rand.Rand
	o       Options
	liveISO string

	live []string
	next int
	// kept are claims never updated or deleted: those of failed hosts,
	// whose replacement is watched.
	mu                        sync.Mutex
	kept                      map[string]bool
	created, updated, deleted int
	// conflicts and failures are writes retried: after a conflict (an
	// agent or the hub wrote the claim first) or a failure (the outage).
	conflicts, failures int
}

// plannedOps is about how many operations the churn makes: each claim is
// created, updated about once and deleted (most of them).
func (c *churn) plannedOps() int { return c.o.Claims * 3 }

func (c *churn) run(ctx context.Context) error {
	tick := time.NewTicker(time.Duration(float64(time.Second) / c.o.Rate))
	defer tick.Stop()
	for c.created < c.o.Claims {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		var err error
		c.mu.Lock()
		live := len(c.live)
		c.mu.Unlock()
		switch x := c.rng.Float64(); {
		case live < c.o.Live && (live == 0 || x < 0.45):
			err = c.create(ctx)
		case x < 0.7:
			err = c.update(ctx)
		default:
			err = c.delete(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// write retries fn until it succeeds (or says the object is gone or
// already there), for up to five minutes: long enough for the outage.
func (c *churn) write(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := fn(wctx)
		cancel()
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("%s: %w", what, err)
		}
		if apierrors.IsConflict(err) {
			c.conflicts++
		} else {
			c.failures++
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (c *churn) create(ctx context.Context) error {
	name := fmt.Sprintf("c-%05d", c.next)
	c.next++
	claim := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name},
		Spec: metal3api.HostClaimSpec{PoweredOn: c.rng.Float64() < 0.7}}
	if c.rng.Float64() < 0.15 {
		claim.Spec.PoweredOn = true
		claim.Spec.Image = &metal3api.Image{URL: c.liveISO, DiskFormat: ptr.To("live-iso")}
	}
	if err := c.write(ctx, "create claim "+name, func(ctx context.Context) error {
		return c.hub.Create(ctx, claim.DeepCopy())
	}); err != nil {
		return err
	}
	c.mu.Lock()
	c.live = append(c.live, name)
	c.mu.Unlock()
	c.created++
	return nil
}

// keep makes the churn leave a live claim alone from now on; false if the
// claim was deleted, or is about to be.
func (c *churn) keep(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.live, name) {
		return false
	}
	if c.kept == nil {
		c.kept = map[string]bool{}
	}
	c.kept[name] = true
	return true
}

// drop takes a claim out of the live ones, to be deleted by another than
// the churn; false if the churn keeps it.
func (c *churn) drop(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kept[name] {
		return false
	}
	if i := slices.Index(c.live, name); i >= 0 {
		c.live = append(c.live[:i], c.live[i+1:]...)
	}
	return true
}

// pick is a live claim not kept, at random ("" if none), taken out of the
// live ones if drop.
func (c *churn) pick(drop bool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var free []int
	for i, name := range c.live {
		if !c.kept[name] {
			free = append(free, i)
		}
	}
	if len(free) == 0 {
		return ""
	}
	i := free[c.rng.IntN(len(free))]
	name := c.live[i]
	if drop {
		c.live = append(c.live[:i], c.live[i+1:]...)
	}
	return name
}

// update flips a claim's power, or reboots it.
func (c *churn) update(ctx context.Context) error {
	name := c.pick(false)
	if name == "" {
		return nil
	}
	reboot := c.rng.Float64() < 0.2
	err := c.write(ctx, "update claim "+name, func(ctx context.Context) error {
		claim := &metal3api.HostClaim{}
		if err := c.hub.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: name}, claim); err != nil {
			return err
		}
		if reboot {
			metav1.SetMetaDataAnnotation(&claim.ObjectMeta, metal3api.RebootAnnotationPrefix, "")
		} else {
			claim.Spec.PoweredOn = !claim.Spec.PoweredOn
		}
		return c.hub.Update(ctx, claim)
	})
	if err == nil {
		c.updated++
	}
	return err
}

func (c *churn) delete(ctx context.Context) error {
	name := c.pick(true)
	if name == "" {
		return nil
	}
	c.tenantLeaves(ctx, name)
	err := c.write(ctx, "delete claim "+name, func(ctx context.Context) error {
		return c.hub.Delete(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name}})
	})
	if err == nil {
		c.deleted++
	}
	return err
}

// tenantLeaves plays the tenant of a bound claim, root on its host, which
// adds a BMC account in-band (tenantAccount) before it lets the host go:
// the release gate must remove it before another claim binds the host.
func (c *churn) tenantLeaves(ctx context.Context, name string) {
	cl := &metal3api.HostClaim{}
	// Only a Ready claim's host ran the tenant's operating system.
	if err := c.hub.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: name}, cl); err != nil || cl.Status.BareMetalHost == nil ||
		!meta.IsStatusConditionTrue(cl.Status.Conditions, hostfleetv1alpha1.ConditionReady) {
		return
	}
	var n int
	if _, err := fmt.Sscanf(cl.Status.BareMetalHost.Name, "host-%d", &n); err == nil && n < len(c.bmcs) {
		c.bmcs[n].AddAccountInBand(tenantAccount(string(cl.UID)), "tenant-was-here")
	}
}
