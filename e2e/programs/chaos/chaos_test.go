package chaos_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/e2e/programs/chaos"
)

// TestChaos is make chaos made small, with a fixed seed: 60 claims created,
// updated and deleted at random over 16 BMC-driven hosts on two
// infrastructure planes, the hub and the agents killed 4 times, the hub's
// API server stopped for 15 s, agents cut off 3 times, and two bound hosts
// failing (their BMCs answer 500) under a tenant that replaces failed
// hosts and adds a BMC account in-band on each host it lets go, which a
// fleet baseline allows none of; then every invariant must hold, and must
// have held at every change of the hosts: no claim held by two hosts, no
// host quarantined before it was confirmed off, no host bound while its
// restore is pending or failed or with another tenant's BMC account.
func TestChaos(t *testing.T) {
	g := NewWithT(t)
	bin := build(t)
	var out strings.Builder
	dir := t.TempDir()
	rep, err := chaos.Run(context.Background(), chaos.Options{Bin: bin, Dir: dir, Out: &out, Seed: 1,
		Planes: 2, Hosts: 16, Claims: 60, Rate: 10, Kills: 4, Outage: 15 * time.Second, Partitions: 3, PartitionFor: 10 * time.Second,
		HostFailures: 2, FailFor: 2 * time.Minute, Converge: 4 * time.Minute})
	t.Log("\n" + out.String())
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("created %d, updated %d, deleted %d, writes retried after %d conflicts and %d failures, kills %v, exits %v, host failures %v, %d claims bound again after a quarantine, converged in %s: %s",
		rep.Created, rep.Updated, rep.Deleted, rep.Conflicts, rep.Failures, rep.Kills, rep.Exits, rep.HostFailures, rep.Rebound, rep.Converged.Round(time.Second), rep.Final)
	g.Expect(rep.Kills).To(HaveLen(4))
	g.Expect(rep.Outage).To(Equal(15 * time.Second))
	g.Expect(rep.Partitions).To(HaveLen(3))
	g.Expect(rep.Partitions).NotTo(ContainElement(ContainSubstring("not cut")))
	g.Expect(rep.Final.Violations).To(BeEmpty(), hostLogs(dir, rep.Final.Violations))
	g.Expect(rep.Final.Bound).To(BeNumerically(">", 0), "claims were served")
	// Each failed host was fenced, then quarantined, and the watches saw
	// both quarantines happen.
	g.Expect(rep.HostFailures).To(HaveExactElements(ContainSubstring(": fencing after"), ContainSubstring(": fencing after")))
	g.Expect(rep.Final.Quarantined).To(Equal(2))
	g.Expect(rep.Quarantined).To(Equal(2))
}

// binDir holds hostfleet-hub and hostfleet-agent, built once for the
// package's tests.
var binDir = sync.OnceValues(func() (string, error) {
	bin, err := os.MkdirTemp("", "hostfleet-chaos-bin-")
	if err != nil {
		return "", err
	}
	for pkg, name := range map[string]string{
		"../../../agent/cmd/hostfleet-agent": "hostfleet-agent",
		"../../../hub/cmd/hostfleet-hub":     "hostfleet-hub",
	} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkg).CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %w: %s", pkg, err, out)
		}
	}
	return bin, nil
})

// build builds hostfleet-hub and hostfleet-agent (once) and returns their
// directory.
func build(t *testing.T) string {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// hostLogs is what the agents logged of each host a violation names
// (<plane>/<host>): the last lines naming it, debug lines aside, so that a
// failed run tells its story after its directory is gone.
func hostLogs(dir string, violations []string) func() string {
	return func() string {
		var b strings.Builder
		for _, m := range regexp.MustCompile(`(infra-[0-9]+)/(host-[0-9]+)`).FindAllStringSubmatch(strings.Join(violations, "\n"), -1) {
			logs, _ := filepath.Glob(filepath.Join(dir, "hostfleet-agent-"+m[1]+"-*.log"))
			var lines []string
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				for _, line := range strings.Split(string(data), "\n") {
					if strings.Contains(line, `"`+m[2]+`"`) && !strings.Contains(line, `"level":"debug"`) {
						lines = append(lines, filepath.Base(l)+": "+line)
					}
				}
			}
			fmt.Fprintf(&b, "--- what the agents of %s logged of %s (last 40 lines) ---\n%s\n", m[1], m[2], strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
		return b.String()
	}
}
