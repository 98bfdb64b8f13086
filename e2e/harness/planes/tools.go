package planes

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// toolPath answers where hack/tools.sh keeps a tool (its --print-assets or
// --print-bmo answer), so that a plain `go test ./...` finds the tool cache
// without make exporting KUBEBUILDER_ASSETS and HOSTFLEET_BMO. It returns ""
// outside the repository or when the script fails.
func toolPath(flag ...string) string {
	root := repoRoot()
	if root == "" {
		return ""
	}
	out, err := exec.Command(filepath.Join(root, "hack", "tools.sh"), flag...).Output()
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(out))
}

var repoRoot = sync.OnceValue(func() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.HasPrefix(data, []byte("module github.com/hostfleet/hostfleet\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
})

// envOrTool is $env, else the tool cache's answer to flag.
func envOrTool(env, flag string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	return toolPath(flag)
}
