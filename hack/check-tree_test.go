package hack_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// checkTree runs hack/check-tree.sh on a fresh git repository holding the
// given files and returns its output and whether it passed.
func checkTree(t *testing.T, files map[string][]byte) (string, bool) {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "git %v: %s", args, out)
	}
	git("init", "-q")
	for name, data := range files {
		g.Expect(os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, name), data, 0o644)).To(Succeed())
	}
	git("add", "-A")
	git("commit", "-qm", "planted")
	out, err := exec.Command("./check-tree.sh", dir).CombinedOutput()
	return string(out), err == nil
}

func TestCheckTree(t *testing.T) {
	elf, err := os.ReadFile("/bin/true") // a small real ELF executable
	if err != nil {
		t.Fatalf("read /bin/true: %v", err)
	}
	source := []byte("package main\n\nfunc main() {}\n")
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		want  string // "" passes
	}{
		{"sources only", map[string][]byte{"main.go": source, "README.md": []byte("# x\n")}, ""},
		{"a file of exactly 1 MiB", map[string][]byte{"data.txt": bytes.Repeat([]byte("a"), 1<<20)}, ""},
		{"a planted 2 MiB file", map[string][]byte{"main.go": source, "blob.json": bytes.Repeat([]byte("x"), 2<<20)}, "tracked file over 1 MiB: blob.json"},
		{"a planted ELF", map[string][]byte{"main.go": source, "tools/bench": elf}, "tracked executable binary: tools/bench"},
		{"a Mach-O header", map[string][]byte{"a.out": append([]byte{0xcf, 0xfa, 0xed, 0xfe}, make([]byte, 60)...)}, "tracked executable binary: a.out"},
		{"text that starts with MZ", map[string][]byte{"notes.txt": []byte("MZ is not a PE file unless it says so\n")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, ok := checkTree(t, tc.files)
			if tc.want == "" {
				g.Expect(ok).To(BeTrue(), out)
				return
			}
			g.Expect(ok).To(BeFalse(), "check-tree.sh must fail: %s", out)
			g.Expect(out).To(ContainSubstring(tc.want))
		})
	}
}
