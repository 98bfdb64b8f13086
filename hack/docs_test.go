package hack_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNameRealTests: every test the docs cite (docs/security.md as
// proof of each line of the threat model, docs/bad-inputs.md for each
// input) is a test of the repository: a renamed or removed test fails here,
// not silently in a document.
func TestDocsNameRealTests(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "grep", "-h", "-o", "-E", `^func (Test|Fuzz|Benchmark)[A-Za-z0-9_]+\(`, "--", "*_test.go").Output()
	if err != nil {
		t.Fatalf("git grep: %v", err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		have[strings.TrimSuffix(strings.TrimPrefix(l, "func "), "(")] = true
	}
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	test := regexp.MustCompile("`((Test|Fuzz)[A-Z][A-Za-z0-9_]*)`")
	for _, path := range append(docs, "../README.md") {
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cited := test.FindAllStringSubmatch(string(doc), -1)
		if filepath.Base(path) == "security.md" && len(cited) < 30 {
			t.Errorf("docs/security.md cites %d tests; it cites each line's", len(cited))
		}
		for _, m := range cited {
			if !have[m[1]] {
				t.Errorf("%s cites %s, which is no test of the repository", strings.TrimPrefix(path, "../"), m[1])
			}
		}
	}
}
