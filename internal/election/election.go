// Package election times the leader election of the hub's and the agent's
// replicas: how soon a standby replaces a leader that died without
// releasing its Lease.
package election

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Timing is a leader election's timing: a standby takes over at most
// LeaseDuration after the leader's last renewal, plus RetryPeriod.
type Timing struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Default is controller-runtime's: a killed leader is replaced within about
// 17 s.
func Default() Timing {
	return Timing{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// AddFlags registers --leader-elect-lease-duration, -renew-deadline and
// -retry-period.
func (t *Timing) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&t.LeaseDuration, "leader-elect-lease-duration", t.LeaseDuration,
		"how long a standby waits after the leader's last renewal before it takes the Lease (a killed leader is replaced within it, plus the retry period)")
	fs.DurationVar(&t.RenewDeadline, "leader-elect-renew-deadline", t.RenewDeadline, "how long the leader tries to renew before it gives up leading")
	fs.DurationVar(&t.RetryPeriod, "leader-elect-retry-period", t.RetryPeriod, "how often replicas try to acquire or renew the Lease")
}

// Validate says what is wrong with the timing: each bound must exceed the
// next.
func (t Timing) Validate() error {
	if t.LeaseDuration > t.RenewDeadline && t.RenewDeadline > t.RetryPeriod && t.RetryPeriod > 0 {
		return nil
	}
	return fmt.Errorf("--leader-elect-lease-duration %s must exceed --leader-elect-renew-deadline %s, which must exceed --leader-elect-retry-period %s (> 0)",
		t.LeaseDuration, t.RenewDeadline, t.RetryPeriod)
}

// Apply sets the timing on a manager's options.
func (t *Timing) Apply(o *ctrl.Options) {
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &t.LeaseDuration, &t.RenewDeadline, &t.RetryPeriod
}
