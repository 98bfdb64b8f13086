package planes_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

func TestReniceProcess(t *testing.T) {
	g := NewWithT(t)
	cmd := exec.Command("sleep", "60")
	g.Expect(cmd.Start()).To(Succeed())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Raising it needs no privilege (lowering it does): from the value
	// the child inherited to the highest, or from the highest down.
	was := niceOf(cmd.Process.Pid)
	g.Expect(was).To(BeNumerically(">=", -20))
	want := 19
	if was == 19 {
		want = 10
	}
	g.Expect(planes.ReniceProcess(cmd.Process.Pid, want)).To(Succeed())
	g.Expect(niceOf(cmd.Process.Pid)).To(Equal(want))
}

// niceOf reads a process's nice value, field 19 of /proc/<pid>/stat.
func niceOf(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -100
	}
	fields := strings.Fields(string(stat)[strings.LastIndexByte(string(stat), ')')+1:])
	n, err := strconv.Atoi(fields[16])
	if err != nil {
		return -100
	}
	return n
}

// TestCpuset: a process moved into a cpuset runs on its CPUs only;
// removed, the cpuset gives it every CPU back.
func TestCpuset(t *testing.T) {
	g := NewWithT(t)
	child := exec.Command("sleep", "60")
	g.Expect(child.Start()).To(Succeed())
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	allowed := func(pid int) string {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		g.Expect(err).NotTo(HaveOccurred())
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	all := allowed(os.Getpid())
	c, err := planes.NewCpuset("hostfleet-test-"+strconv.Itoa(os.Getpid()), "0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Add(child.Process.Pid)).To(Succeed())
	g.Expect(allowed(child.Process.Pid)).To(Equal("0"))
	g.Expect(c.Remove()).To(Succeed())
	g.Expect(allowed(child.Process.Pid)).To(Equal(all))
}
