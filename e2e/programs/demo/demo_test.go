package demo_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestDemo runs what `make demo` runs, as a person would: the built demo
// binary, until it reports every claim Ready; then Ctrl-C, after which it must
// exit cleanly and leave no process behind.
func TestDemo(t *testing.T) {
	g := NewWithT(t)
	bin := t.TempDir()
	for pkg, name := range map[string]string{
		"../../../agent/cmd/hostfleet-agent": "hostfleet-agent",
		"../../../hub/cmd/hostfleet-hub":     "hostfleet-hub",
		"./cmd":                              "hostfleet-demo",
	} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkg).CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
	}
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "hostfleet-demo"), "--bin", bin, "--dir", dir)
	stdout, err := cmd.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	g.Expect(cmd.Start()).To(Succeed())

	var mu sync.Mutex
	var lines []string
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			mu.Lock()
			lines = append(lines, s.Text())
			mu.Unlock()
		}
	}()
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
	}
	// The story takes about 2 minutes on an idle machine; at a load of 40
	// its five planes alone took 4.5 minutes to start. What is checked is
	// what it tells, not how fast.
	g.Eventually(output).WithTimeout(15*time.Minute).WithPolling(time.Second).Should(ContainSubstring("Press Ctrl-C to stop."),
		func() string { return output() + "\n" + stderr.String() })
	t.Log("\n" + output())
	g.Expect(output()).To(ContainSubstring("All 5 claims are Ready"))
	g.Expect(output()).To(ContainSubstring("A sixth claim is refused: tenant acme's maxClaims is 5"))
	g.Expect(output()).To(MatchRegexp(`edge-1 powered off: Ready again .* later, once the BMC reported it; meanwhile Ready was False, PowerChanging:\n  "host hosts/server-0 is powering off since \S+: GracefulShutdown sent once, last at \S+; the BMC reports (On|PoweringOff)"; the BMC received \[GracefulShutdown\]`),
		"the last PowerChanging message the demo saw: what was sent, and the BMC's report")
	g.Expect(output()).To(MatchRegexp(`edge-1 powered on: .*\n  "host hosts/server-0 is powering on since \S+: On sent once, last at \S+; the BMC reports (Off|PoweringOn)"; the BMC received \[On\]`))
	g.Expect(output()).To(MatchRegexp(`edge-1\s+infra-3\s+hosts/server-0\s+on\s+hardwaredata/edge-1`), "the Redfish host, driven by the agent, booted the live ISO")
	g.Expect(output()).To(MatchRegexp(`edge-2\s+infra-3\s+hosts/server-1\s+on\s`), "the IPMI host, driven by the agent, is powered on")
	g.Expect(output()).To(MatchRegexp(`web-1\s+infra-1\s+hosts/server-\d\s+on\s+hardwaredata/web-1`))
	g.Expect(output()).To(MatchRegexp(`edge-fwd Ready after [0-9.]+m?s; Forwarded: applied on infra-3 as HostClaim hf-tenant-acme/edge-fwd; bound to BareMetalHost hosts/server-1`),
		"the remote claim, forwarded over a ManifestWork and bound by infra-3's agent")

	g.Expect(output()).To(MatchRegexp(`big-3 \(a large host\) is held back: Ready=False ClassQuotaExceeded:\n  "not placed: .*class large holds 2 of its 2 claims`),
		"a full host class holds a claim back")
	g.Expect(output()).To(MatchRegexp(`short, a claim leased for 30 s \(hostfleet.io/lease-for\):\n  LeaseExpiring=True LeaseEnding: "the lease ends at \S+, in \d+s`))
	g.Expect(output()).To(MatchRegexp(`(LeaseExpiring=True LeaseEnded: "the lease ended at|the lease ended at \S+: the hub deleted the claim)`))
	g.Expect(output()).To(MatchRegexp(`the class has room, and big-3 is placed on infra-\d`), "and places it once a claim of the class goes")
	g.Expect(output()).To(MatchRegexp(`gpu-typo asks for host.gpu.exists\(.*\), and is refused when created:\n  admission webhook "hardware.hostclaims.hostfleet.io" denied the request: annotation hostfleet.io/hardware: .*does not compile.*: fix the expression`),
		"a requirement that does not compile is refused at admission by the hub's webhook")
	g.Expect(output()).To(MatchRegexp(`gpu-1 asks for an H100 \(hostfleet.io/hardware: .*\): Scheduled=False NoCapacity:\n  ".*none with the hardware asked`),
		"a claim no host's hardware meets is told why, per cluster")
	g.Expect(output()).To(MatchRegexp(`\$ kubectl hostfleet why gpu-1 -n tenant-acme --events 0\n(.*\n)*Hardware asked \(hostfleet.io/hardware\): host.gpus.exists\(g, g.model.startsWith\("H100"\)\)\n(.*\n)*  infra-3: no host has it\n    closest: 32 cores x86_64, .* lacks host.gpus.exists`),
		"why names, per cluster, the closest hardware and what it lacks")
	g.Expect(output()).To(MatchRegexp(`cpu-32 asks for host.cpu.count >= 32 && .*: placed on infra-\d, bound to hosts/server-\d`), "a claim placed and bound by its hardware")
	g.Expect(output()).To(MatchRegexp(`edge-1: MaintenanceRequested=True ReleaseAtDeadline:\n  "host hosts/server-0 on cluster infra-3 is wanted for maintenance firmware-edge \(BMC firmware 2.14\)`),
		"a maintenance asks the claim holding its host")
	g.Expect(output()).To(ContainSubstring("at the deadline the hub released edge-1 (hostfleet.io/released-by: maintenance/infra-3/firmware-edge)"))
	g.Expect(output()).To(MatchRegexp(`server-0 erased itself first \(tenant acme erases Metadata\): erased: the host powered itself off \d+s after booting the erase image; its BMC: \[InsertMedia \S+/erase.iso Erased: the erase image powered the system off\]`),
		"the released host booted the erase image and powered itself off")
	g.Expect(output()).To(MatchRegexp(`then the release gate found and undid what the tenant left \(FirmwareBaseline=True Current\):\n  "restored to baselines emulated-r1: BIOS setting SecureBoot drifted: Disabled, baseline Enabled, Enabled when bound; BMC account ghost drifted: enabled, baseline removed, absent when bound"\n  its BMC: \[.*Account ghost deleted.*PATCH BIOS SecureBoot.*BIOS settings applied: SecureBoot.*\]; accounts now \[admin\], SecureBoot Enabled`),
		"the tenant's BMC account and BIOS change found and undone on release")
	g.Expect(output()).To(ContainSubstring("the maintenance lists it InMaintenance: free, and out of the pool"))
	g.Expect(output()).To(ContainSubstring("complete: server-0 is Done and back in the pool"))
	g.Expect(output()).To(MatchRegexp(`heal-1 is Ready on hosts/(server-[23])\n(.*\n)*  [0-9.]+m?s later, past the grace: HostHealthy=False Fencing, Ready=False ReplacingHost:\n  "host hosts/server-[23] reports power management error; powering`),
		"a failed host is fenced past its tenant's grace")
	g.Expect(output()).To(MatchRegexp(`heal-1 \(same claim, UID \S+\) Ready on hosts/server-[23] [0-9.]+m?s after the failure: HostHealthy=True Healthy:\n  "host hosts/server-[23] is healthy; it took the place of host hosts/server-[23] \(power management error`),
		"and replaced behind the same claim")
	g.Expect(output()).To(MatchRegexp(`\$ kubectl hostfleet quarantined -A    # on infra-3\nHOST\s+SINCE\s+CLAIM\s+REASON\s+FENCED\s+STATE\nhosts/server-[23]\s+\S+\s+tenant-acme/heal-1\s+power management error\s+true`),
		"the failed host quarantined, confirmed off")
	g.Expect(output()).To(MatchRegexp(`web-1-node\s+example.com/rack=r1 example.com/site=core example.com/size=medium\n\s+labels under example.com are on Node web-1-node on cluster apps \(found by providerID\)`),
		"the workload cluster's agent labelled the Node from web-1's host")
	g.Expect(output()).To(MatchRegexp(`db-1-node\s+example.com/rack=r\d example.com/site=\w+ example.com/size=large`))
	g.Expect(output()).To(MatchRegexp(`on infra-1 moved to rack r7: web-1-node has example.com/rack=r7 [0-9.]+m?s later`))
	g.Expect(output()).To(MatchRegexp(`\$ kubectl hostfleet claims -n tenant-acme\nNAMESPACE\s+CLAIM\s+TENANT\s+CLUSTER\s+HOST\s+POWER\s+READY\s+REASON\s+AGE\n`))
	g.Expect(output()).To(MatchRegexp(`\ntenant-acme\s+web-1\s+acme\s+infra-1\s+server-\d\s+on\s+True\s+Ready\s`))
	g.Expect(output()).To(MatchRegexp(`\$ kubectl hostfleet why web-1 -n tenant-acme --events 3\nHostClaim tenant-acme/web-1 on infra-1, host hosts/server-\d\n  \[ok\] scheduled `))
	g.Expect(output()).To(MatchRegexp(`\[ok\] node labels +LabelsSynced: `))
	g.Expect(output()).To(ContainSubstring("Nothing in the way: the claim is Ready."))

	g.Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	g.Eventually(done).WithTimeout(time.Minute).Should(Receive(BeNil()), stderr.String())
	g.Expect(output()).To(HaveSuffix("Stopping the hub, the agents, baremetal-operator and the control planes…"))
	left, _ := exec.Command("pgrep", "-f", dir).Output()
	g.Expect(strings.TrimSpace(string(left))).To(BeEmpty(), "nothing started by the demo is left running")
}
