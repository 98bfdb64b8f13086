package planes

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// Tool is the path of a program the tool cache builds (hack/tools.sh
// name), or an error that says how to build it.
func Tool(name string) (string, error) {
	bin := toolPath("--print-bin", name)
	if bin == "" {
		return "", fmt.Errorf("the tool cache was not found: run `hack/tools.sh %s`", name)
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s is not built: run `hack/tools.sh %s` (make test does): %w", name, name, err)
	}
	return bin, nil
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

// ClusteradmBootstrap is what `clusteradm init` applies to the hub for
// joining clusters, at the version e2e/tools/clusteradm/ocm-$OCM_VERSION pins: the bootstrap
// ServiceAccount (open-cluster-management/agent-registration-bootstrap,
// whose token `clusteradm join` gets unless --use-bootstrap-token), the
// ClusterRole open-cluster-management:bootstrap and its bindings to that
// ServiceAccount and to bootstrap tokens' group. clusteradm renders them
// from OCM's cluster-manager chart; so does this, with the chart of the OCM
// module clusteradm is built with, from the Go module cache, and the tool
// cache's helm. Tests use it to act as the identities clusteradm really makes.
func ClusteradmBootstrap() ([]byte, error) {
	dir := toolPath("--print-ocm-module") // clusteradm's module for the OCM version in use
	if dir == "" {
		return nil, fmt.Errorf("clusteradm's bootstrap manifests: not in the repository")
	}
	ocm, err := goOutput(dir, "list", "-m", "-f", "{{with .Replace}}{{.Path}}@{{.Version}}{{else}}{{.Path}}@{{.Version}}{{end}}", "open-cluster-management.io/ocm")
	if err != nil {
		return nil, err
	}
	out, err := goOutput(dir, "mod", "download", "-json", string(ocm))
	if err != nil {
		return nil, err
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return nil, fmt.Errorf("clusteradm's bootstrap manifests: no module directory for %s in %q", ocm, out)
	}
	helm := toolPath("--print-bin", "helm")
	if helm == "" {
		return nil, fmt.Errorf("clusteradm's bootstrap manifests: no helm in the tool cache (hack/tools.sh helm)")
	}
	args := []string{"template", "hub", filepath.Join(mod.Dir, "deploy", "cluster-manager", "chart", "cluster-manager"),
		"--namespace", "open-cluster-management", "--set", "createBootstrapSA=true", "--set", "createBootstrapToken=true"}
	for _, t := range []string{"bootstrap_sa", "bootstrap_cluster_role", "bootstrap_sa_cluster_role_binding", "bootstrap_cluster_role_binding"} {
		args = append(args, "--show-only", "templates/"+t+".yaml")
	}
	manifests, err := exec.Command(helm, args...).Output()
	if err != nil {
		return nil, fmt.Errorf("render the bootstrap templates of %s's cluster-manager chart: %w", ocm, err)
	}
	return manifests, nil
}

// goOutput runs the go command in dir and returns its trimmed output.
func goOutput(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %v in %s: %w", args, dir, err)
	}
	return bytes.TrimSpace(out), nil
}

// CacheDir is the directory name in the tool cache: $HOSTFLEET_CACHE, or
// hostfleet in the user's cache directory (where make builds the tools).
func CacheDir(name string) string {
	if cache := os.Getenv("HOSTFLEET_CACHE"); cache != "" {
		return filepath.Join(cache, name)
	}
	home, _ := os.UserCacheDir()
	return filepath.Join(home, "hostfleet", name)
}
