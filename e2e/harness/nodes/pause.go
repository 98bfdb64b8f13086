package nodes

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/hostfleet/hostfleet/e2e/harness/registry"
)

// PauseImage is the reference the nodes' containerd runs pod sandboxes
// from (PushPause serves it).
const PauseImage = "registry.k8s.io/pause:3.10"

// PushPause builds the pause program (e2e/harness/nodes/pause), static,
// in dir, and serves it from reg as PauseImage.
func PushPause(reg *registry.Registry, dir string) error {
	bin := filepath.Join(dir, "pause")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/hostfleet/hostfleet/e2e/harness/nodes/pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the pause program: %v: %s", err, out)
	}
	img, err := registry.Binary(bin, "/pause", "65535", "/pause")
	if err != nil {
		return err
	}
	return reg.Push(PauseImage, img)
}
