package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// RulesFile extracts the rule groups of the PrometheusRule at path into a
// Prometheus rules file in dir, and returns its path.
func RulesFile(t *testing.T, path, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	groups, err := yaml.JSONToYAML(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hostfleet.rules.yaml")
	if err := os.WriteFile(out, groups, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// promtool is Debian's promtool, which `hack/tools.sh prometheus` installs.
func promtool(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not installed (run `hack/tools.sh prometheus` or `make tools`): %v", err)
	}
	return bin
}

// alertCases is, per alert of rules_test.yaml, whether a case expects it
// firing and whether one expects it not to.
func alertCases(t *testing.T) map[string][2]bool {
	raw, err := os.ReadFile("monitoring/rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
			PromQLExprTest []struct {
				Expr       string `json:"expr"`
				ExpSamples []any  `json:"exp_samples"`
			} `json:"promql_expr_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(raw, &tests); err != nil {
		t.Fatal(err)
	}
	cases := map[string][2]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			c := cases[a.Alertname]
			c[0] = c[0] || len(a.ExpAlerts) > 0
			c[1] = c[1] || len(a.ExpAlerts) == 0
			cases[a.Alertname] = c
		}
		// A recording rule's case: an expression reading the recorded
		// series, with the samples it must give.
		for _, e := range tc.PromQLExprTest {
			if len(e.ExpSamples) > 0 {
				cases["record:"+e.Expr] = [2]bool{true, true}
			}
		}
	}
	return cases
}

// TestAlertRules: promtool checks the PrometheusRule's rules and runs their
// unit tests, which have, for every alert, a case where it fires and one
// where it does not (or no longer does), and for every recording rule a
// case of the series it records; every alert has a summary and a runbook.
func TestAlertRules(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	rules := RulesFile(t, "monitoring/prometheusrule.yaml", dir)
	raw, err := os.ReadFile("monitoring/rules_test.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "rules_test.yaml"), raw, 0o644)).To(Succeed())
	for _, args := range [][]string{{"check", "rules", rules}, {"test", "rules", "rules_test.yaml"}} {
		cmd := exec.Command(promtool(t), args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "promtool %s:\n%s", strings.Join(args, " "), out)
	}

	var parsed struct {
		Groups []struct {
			Rules []struct {
				Record      string            `json:"record"`
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	groups, err := os.ReadFile(rules)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(yaml.Unmarshal(groups, &parsed)).To(Succeed())
	cases := alertCases(t)
	documented := documentedMetrics(t)
	n := 0
	for _, grp := range parsed.Groups {
		for _, r := range grp.Rules {
			n++
			if r.Record != "" {
				g.Expect(cases).To(HaveKey("record:"+r.Record), "%s: a promql_expr_test of the recorded series in rules_test.yaml", r.Record)
				g.Expect(metricsIn(r.Expr)).To(HaveEach(BeElementOf(documented)), "%s: its metrics are in docs/metrics.md", r.Record)
				continue
			}
			g.Expect(r.Annotations).To(HaveKey("summary"), r.Alert)
			g.Expect(r.Annotations).To(HaveKey("runbook"), r.Alert)
			g.Expect(cases[r.Alert]).To(Equal([2]bool{true, true}), "%s: a firing and a quiet case in rules_test.yaml", r.Alert)
			g.Expect(metricsIn(r.Expr)).To(HaveEach(BeElementOf(documented)), "%s: its metrics are in docs/metrics.md", r.Alert)
		}
	}
	g.Expect(n).To(BeNumerically(">=", 8))
}

// TestDashboard: the Grafana dashboard is JSON whose every query reads
// metrics docs/metrics.md lists.
func TestDashboard(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile("monitoring/grafana/hostfleet.json")
	g.Expect(err).NotTo(HaveOccurred())
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	g.Expect(json.Unmarshal(raw, &d)).To(Succeed())
	g.Expect(d.Panels).NotTo(BeEmpty())
	documented := documentedMetrics(t)
	for _, p := range d.Panels {
		g.Expect(p.Targets).NotTo(BeEmpty(), p.Title)
		for _, tg := range p.Targets {
			g.Expect(metricsIn(tg.Expr)).To(HaveEach(BeElementOf(documented)), p.Title)
		}
	}
}

var metricName = regexp.MustCompile(`\b(hostfleet_[a-z_]+|leader_election_master_status|up)\b`)

// metricsIn are the metric names an expression reads (histograms by their
// family name).
func metricsIn(expr string) []string {
	var out []string
	for _, m := range metricName.FindAllString(expr, -1) {
		out = append(out, strings.TrimSuffix(m, "_bucket"))
	}
	return out
}

// documentedMetrics are the metrics docs/metrics.md names, and those
// Prometheus and controller-runtime provide.
func documentedMetrics(t *testing.T) []string {
	raw, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	names := metricName.FindAllString(string(raw), -1)
	return slices.Compact(slices.Sorted(slices.Values(append(names, "up", "leader_election_master_status"))))
}
