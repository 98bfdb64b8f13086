// Command troubleshooting writes docs/troubleshooting.md from
// hub/api/advice (make generate): every reason the hub and the agents
// write, its cause and its fix; then, from the PrometheusRule in
// deploy/monitoring, every alert and its runbook.
package main

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/hostfleet/hostfleet/hub/api/advice"
)

const header = `# When a claim is not Ready

` + "`" + `` + "`" + `` + "`" + `sh
kubectl -n tenant-acme get hostclaims                 # CLUSTER, HOST, POWER, READY, REASON
kubectl -n tenant-acme describe hostclaim web-1       # every condition, its message, the Events
` + "`" + `` + "`" + `` + "`" + `

A claim's ` + "`" + `Ready` + "`" + ` condition names the first thing in the way; its path:
**Scheduled** → **Associated** → **Synchronized** → **Provisioned** →
powered → **Ready** (` + "`" + `NodeLabelsSynced` + "`" + ` with a workload cluster,
` + "`" + `Forwarded` + "`" + ` for remote claims). The host, the agent's log and the
ManagedCluster need a platform administrator.

`

func main() {
	out := "docs/troubleshooting.md"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	alerts, err := alertsSection("deploy/monitoring/prometheusrule.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, "troubleshooting:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(out, []byte(render()+alerts), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "troubleshooting:", err)
		os.Exit(1)
	}
}

// render is the page: the header, then a table per section. Reasons with
// the same cause and fix share a row.
func render() string {
	var b strings.Builder
	b.WriteString("<!-- Generated from hub/api/advice and deploy/monitoring/prometheusrule.yaml by make generate: edit there. -->\n")
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

// Rules is what the page reads of the PrometheusRule.
type Rules struct {
	Spec struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `json:"alert"`
				For         string            `json:"for"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// alertsSection is the page's table of alerts, from the PrometheusRule at path.
func alertsSection(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var r Rules
	if err := yaml.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	var b strings.Builder
	b.WriteString("\n## Alerts\n\nThe PrometheusRule `hostfleet` (deploy/monitoring; the chart's `prometheusRule.enabled`) fires these; metrics: [metrics.md](metrics.md).\n\n")
	b.WriteString("| alert | after | what it means | runbook |\n|---|---|---|---|\n")
	for _, g := range r.Spec.Groups {
		for _, a := range g.Rules {
			if a.Alert == "" {
				continue // a recording rule
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", a.Alert, a.For, a.Annotations["summary"], a.Annotations["runbook"])
		}
	}
	return b.String(), nil
}
