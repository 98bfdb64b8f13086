// Command krew builds `kubectl hostfleet` for linux and darwin on amd64
// and arm64 (static, the version stamped), an archive of each with the
// LICENSE, and the krew manifest deploy/krew/hostfleet.yaml rendered with
// their checksums (make plugin).
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"text/template"
	"time"
)

// Platform is one archive of the plugin.
type Platform struct {
	OS, Arch, Archive, SHA256 string
}

// Platforms the plugin is built for.
var Platforms = []Platform{{OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm64"}, {OS: "darwin", Arch: "amd64"}, {OS: "darwin", Arch: "arm64"}}

func main() {
	out := flag.String("out", "bin/plugin", "where the archives and the manifest go")
	version := flag.String("version", "v0.0.0-dev", "the version stamped and named in the manifest")
	flag.Parse()
	if err := run(*out, *version); err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
}

func run(out, version string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	license, err := os.ReadFile("LICENSE")
	if err != nil {
		return err
	}
	platforms := append([]Platform(nil), Platforms...)
	for i := range platforms {
		p := &platforms[i]
		bin := filepath.Join(out, p.OS+"-"+p.Arch, "kubectl-hostfleet")
		build := exec.Command("go", "build", "-trimpath", "-o", bin,
			"-ldflags", "-s -w -X github.com/hostfleet/hostfleet/internal/command.Version="+version, "./hub/cmd/kubectl-hostfleet")
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
		if msg, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build for %s/%s: %v: %s", p.OS, p.Arch, err, msg)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		archive, err := tarGz(map[string][]byte{"kubectl-hostfleet": data, "LICENSE": license})
		if err != nil {
			return err
		}
		p.Archive = fmt.Sprintf("kubectl-hostfleet_%s_%s.tar.gz", p.OS, p.Arch)
		sum := sha256.Sum256(archive)
		p.SHA256 = hex.EncodeToString(sum[:])
		if err := os.WriteFile(filepath.Join(out, p.Archive), archive, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s  %s  %.1f MiB\n", p.Archive, p.SHA256, float64(len(archive))/(1<<20))
	}
	manifest, err := Render(version, platforms)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "hostfleet.yaml"), manifest, 0o644)
}

// Render is deploy/krew/hostfleet.yaml for version and platforms.
func Render(version string, platforms []Platform) ([]byte, error) {
	src, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "krew", "hostfleet.yaml"))
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("manifest").Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = tmpl.Execute(&b, struct {
		Version   string
		Platforms []Platform
	}{version, platforms})
	return b.Bytes(), err
}

// repoRoot is the directory holding go.mod, from here up.
func repoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// tarGz is a reproducible gzipped tar of files (sorted, fixed times).
func tarGz(files map[string][]byte) ([]byte, error) {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		mode := int64(0o644)
		if n == "kubectl-hostfleet" {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: mode, Size: int64(len(files[n])), ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
