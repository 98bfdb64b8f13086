package advice_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/hub/api/advice"
)

// Every condition reason the hub and the agents write (the Reason
// constants of hub/api/v1alpha1/conditions.go) has advice: what causes it
// and what to do.
func TestEveryReasonHasAdvice(t *testing.T) {
	g := NewWithT(t)
	reasons := reasonConstants(t, "../v1alpha1/conditions.go")
	g.Expect(len(reasons)).To(BeNumerically(">", 40), "the reasons in conditions.go")
	// Upstream's reasons the agent writes on Synchronized.
	reasons["metal3 ConfigurationSyncedReason"] = metal3api.ConfigurationSyncedReason
	reasons["metal3 BadUserDataSecretReason"] = metal3api.BadUserDataSecretReason
	reasons["metal3 BadNetworkDataSecretReason"] = metal3api.BadNetworkDataSecretReason
	reasons["metal3 BadMetaDataSecretReason"] = metal3api.BadMetaDataSecretReason
	reasons["metal3 BareMetalHostNotSynchronizedReason"] = metal3api.BareMetalHostNotSynchronizedReason
	for name, value := range reasons {
		r, ok := advice.For(value)
		g.Expect(ok).To(BeTrue(), "v1alpha1.%s (%q) has no advice: add its cause and fix to hub/api/advice", name, value)
		g.Expect(r.Cause).NotTo(BeEmpty(), value)
		g.Expect(r.Fix).NotTo(BeEmpty(), value)
	}
}

// Each reason has advice once.
func TestNoReasonTwice(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range advice.Sections {
		for _, r := range s.Reasons {
			if seen[r.Reason] {
				t.Errorf("%s has advice twice", r.Reason)
			}
			seen[r.Reason] = true
		}
	}
}

// reasonConstants are the string constants named Reason* in file, by name.
func reasonConstants(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if !strings.HasPrefix(name.Name, "Reason") || i >= len(vs.Values) {
				continue
			}
			if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, _ := strconv.Unquote(lit.Value)
				out[name.Name] = v
			}
		}
		return true
	})
	return out
}
