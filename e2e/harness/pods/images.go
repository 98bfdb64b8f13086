//go:build linux

package pods

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/hostfleet/hostfleet/e2e/harness/registry"
)

// image is a pulled image: its layers unpacked into rootfs, and its config.
type image struct {
	ref    string
	digest v1.Hash
	rootfs string
	config v1.Config
}

// unpacking serialises unpacks: runners of one process share a cache.
var unpacking sync.Mutex

// errPull marks an image that cannot be pulled (ErrImagePull).
type errPull struct{ err error }

func (e errPull) Error() string { return e.err.Error() }

// pull fetches ref for this machine's architecture from the runner's
// registry and unpacks it into the image cache, once per digest.
func (r *Runner) pull(ctx context.Context, ref string) (*image, error) {
	m, err := registry.Mirror(r.opts.Registry, ref)
	if err != nil {
		return nil, errPull{err}
	}
	img, err := remote.Image(m, remote.WithContext(ctx), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		return nil, errPull{fmt.Errorf("pull %s (from %s): %w", ref, m, err)}
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, errPull{err}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, errPull{fmt.Errorf("image %s config: %w", ref, err)}
	}
	out := &image{ref: ref, digest: digest, config: cfg.Config, rootfs: filepath.Join(r.imageCache(), digest.Hex, "rootfs")}
	unpacking.Lock()
	defer unpacking.Unlock()
	done := filepath.Join(r.imageCache(), digest.Hex, "unpacked")
	if _, err := os.Stat(done); err == nil {
		return out, nil
	}
	_ = os.RemoveAll(out.rootfs)
	if err := unpack(mutate.Extract(img), out.rootfs); err != nil {
		return nil, errPull{fmt.Errorf("unpack %s: %w", ref, err)}
	}
	return out, os.WriteFile(done, []byte(ref+"\n"), 0o644)
}

func (r *Runner) imageCache() string {
	if r.opts.ImageCache != "" {
		return r.opts.ImageCache
	}
	return filepath.Join(r.opts.Dir, "images")
}

// unpack writes a flattened image filesystem (mutate.Extract: whiteouts
// applied) under root, with owners and modes. Paths leaving root are
// refused.
func unpack(rc io.ReadCloser, root string) error {
	defer rc.Close()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(rc)
	type dirMode struct {
		path string
		mode os.FileMode
	}
	var dirs []dirMode
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		rel := filepath.Clean("/" + h.Name)
		if rel == "/" {
			continue
		}
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(h.Mode).Perm() | os.FileMode(h.Mode)&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{path, mode})
		case tar.TypeReg:
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if err := os.Chmod(path, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			_ = os.Remove(path)
			if err := os.Symlink(h.Linkname, path); err != nil {
				return err
			}
		case tar.TypeLink:
			target := filepath.Join(root, filepath.Clean("/"+h.Linkname))
			_ = os.Remove(path)
			if err := os.Link(target, path); err != nil {
				return err
			}
		default:
			continue // devices and fifos: the pod gets the host's /dev
		}
		if err := os.Lchown(path, h.Uid, h.Gid); err != nil {
			return err
		}
	}
	for _, d := range dirs {
		if err := os.Chmod(d.path, d.mode); err != nil {
			return err
		}
	}
	return nil
}

// noSymlinks refuses a mount point whose path, inside the image, goes
// through a symbolic link: it could lead out of the container's root.
func noSymlinks(rootfs, path string) error {
	cur := rootfs
	for _, part := range strings.Split(strings.Trim(filepath.Clean("/"+path), "/"), "/") {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("mount path %s goes through the image's symbolic link %s", path, strings.TrimPrefix(cur, rootfs))
		}
	}
	return nil
}
