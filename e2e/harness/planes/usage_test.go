package planes_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

// TestUsage: this process's CPU time and the machine's busy time both
// grow while this test keeps a core busy.
func TestUsage(t *testing.T) {
	g := NewWithT(t)
	self, err := planes.ProcessUsage(os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(self.RSS).To(BeNumerically(">", 0))
	busy, err := planes.MachineCPU()
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		spin(20 * time.Millisecond)
		now, err := planes.ProcessUsage(os.Getpid())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(now.Sub(self).CPU).To(BeNumerically(">=", 100*time.Millisecond))
		machine, err := planes.MachineCPU()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(machine-busy).To(BeNumerically(">=", now.Sub(self).CPU-20*time.Millisecond), "the machine was at least as busy as this process")
	}).WithTimeout(10 * time.Second).WithPolling(time.Millisecond).Should(Succeed())
}

// spin keeps a core busy for d.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}
