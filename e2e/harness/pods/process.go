//go:build linux

package pods

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// process is how a container's process starts, from its image and spec.
type process struct {
	argv     []string
	env      []string
	uid, gid int
	workdir  string
	readOnly bool
}

// errConfig marks a container that cannot start as specified
// (CreateContainerConfigError): the kubelet's wording.
type errConfig struct{ msg string }

func (e errConfig) Error() string { return e.msg }

// defaultPath is PATH when neither the image nor the container sets one.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// resolveProcess applies the kubelet's rules: command replaces the image's
// Entrypoint (and drops its Cmd), args replace Cmd; env is the image's, then
// base, then the container's; the user is runAsUser/runAsGroup (container,
// then pod), else the image's User looked up in its /etc/passwd and
// /etc/group; runAsNonRoot refuses a root or unverifiable user.
func resolveProcess(pod *corev1.Pod, c *corev1.Container, img v1.Config, rootfs string, base, env []string) (process, error) {
	p := process{workdir: c.WorkingDir}
	if p.workdir == "" {
		p.workdir = img.WorkingDir
	}
	if p.workdir == "" {
		p.workdir = "/"
	}
	cmd, args := c.Command, c.Args
	if len(cmd) == 0 {
		cmd = img.Entrypoint
		if len(args) == 0 {
			args = img.Cmd
		}
	}
	p.env = append(append(append([]string{}, img.Env...), base...), env...)
	if !hasVar(p.env, "PATH") {
		p.env = append([]string{defaultPath}, p.env...)
	}
	vars := map[string]string{}
	for _, kv := range p.env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	for _, a := range append(append([]string(nil), cmd...), args...) {
		p.argv = append(p.argv, expand(a, vars))
	}
	if len(p.argv) == 0 {
		return p, errConfig{"no command specified: set command or args, or use an image with an entrypoint"}
	}

	psc, csc := pod.Spec.SecurityContext, c.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if csc == nil {
		csc = &corev1.SecurityContext{}
	}
	p.readOnly = ptr.Deref(csc.ReadOnlyRootFilesystem, false)
	runAsUser, runAsGroup := csc.RunAsUser, csc.RunAsGroup
	if runAsUser == nil {
		runAsUser = psc.RunAsUser
	}
	if runAsGroup == nil {
		runAsGroup = psc.RunAsGroup
	}
	nonRoot := csc.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = psc.RunAsNonRoot
	}
	user, group, _ := strings.Cut(img.User, ":")
	switch {
	case runAsUser != nil:
		p.uid = int(*runAsUser)
		if ptr.Deref(nonRoot, false) && p.uid == 0 {
			return p, errConfig{fmt.Sprintf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", pod.Name, c.Name)}
		}
		p.gid = primaryGroup(rootfs, strconv.Itoa(p.uid))
	case user == "":
		p.uid, p.gid = 0, 0
	default:
		uid, err := strconv.Atoi(user)
		if err != nil {
			if ptr.Deref(nonRoot, false) {
				return p, errConfig{fmt.Sprintf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", user, pod.Name, c.Name)}
			}
			if uid, err = lookup(rootfs, "etc/passwd", user); err != nil {
				return p, errConfig{fmt.Sprintf("unable to find user %s: %v", user, err)}
			}
		}
		p.uid = uid
		p.gid = primaryGroup(rootfs, user)
	}
	if ptr.Deref(nonRoot, false) && p.uid == 0 {
		return p, errConfig{fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", pod.Name, c.Name)}
	}
	switch {
	case runAsGroup != nil:
		p.gid = int(*runAsGroup)
	case group != "":
		gid, err := strconv.Atoi(group)
		if err != nil {
			if gid, err = lookup(rootfs, "etc/group", group); err != nil {
				return p, errConfig{fmt.Sprintf("unable to find group %s: %v", group, err)}
			}
		}
		p.gid = gid
	}
	return p, nil
}

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// lookup finds a name's id (third field) in an /etc/passwd or /etc/group
// of the image.
func lookup(rootfs, file, name string) (int, error) {
	for _, f := range entries(rootfs, file) {
		if f[0] == name {
			return strconv.Atoi(f[2])
		}
	}
	return 0, fmt.Errorf("no %s in the image's /%s", name, file)
}

// primaryGroup is the group of a user (name or uid) in the image's
// /etc/passwd, or 0.
func primaryGroup(rootfs, user string) int {
	for _, f := range entries(rootfs, "etc/passwd") {
		if len(f) > 3 && (f[0] == user || f[2] == user) {
			if gid, err := strconv.Atoi(f[3]); err == nil {
				return gid
			}
		}
	}
	return 0
}

func entries(rootfs, file string) [][]string {
	data, err := os.ReadFile(filepath.Join(rootfs, file))
	if err != nil {
		return nil
	}
	var out [][]string
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		if f := strings.Split(s.Text(), ":"); len(f) > 2 {
			out = append(out, f)
		}
	}
	return out
}
