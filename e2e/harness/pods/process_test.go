//go:build linux

package pods

import (
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestResolveProcess: the kubelet's rules for command, args, env and user.
func TestResolveProcess(t *testing.T) {
	rootfs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(rootfs, "etc/passwd"), []byte("root:x:0:0::/:/sbin/nologin\napp:x:1000:2000::/:/sbin/nologin\n"), 0o644)
	_ = os.WriteFile(filepath.Join(rootfs, "etc/group"), []byte("root:x:0:\nstaff:x:3000:\n"), 0o644)
	img := v1.Config{Entrypoint: []string{"/app"}, Cmd: []string{"--serve"}, Env: []string{"PATH=/", "A=image"}, User: "app", WorkingDir: "/data"}
	pod := func(sc *corev1.PodSecurityContext) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{SecurityContext: sc}}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		c    corev1.Container
		img  v1.Config
		env  []string // the container's, resolved
		want process
		err  string
	}{
		{name: "image defaults", pod: pod(nil), img: img,
			want: process{argv: []string{"/app", "--serve"}, env: []string{"PATH=/", "A=image", "B=base"}, uid: 1000, gid: 2000, workdir: "/data"}},
		{name: "args replace Cmd", pod: pod(nil), img: img, c: corev1.Container{Args: []string{"--once"}},
			want: process{argv: []string{"/app", "--once"}, env: []string{"PATH=/", "A=image", "B=base"}, uid: 1000, gid: 2000, workdir: "/data"}},
		{name: "command drops Cmd", pod: pod(nil), img: img, c: corev1.Container{Command: []string{"/other"}, WorkingDir: "/w"},
			want: process{argv: []string{"/other"}, env: []string{"PATH=/", "A=image", "B=base"}, uid: 1000, gid: 2000, workdir: "/w"}},
		{name: "container env last, $(VAR) expanded", pod: pod(nil), img: v1.Config{Entrypoint: []string{"/app", "$(A)"}}, env: []string{"A=container"},
			want: process{argv: []string{"/app", "container"}, env: []string{defaultPath, "B=base", "A=container"}, workdir: "/"}},
		{name: "runAsUser and runAsGroup, container over pod", img: img,
			pod:  pod(&corev1.PodSecurityContext{RunAsUser: ptr.To[int64](5), RunAsGroup: ptr.To[int64](6)}),
			c:    corev1.Container{SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](7), ReadOnlyRootFilesystem: ptr.To(true)}},
			want: process{argv: []string{"/app", "--serve"}, env: []string{"PATH=/", "A=image", "B=base"}, uid: 7, gid: 6, workdir: "/data", readOnly: true}},
		{name: "named user and group", pod: pod(nil), img: v1.Config{Entrypoint: []string{"/app"}, User: "app:staff"},
			want: process{argv: []string{"/app"}, env: []string{defaultPath, "B=base"}, uid: 1000, gid: 3000, workdir: "/"}},
		{name: "numeric user unknown to passwd", pod: pod(nil), img: v1.Config{Entrypoint: []string{"/app"}, User: "65532:65532"},
			want: process{argv: []string{"/app"}, env: []string{defaultPath, "B=base"}, uid: 65532, gid: 65532, workdir: "/"}},
		{name: "root image under runAsNonRoot", pod: pod(&corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}), img: v1.Config{Entrypoint: []string{"/app"}},
			err: `container has runAsNonRoot and image will run as root (pod: "p", container: c)`},
		{name: "named user under runAsNonRoot", pod: pod(&corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}), img: img,
			err: "container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root"},
		{name: "runAsUser 0 under runAsNonRoot", pod: pod(&corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)}), img: img,
			err: "container's runAsUser breaks non-root policy"},
		{name: "unknown user name", pod: pod(nil), img: v1.Config{Entrypoint: []string{"/app"}, User: "nobody"},
			err: "unable to find user nobody"},
		{name: "nothing to run", pod: pod(nil), img: v1.Config{}, err: "no command specified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := tt.c
			c.Name = "c"
			got, err := resolveProcess(tt.pod, &c, tt.img, rootfs, []string{"B=base"}, tt.env)
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				g.Expect(err).To(BeAssignableToTypeOf(errConfig{}))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
