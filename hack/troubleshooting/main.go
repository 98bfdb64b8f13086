// Command troubleshooting writes docs/troubleshooting.md from
// hub/api/advice (make generate): every reason the hub and the agents
// write, its cause and its fix.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/hostfleet/hostfleet/hub/api/advice"
)

const header = `# When a claim is not Ready

` + "`" + `` + "`" + `` + "`" + `sh
kubectl -n tenant-acme get hostclaims                 # CLUSTER, HOST, POWER, READY, REASON
kubectl -n tenant-acme describe hostclaim web-1       # every condition, its message, the Events
` + "`" + `` + "`" + `` + "`" + `

A claim's ` + "`" + `Ready` + "`" + ` condition names the first thing in the way, and every
condition's message says what to do. The path of a claim: **Scheduled**
(the hub placed it on a cluster) → **Associated** (that cluster's agent
bound a host) → **Synchronized** (image, power and secrets written to the
host) → **Provisioned** → powered → **Ready**; ` + "`" + `NodeLabelsSynced` + "`" + ` for
claims with a workload cluster, ` + "`" + `Forwarded` + "`" + ` for remote claims. Below, each
reason the hub and the agents write, what causes it, and the fix. A tenant
admin reads the claim; the host, the agent's log (` + "`" + `kubectl -n
hostfleet-agent logs deploy/hostfleet-agent` + "`" + ` on the
cluster) and the ManagedCluster need a platform administrator.

`

func main() {
	out := "docs/troubleshooting.md"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	if err := os.WriteFile(out, []byte(render()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "troubleshooting:", err)
		os.Exit(1)
	}
}

// render is the page: the header, then a table per section. Reasons with
// the same cause and fix share a row.
func render() string {
	var b strings.Builder
	b.WriteString("<!-- Generated from hub/api/advice by make generate: edit there. -->\n")
	b.WriteString(strings.TrimRight(header, "\n") + "\n")
	for _, s := range advice.Sections {
		fmt.Fprintf(&b, "\n## %s\n\n", s.Title)
		if s.Intro != "" {
			fmt.Fprintf(&b, "%s\n\n", s.Intro)
		}
		b.WriteString("| reason | cause | fix |\n|---|---|---|\n")
		for i := 0; i < len(s.Reasons); {
			r, names := s.Reasons[i], []string{"`" + s.Reasons[i].Reason + "`"}
			for i++; i < len(s.Reasons) && s.Reasons[i].Cause == r.Cause && s.Reasons[i].Fix == r.Fix; i++ {
				names = append(names, "`"+s.Reasons[i].Reason+"`")
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", strings.Join(names, ", "), r.Cause, r.Fix)
		}
	}
	return b.String()
}
