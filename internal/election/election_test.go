package election_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hostfleet/hostfleet/internal/election"
)

func TestTiming(t *testing.T) {
	g := NewWithT(t)
	d := election.Default()
	g.Expect(d.Validate()).To(Succeed())

	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	d.AddFlags(fs)
	g.Expect(fs.Parse([]string{"--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=1s"})).To(Succeed())
	g.Expect(d).To(Equal(election.Timing{LeaseDuration: 8 * time.Second, RenewDeadline: 6 * time.Second, RetryPeriod: time.Second}))
	var o ctrl.Options
	d.Apply(&o)
	g.Expect(*o.LeaseDuration).To(Equal(8 * time.Second))
	g.Expect(*o.RenewDeadline).To(Equal(6 * time.Second))
	g.Expect(*o.RetryPeriod).To(Equal(time.Second))

	for _, bad := range []election.Timing{
		{LeaseDuration: 5 * time.Second, RenewDeadline: 6 * time.Second, RetryPeriod: time.Second},
		{LeaseDuration: 8 * time.Second, RenewDeadline: time.Second, RetryPeriod: time.Second},
		{LeaseDuration: 8 * time.Second, RenewDeadline: 6 * time.Second},
	} {
		g.Expect(bad.Validate()).To(MatchError(ContainSubstring("must exceed")), "%+v", bad)
	}
}
