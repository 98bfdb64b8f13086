//go:build linux

package pods

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeName is what spec.nodeName reads as inside a pod.
const nodeName = "local"

// podIPs hands out one loopback address per pod, process-wide, so pods of
// every runner in a test get distinct addresses.
var podIPs atomic.Uint32

func nextPodIP() string {
	n := podIPs.Add(1)
	return fmt.Sprintf("127.1.%d.%d", (n/250)%250, n%250+1)
}

// pod is one running replica.
type pod struct {
	r    *Runner
	name string
	ns   string
	hash string
	ip   string
	dir  string

	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	obj        *corev1.Pod
	waiting    string // why containers are not started yet
	containers []*container
}

type container struct {
	spec     corev1.Container
	log      string
	root     string // its root directory
	running  bool
	ready    bool
	restarts int32
	started  time.Time
	lastExit string
}

// ready reports whether every container passed its readiness probe.
func (p *pod) ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.containers) == 0 {
		return false
	}
	for _, c := range p.containers {
		if !c.ready {
			return false
		}
	}
	return true
}

func (p *pod) stop() {
	p.cancel()
	<-p.done
}

// run starts the pod and keeps it running until ctx ends.
func (p *pod) run(ctx context.Context) {
	defer close(p.done)
	p.mu.Lock()
	uid := p.obj.UID
	p.mu.Unlock()
	defer p.r.forgetTokens(uid)
	var procs sync.WaitGroup
	defer procs.Wait()

	// Volumes and env first: the pod waits, as in ContainerCreating, until
	// every Secret and ConfigMap it needs exists.
	var envs [][]string
	for {
		var err error
		envs, err = p.prepare(ctx)
		if err == nil {
			break
		}
		p.setWaiting(err.Error())
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	p.setWaiting("")

	netns, cleanup, err := p.network(ctx)
	if err != nil {
		p.setWaiting("network: " + err.Error())
		p.r.logf("pod %s/%s: %v", p.ns, p.name, err)
		<-ctx.Done()
		return
	}
	defer cleanup()

	for i, c := range p.containers {
		procs.Add(1)
		go func() {
			defer procs.Done()
			p.keepRunning(ctx, netns, c, envs[i])
		}()
	}

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	refresh := 0
	for {
		p.probe(ctx, netns)
		p.writeStatus(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if refresh++; refresh%2 == 0 {
			if _, err := p.writeVolumes(ctx); err != nil {
				p.r.logf("pod %s/%s: refresh volumes: %v", p.ns, p.name, err)
			}
		}
	}
}

func (p *pod) setWaiting(msg string) {
	p.mu.Lock()
	changed := p.waiting != msg
	p.waiting = msg
	p.mu.Unlock()
	if changed {
		p.writeStatus(context.Background())
	}
}

// prepare renders the volumes and builds each container's root and env.
func (p *pod) prepare(ctx context.Context) ([][]string, error) {
	if _, err := p.writeVolumes(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	obj := p.obj.DeepCopy()
	p.mu.Unlock()
	envs := make([][]string, len(p.containers))
	for i, c := range p.containers {
		env, err := p.r.env(ctx, obj, &c.spec)
		if err != nil {
			return nil, err
		}
		envs[i] = append([]string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"HOSTNAME=" + p.name,
			"KUBERNETES_SERVICE_HOST=127.0.0.1",
			"KUBERNETES_SERVICE_PORT=" + strconv.Itoa(p.r.apiPort),
			"KUBERNETES_SERVICE_PORT_HTTPS=" + strconv.Itoa(p.r.apiPort),
		}, env...)
		if err := p.root(c); err != nil {
			return nil, err
		}
	}
	return envs, nil
}

func (p *pod) writeVolumes(ctx context.Context) (bool, error) {
	p.mu.Lock()
	obj := p.obj.DeepCopy()
	p.mu.Unlock()
	changed := false
	for _, v := range obj.Spec.Volumes {
		fs, err := p.r.volumeFiles(ctx, obj, v)
		if err != nil {
			return changed, err
		}
		dir := filepath.Join(p.dir, "volumes", v.Name)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return changed, err
		}
		if fs == nil {
			continue
		}
		c, err := fs.write(dir)
		if err != nil {
			return changed, err
		}
		changed = changed || c
	}
	return changed, nil
}

// root lays out a container's root directory: mount points for the host's
// /usr, /etc, /dev and /proc, the usr-merged symlinks, a private /tmp, the
// binary and the volume mount points. The mounts themselves happen in the
// container's own mount namespace (see start).
func (p *pod) root(c *container) error {
	root := c.root
	for _, d := range []string{"usr", "etc", "dev", "proc", "tmp", "var/run", "run"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o1777); err != nil {
		return err
	}
	for _, l := range []string{"bin", "sbin", "lib", "lib64"} {
		target, err := os.Readlink("/" + l)
		if err != nil {
			continue // not a usr-merged link on this host: /usr covers it or it is absent
		}
		_ = os.Remove(filepath.Join(root, l))
		if err := os.Symlink(target, filepath.Join(root, l)); err != nil {
			return err
		}
	}
	img := p.r.image(c.spec.Image)
	if err := touch(filepath.Join(root, img.Path)); err != nil {
		return err
	}
	for _, m := range c.spec.VolumeMounts {
		src := filepath.Join(p.dir, "volumes", m.Name, m.SubPath)
		dst := filepath.Join(root, filepath.Clean("/"+m.MountPath))
		st, err := os.Stat(src)
		if err != nil {
			return errWaiting{fmt.Sprintf("volume %s: %v", m.Name, err)}
		}
		if st.IsDir() {
			err = os.MkdirAll(dst, 0o755)
		} else {
			err = touch(dst)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func touch(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	return f.Close()
}

// network gives the pod its network namespace, held by a pause process:
// loopback up, the API servers' ports forwarded out, and the pod's ports
// reachable at its own loopback address from the host.
func (p *pod) network(ctx context.Context) (*netns, func(), error) {
	pause := exec.Command("unshare", "--net", "sleep", "infinity")
	pause.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := pause.Start(); err != nil {
		return nil, nil, fmt.Errorf("start pause process: %w", err)
	}
	var listeners []net.Listener
	var ns *netns
	cleanup := func() {
		for _, l := range listeners {
			_ = l.Close()
		}
		_ = pause.Process.Kill()
		_ = pause.Wait()
		if ns != nil {
			ns.close()
		}
	}
	fail := func(err error) (*netns, func(), error) { cleanup(); return nil, nil, err }

	deadline := time.Now().Add(5 * time.Second)
	for {
		same, err := sameNetns(pause.Process.Pid)
		if err == nil && !same {
			break
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("pause process did not enter its network namespace: %v", err))
		}
		time.Sleep(10 * time.Millisecond)
	}
	ns, err := openNetns(pause.Process.Pid)
	if err != nil {
		return fail(err)
	}
	if err := ns.loopbackUp(); err != nil {
		return fail(err)
	}
	for _, port := range p.r.opts.ForwardPorts {
		l, err := ns.listen(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return fail(fmt.Errorf("forward port %d into the pod: %w", port, err))
		}
		listeners = append(listeners, l)
		addr := l.Addr().String()
		go forward(l, func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		})
	}
	for _, c := range p.containers {
		for _, cp := range c.spec.Ports {
			if cp.Protocol != "" && cp.Protocol != corev1.ProtocolTCP {
				continue
			}
			l, err := net.Listen("tcp", net.JoinHostPort(p.ip, strconv.Itoa(int(cp.ContainerPort))))
			if err != nil {
				return fail(fmt.Errorf("expose port %d at %s: %w", cp.ContainerPort, p.ip, err))
			}
			listeners = append(listeners, l)
			inner := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(cp.ContainerPort)))
			go forward(l, func(ctx context.Context) (net.Conn, error) { return ns.dial(ctx, inner) })
		}
	}
	go func() {
		<-ctx.Done()
		// Closing the listeners ends the forwarders; cleanup closes them again harmlessly.
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	return ns, cleanup, nil
}

// keepRunning runs a container and restarts it with backoff when it exits.
func (p *pod) keepRunning(ctx context.Context, ns *netns, c *container, env []string) {
	backoff := time.Second
	for ctx.Err() == nil {
		started := time.Now()
		err := p.start(ctx, ns, c, env)
		p.mu.Lock()
		c.running, c.ready = false, false
		if err != nil {
			c.lastExit = err.Error()
		}
		p.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		p.r.logf("pod %s/%s container %s exited: %v (log %s)", p.ns, p.name, c.spec.Name, err, c.log)
		if time.Since(started) > time.Minute {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
		p.mu.Lock()
		c.restarts++
		p.mu.Unlock()
	}
}

// mountScript runs in the container's new mount namespace, before chroot:
// $1 is the root, $2 the binary, $3 the binary's path in the root, then
// pairs of volume source and mount point, "--", and the command line.
const mountScript = `set -e
root=$1; mount --bind "$2" "$root$3"; shift 3
mount --rbind /usr "$root/usr"; mount --rbind /etc "$root/etc"; mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
while [ "$1" != "--" ]; do mount --bind "$1" "$root$2"; shift 2; done
shift
exec chroot "$root" "$@"
`

// start runs one container process until it exits or ctx ends.
func (p *pod) start(ctx context.Context, ns *netns, c *container, env []string) error {
	img := p.r.image(c.spec.Image)
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	argv := c.spec.Command
	args := c.spec.Args
	if len(argv) == 0 {
		argv = img.Entrypoint
	}
	var cmdline []string
	for _, a := range append(append([]string(nil), argv...), args...) {
		cmdline = append(cmdline, expand(a, vars))
	}
	if len(cmdline) == 0 {
		return errors.New("no command: set command or args, or an entrypoint for the image")
	}
	if c.spec.WorkingDir != "" {
		cmdline = append([]string{"/bin/sh", "-c", `cd "$0" && exec "$@"`, c.spec.WorkingDir}, cmdline...)
	}
	shArgs := []string{"-c", mountScript, "sh", c.root, img.Binary, filepath.Clean("/" + img.Path)}
	for _, m := range c.spec.VolumeMounts {
		shArgs = append(shArgs, filepath.Join(p.dir, "volumes", m.Name, m.SubPath), filepath.Clean("/"+m.MountPath))
	}
	shArgs = append(shArgs, "--")
	shArgs = append(shArgs, cmdline...)
	args = append([]string{fmt.Sprintf("--net=/proc/self/fd/%d", 3), "--", "unshare", "--mount", "--propagation", "private", "/bin/sh"}, shArgs...)
	cmd := exec.Command("nsenter", args...)
	dup, err := unix.Dup(ns.fd)
	if err != nil {
		return err
	}
	nsFile := os.NewFile(uintptr(dup), "netns")
	defer nsFile.Close()
	cmd.ExtraFiles = []*os.File{nsFile}
	cmd.Env = env
	logFile, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "---- %s start %q\n", time.Now().Format(time.RFC3339), cmdline)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.mu.Lock()
	c.running, c.started = true, time.Now()
	p.mu.Unlock()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		return ctx.Err()
	}
}

// probe runs each running container's readiness probe.
func (p *pod) probe(ctx context.Context, ns *netns) {
	for _, c := range p.containers {
		p.mu.Lock()
		running, probe := c.running, c.spec.ReadinessProbe
		p.mu.Unlock()
		ready := running
		if running && probe != nil {
			ready = p.check(ctx, ns, c, probe) == nil
		}
		p.mu.Lock()
		c.ready = ready
		p.mu.Unlock()
	}
}

func (p *pod) check(ctx context.Context, ns *netns, c *container, probe *corev1.Probe) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	switch {
	case probe.HTTPGet != nil:
		g := probe.HTTPGet
		port, err := portNumber(c.spec, g.Port)
		if err != nil {
			return err
		}
		scheme := "http"
		if g.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		tr := &http.Transport{
			DialContext:     func(ctx context.Context, _, addr string) (net.Conn, error) { return ns.dial(ctx, addr) },
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes do not verify, as the kubelet's
		}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, port, g.Path), nil)
		if err != nil {
			return err
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("probe %s: %s", g.Path, resp.Status)
		}
		return nil
	case probe.TCPSocket != nil:
		port, err := portNumber(c.spec, probe.TCPSocket.Port)
		if err != nil {
			return err
		}
		conn, err := ns.dial(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	}
	return nil // exec and gRPC probes pass: the process is running
}

func portNumber(c corev1.Container, port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.Name, port.StrVal)
}

// writeStatus reflects the containers in the Pod's status.
func (p *pod) writeStatus(ctx context.Context) {
	p.mu.Lock()
	obj := p.obj.DeepCopy()
	status := p.status(obj)
	p.mu.Unlock()
	if equality.Semantic.DeepEqual(obj.Status, status) {
		return
	}
	obj.Status = status
	err := p.r.direct.Status().Update(ctx, obj)
	if err == nil {
		p.mu.Lock()
		p.obj = obj
		p.mu.Unlock()
		return
	}
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		fresh := &corev1.Pod{}
		if err := p.r.direct.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err == nil {
			p.mu.Lock()
			p.obj = fresh
			p.mu.Unlock()
		} else if apierrors.IsNotFound(err) {
			p.r.podGone(p)
		}
	}
}

func (p *pod) status(obj *corev1.Pod) corev1.PodStatus {
	s := obj.Status.DeepCopy()
	start := obj.CreationTimestamp
	s.StartTime = &start
	s.HostIP = "127.0.0.1"
	s.PodIP = p.ip
	s.PodIPs = []corev1.PodIP{{IP: p.ip}}
	s.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
	allReady := len(p.containers) > 0
	running := p.waiting == ""
	s.ContainerStatuses = nil
	for _, c := range p.containers {
		cs := corev1.ContainerStatus{
			Name: c.spec.Name, Image: c.spec.Image, ImageID: c.spec.Image,
			Ready: c.ready, RestartCount: c.restarts, Started: ptr.To(c.running),
		}
		switch {
		case p.waiting != "":
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating", Message: p.waiting}
		case c.running:
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.started.Truncate(time.Second))}
		default:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: c.lastExit}
		}
		allReady = allReady && c.ready
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
	}
	s.Phase = corev1.PodPending
	if running {
		s.Phase = corev1.PodRunning
	}
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		st := corev1.ConditionFalse
		if ok {
			st = corev1.ConditionTrue
		}
		for _, old := range obj.Status.Conditions {
			if old.Type == t && old.Status == st {
				return old
			}
		}
		return corev1.PodCondition{Type: t, Status: st, LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))}
	}
	s.Conditions = []corev1.PodCondition{
		cond(corev1.PodScheduled, true),
		cond(corev1.PodInitialized, running),
		cond(corev1.ContainersReady, allReady),
		cond(corev1.PodReady, allReady),
	}
	return *s
}
