// Package imagebuild assembles single-layer OCI images from files, with no
// container engine: the project's images (hack/images) and, in the
// end-to-end harness, images of the upstream binaries the tests run.
// Layers are reproducible: fixed times and owners, directories first.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one file of an image's layer.
type File struct {
	// Path is relative to the image's root ("etc/passwd").
	Path string
	Mode int64
	Data []byte
}

// Config is what an image is made of.
type Config struct {
	// Arch is the linux architecture ("amd64").
	Arch  string
	Files []File
	// Entrypoint, User, WorkingDir, Env and Labels go into the image's
	// config as they are.
	Entrypoint []string
	User       string
	WorkingDir string
	Env        []string
	Labels     map[string]string
	// Uncompressed stores the layer as a plain tar (test images of large
	// binaries, served on this machine: no CPU spent compressing them, nor
	// by each node's containerd decompressing them); otherwise gzip.
	Uncompressed bool
}

// NonRoot are the passwd and group files naming distroless's nonroot user
// (65532), and the CA bundle at path ca.
func NonRoot(ca string, caData []byte) []File {
	return []File{
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{Path: strings.TrimPrefix(ca, "/"), Mode: 0o644, Data: caData},
	}
}

// Assemble builds an OCI image of one layer holding c.Files.
func Assemble(c Config) (v1.Image, error) {
	data := Tar(c.Files)
	var layer v1.Layer = static.NewLayer(data, types.OCIUncompressedLayer)
	if !c.Uncompressed {
		var err error
		layer, err = tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
			tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
		if err != nil {
			return nil, err
		}
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	i, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := i.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", c.Arch
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Entrypoint = c.Entrypoint
	cfg.Config.User = c.User
	cfg.Config.WorkingDir = c.WorkingDir
	cfg.Config.Env = c.Env
	cfg.Config.Labels = c.Labels
	return mutate.ConfigFile(i, cfg)
}

// Tar is a reproducible tar of files: fixed times and owners, the parent
// directories first.
func Tar(files []File) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	for _, f := range files {
		for dir := path.Dir(f.Path); dir != "." && !seen[dir]; dir = path.Dir(dir) {
			seen[dir] = true
		}
	}
	var dirs []string
	for d := range seen {
		dirs = append(dirs, d)
	}
	sort.Slice(dirs, func(i, j int) bool {
		if di, dj := strings.Count(dirs[i], "/"), strings.Count(dirs[j], "/"); di != dj {
			return di < dj
		}
		return dirs[i] < dirs[j]
	})
	for _, d := range dirs {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: time.Unix(0, 0)})
	}
	for _, f := range files {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: f.Mode, Size: int64(len(f.Data)), ModTime: time.Unix(0, 0)})
		_, _ = tw.Write(f.Data)
	}
	_ = tw.Close()
	return buf.Bytes()
}
