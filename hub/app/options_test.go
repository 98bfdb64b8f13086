package app_test

import (
	"time"

	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"github.com/hostfleet/hostfleet/hub/app"
)

// TestOptions: the client rate and the scheduler's workers are flags with
// defaults that serve a thousand clusters (make bench-scale), and values
// that cannot work are refused with what they must be.
func TestOptions(t *testing.T) {
	g := NewWithT(t)
	parse := func(args ...string) *app.Options {
		o := app.NewOptions()
		fs := pflag.NewFlagSet("hub", pflag.ContinueOnError)
		o.AddFlags(fs)
		g.Expect(fs.Parse(append([]string{"--agent-image", "registry.example/agent:v1"}, args...))).To(Succeed())
		return o
	}
	o := parse()
	g.Expect(o.Validate()).To(BeEmpty())
	g.Expect(o.QPS).To(BeNumerically("==", 300))
	g.Expect(o.Burst).To(Equal(600))
	g.Expect(o.SchedulerWorkers).To(Equal(16))

	o = parse("--kube-api-qps", "1000", "--kube-api-burst", "2000", "--scheduler-workers", "8")
	g.Expect(o.Validate()).To(BeEmpty())
	g.Expect(o.SchedulerWorkers).To(Equal(8))

	g.Expect(parse("--kube-api-qps", "0").Validate()).To(ContainElement(MatchError(ContainSubstring("--kube-api-qps 0 and --kube-api-burst 600 must be positive"))))
	g.Expect(parse("--kube-api-burst", "0").Validate()).To(ContainElement(MatchError(ContainSubstring("must be positive"))))
	g.Expect(parse("--scheduler-workers", "0").Validate()).To(ContainElement(MatchError("--scheduler-workers 0 must be at least 1")))

	g.Expect(o.UsageSkew).To(Equal(time.Minute))
	g.Expect(o.UsageMemory).To(Equal(7 * 24 * time.Hour))
	g.Expect(parse("--usage-clock-skew", "-1s").Validate()).To(ContainElement(MatchError(ContainSubstring("--usage-clock-skew -1s must not be negative"))))
	g.Expect(parse("--usage-memory", "30m").Validate()).To(ContainElement(MatchError(ContainSubstring("--usage-memory 30m0s at least 1h"))))
}
