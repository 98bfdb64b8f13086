//go:build linux

package pods

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

	mu            sync.Mutex
	obj           *corev1.Pod
	waiting       string // why containers are not started yet
	waitingReason string // ContainerCreating, ErrImagePull, CreateContainerConfigError
	containers    []*container
}

type container struct {
	spec     corev1.Container
	log      string
	dir      string // its root, overlay upper and work directories
	image    *image
	proc     process
	running  bool
	ready    bool
	restarts int32
	started  time.Time
	lastExit string
	// kill ends the running process with a cause (a failed liveness probe).
	kill context.CancelCauseFunc
	// liveness: consecutive failures and when the probe runs next.
	liveFailures int32
	nextLive     time.Time
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

	// Images, volumes and env first: the pod waits, as in
	// ContainerCreating, until every image is pulled and every Secret and
	// ConfigMap it needs exists; a container that may not run as specified
	// waits in CreateContainerConfigError.
	backoff := time.Second
	for {
		err := p.prepare(ctx)
		if err == nil {
			break
		}
		reason := "ContainerCreating"
		var pullErr errPull
		var configErr errConfig
		switch {
		case errors.As(err, &pullErr):
			reason = "ErrImagePull"
		case errors.As(err, &configErr):
			reason = "CreateContainerConfigError"
		}
		p.setWaiting(reason, err.Error())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
	p.setWaiting("", "")

	netns, cleanup, err := p.network(ctx)
	if err != nil {
		p.setWaiting("ContainerCreating", "network: "+err.Error())
		p.r.logf("pod %s/%s: %v", p.ns, p.name, err)
		<-ctx.Done()
		return
	}
	defer cleanup()

	for _, c := range p.containers {
		procs.Add(1)
		go func() {
			defer procs.Done()
			p.keepRunning(ctx, netns, c)
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

func (p *pod) setWaiting(reason, msg string) {
	p.mu.Lock()
	changed := p.waiting != msg || p.waitingReason != reason
	p.waiting, p.waitingReason = msg, reason
	p.mu.Unlock()
	if changed {
		p.writeStatus(context.Background())
	}
}

// prepare renders the volumes and the pod's /etc files, pulls each
// container's image and resolves how its process starts.
func (p *pod) prepare(ctx context.Context) error {
	if _, err := p.writeVolumes(ctx); err != nil {
		return err
	}
	if err := p.writeEtc(); err != nil {
		return err
	}
	p.mu.Lock()
	obj := p.obj.DeepCopy()
	p.mu.Unlock()
	for _, c := range p.containers {
		env, err := p.r.env(ctx, obj, &c.spec)
		if err != nil {
			return err
		}
		img, err := p.r.pull(ctx, c.spec.Image)
		if err != nil {
			return fmt.Errorf("container %s: %w", c.spec.Name, err)
		}
		base := []string{
			"HOSTNAME=" + p.name,
			"KUBERNETES_SERVICE_HOST=127.0.0.1",
			"KUBERNETES_SERVICE_PORT=" + strconv.Itoa(p.r.apiPort),
			"KUBERNETES_SERVICE_PORT_HTTPS=" + strconv.Itoa(p.r.apiPort),
		}
		proc, err := resolveProcess(obj, &c.spec, img.config, img.rootfs, base, env)
		if err != nil {
			return fmt.Errorf("container %s: %w", c.spec.Name, err)
		}
		// The volumes, and the pod's /etc files.
		mounts := append(slices.Clone(c.spec.VolumeMounts), corev1.VolumeMount{MountPath: "/etc/hosts"})
		for _, m := range mounts {
			if err := noSymlinks(img.rootfs, m.MountPath); err != nil {
				return errConfig{fmt.Sprintf("container %s: %v", c.spec.Name, err)}
			}
			if m.Name == "" {
				continue
			}
			if _, err := os.Stat(filepath.Join(p.dir, "volumes", m.Name, m.SubPath)); err != nil {
				return errWaiting{fmt.Sprintf("volume %s: %v", m.Name, err)}
			}
		}
		p.mu.Lock()
		c.image, c.proc = img, proc
		p.mu.Unlock()
	}
	return nil
}

// writeEtc writes the /etc/hosts, /etc/hostname and /etc/resolv.conf every
// container gets, as the kubelet does.
func (p *pod) writeEtc() error {
	dir := filepath.Join(p.dir, "etc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	resolv, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		resolv = nil
	}
	for name, data := range map[string][]byte{
		"hosts":       fmt.Appendf(nil, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n", p.ip, p.name),
		"hostname":    []byte(p.name + "\n"),
		"resolv.conf": resolv,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
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
		if v.EmptyDir != nil {
			// Writable by any user, as the kubelet's.
			if err := os.Chmod(dir, 0o777); err != nil {
				return changed, err
			}
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

// network gives the pod its network namespace, held by a pause process:
// loopback up, the API servers' ports forwarded out, and the pod's ports
// reachable at its own loopback address from the host. Its forwarders end
// with ctx or with cleanup, whichever comes first.
func (p *pod) network(ctx context.Context) (*netns, func(), error) {
	pause := exec.Command("unshare", "--net", "sleep", "infinity")
	pause.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := pause.Start(); err != nil {
		return nil, nil, fmt.Errorf("start pause process: %w", err)
	}
	var ns *netns
	var sockets []io.Closer
	var closeOnce sync.Once
	closeSockets := func() {
		closeOnce.Do(func() {
			for _, c := range sockets {
				_ = c.Close()
			}
		})
	}
	cleanup := func() {
		closeSockets()
		_ = pause.Process.Kill()
		_ = pause.Wait()
		if ns != nil {
			ns.close()
		}
	}
	fail := func(err error) (*netns, func(), error) { cleanup(); return nil, nil, err }

	if err := waitOwnNetns(pause.Process.Pid); err != nil {
		return fail(err)
	}
	ns, err := openNetns(pause.Process.Pid)
	if err != nil {
		return fail(err)
	}
	if err := ns.loopbackUp(); err != nil {
		return fail(err)
	}
	sockets, err = p.forwardPorts(ns)
	if err != nil {
		return fail(err)
	}
	go func() { <-ctx.Done(); closeSockets() }()
	return ns, cleanup, nil
}

// waitOwnNetns waits until the process pid is in a network namespace of
// its own.
func waitOwnNetns(pid int) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		same, err := sameNetns(pid)
		if err == nil && !same {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pause process did not enter its network namespace: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// forwardPorts forwards the runner's ports (the API servers', TCP and UDP)
// from the pod's loopback to the host's, and the containers' TCP ports from
// the pod's address on the host into the pod. Closing the sockets it
// returns ends the forwarders; on error it closes those it opened.
func (p *pod) forwardPorts(ns *netns) (sockets []io.Closer, err error) {
	defer func() {
		if err != nil {
			for _, c := range sockets {
				_ = c.Close()
			}
		}
	}()
	for _, port := range p.r.opts.ForwardPorts {
		l, err := ns.listen(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return sockets, fmt.Errorf("forward port %d into the pod: %w", port, err)
		}
		sockets = append(sockets, l)
		addr := l.Addr().String()
		go forward(l, func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		})
	}
	for _, port := range p.r.opts.ForwardUDPPorts {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		pc, err := ns.listenPacket(addr)
		if err != nil {
			return sockets, fmt.Errorf("forward UDP port %d into the pod: %w", port, err)
		}
		sockets = append(sockets, pc)
		go forwardUDP(pc, addr)
	}
	for _, c := range p.containers {
		for _, cp := range c.spec.Ports {
			if cp.Protocol != "" && cp.Protocol != corev1.ProtocolTCP {
				continue
			}
			l, err := net.Listen("tcp", net.JoinHostPort(p.ip, strconv.Itoa(int(cp.ContainerPort))))
			if err != nil {
				return sockets, fmt.Errorf("expose port %d at %s: %w", cp.ContainerPort, p.ip, err)
			}
			sockets = append(sockets, l)
			inner := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(cp.ContainerPort)))
			go forward(l, func(ctx context.Context) (net.Conn, error) { return ns.dial(ctx, inner) })
		}
	}
	return sockets, nil
}

// keepRunning runs a container and restarts it with backoff when it exits
// or its liveness probe fails.
func (p *pod) keepRunning(ctx context.Context, ns *netns, c *container) {
	backoff := time.Second
	for ctx.Err() == nil {
		started := time.Now()
		err := p.runContainer(ctx, ns, c)
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

// mountScript runs in the container's new mount namespace. $1 is the
// root, $2 the image's unpacked files, $3 and $4 the overlay's upper and
// work directories, $5 "ro" for a read-only root; then each bind mount as
// source, mount point and ro|rw (mount.args), "--", and the command that
// enters the root. The
// root is an overlay of the image (writable, and thrown away when the
// container ends, unless read-only); /dev is the host's, /proc the pod's.
const mountScript = `set -e
cpath=$PATH; PATH=/usr/sbin:/usr/bin:/sbin:/bin
root=$1; mount -t overlay overlay -o "lowerdir=$2,upperdir=$3,workdir=$4" "$root"; ro=$5; shift 5
mkdir -p "$root/dev" "$root/proc"
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
while [ "$1" != "--" ]; do
  if [ -d "$1" ]; then mkdir -p "$root$2"; else mkdir -p "$(dirname "$root$2")"; [ -e "$root$2" ] || : > "$root$2"; fi
  mount --bind "$1" "$root$2"
  if [ "$3" = ro ]; then mount -o remount,bind,ro "$root$2"; fi
  shift 3
done
shift
if [ "$ro" = ro ]; then mount -o remount,bind,ro "$root"; fi
PATH=$cpath; exec "$@"
`

// hostTools are the host's programs that set a container up, by absolute
// path: the container's environment (its image's PATH) is theirs.
var hostTools = func() (t struct{ nsenter, unshare, sh string }) {
	for _, x := range []struct {
		name string
		path *string
	}{{"nsenter", &t.nsenter}, {"unshare", &t.unshare}, {"sh", &t.sh}} {
		p, err := exec.LookPath(x.name)
		if err != nil {
			p = "/usr/bin/" + x.name // start reports it missing
		}
		*x.path = p
	}
	return t
}()

// mount is a bind mount into a container's root.
type mount struct {
	source, target string
	readOnly       bool
}

// args are the mount as mountScript reads it.
func (m mount) args() []string {
	mode := "rw"
	if m.readOnly {
		mode = "ro"
	}
	return []string{m.source, m.target, mode}
}

// mounts are a container's bind mounts: the pod's /etc files, read-only,
// and its volume mounts.
func (p *pod) mounts(c *container) []mount {
	var ms []mount
	for _, f := range []string{"hosts", "hostname", "resolv.conf"} {
		ms = append(ms, mount{source: filepath.Join(p.dir, "etc", f), target: "/etc/" + f, readOnly: true})
	}
	for _, m := range c.spec.VolumeMounts {
		ms = append(ms, mount{source: filepath.Join(p.dir, "volumes", m.Name, m.SubPath), target: filepath.Clean("/" + m.MountPath), readOnly: m.ReadOnly})
	}
	return ms
}

// runContainer runs the container's process once: it starts it (launch) and waits
// until it exits, or kills it when ctx ends or the container is killed
// (supervise).
func (p *pod) runContainer(ctx context.Context, ns *netns, c *container) error {
	cmd, logFile, err := p.launch(ns, c)
	if err != nil {
		return err
	}
	defer logFile.Close()
	return p.supervise(ctx, c, cmd, logFile)
}

// launch starts the container's process in a fresh root (an overlay of its
// image with an empty writable layer) inside the pod's network namespace,
// its output going to the container's log, which it returns open.
func (p *pod) launch(ns *netns, c *container) (*exec.Cmd, *os.File, error) {
	p.mu.Lock()
	img, proc := c.image, c.proc
	p.mu.Unlock()
	root, upper, work := filepath.Join(c.dir, "root"), filepath.Join(c.dir, "upper"), filepath.Join(c.dir, "work")
	if err := os.RemoveAll(c.dir); err != nil {
		return nil, nil, err
	}
	for _, d := range []string{root, upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, err
		}
	}
	rootMode := "rw"
	if proc.readOnly {
		rootMode = "ro"
	}
	shArgs := []string{"-c", mountScript, "sh", root, img.rootfs, upper, work, rootMode}
	for _, m := range p.mounts(c) {
		shArgs = append(shArgs, m.args()...)
	}
	// unshare with no namespace flags only enters the root, changes
	// directory and user, and runs the command (found on the image's PATH).
	enter := []string{hostTools.unshare, "--root=" + root, "--wd=" + proc.workdir}
	if proc.uid != 0 || proc.gid != 0 {
		enter = append(enter, "--setgid", strconv.Itoa(proc.gid), "--setuid", strconv.Itoa(proc.uid))
	}
	shArgs = append(append(append(shArgs, "--"), enter...), "--")
	shArgs = append(shArgs, proc.argv...)
	args := append([]string{fmt.Sprintf("--net=/proc/self/fd/%d", 3), "--", hostTools.unshare, "--mount", "--propagation", "private", hostTools.sh}, shArgs...)
	cmd := exec.Command(hostTools.nsenter, args...)
	dup, err := unix.Dup(ns.fd)
	if err != nil {
		return nil, nil, err
	}
	nsFile := os.NewFile(uintptr(dup), "netns")
	defer nsFile.Close()
	cmd.ExtraFiles = []*os.File{nsFile}
	cmd.Env = proc.env
	logFile, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(logFile, "---- %s start %s as %d:%d %q\n", time.Now().Format(time.RFC3339), img.ref, proc.uid, proc.gid, proc.argv)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, nil, err
	}
	return cmd, logFile, nil
}

// supervise waits for the container's process to exit, or stops it (SIGTERM
// to its process group, SIGKILL 5 s later) when ctx ends or the container
// is killed (its liveness probe failed).
func (p *pod) supervise(ctx context.Context, c *container, cmd *exec.Cmd, logFile *os.File) error {
	cctx, kill := context.WithCancelCause(ctx)
	defer kill(nil)
	p.mu.Lock()
	c.running, c.started, c.kill = true, time.Now(), kill
	c.liveFailures, c.nextLive = 0, time.Now().Add(time.Duration(initialDelay(c.spec.LivenessProbe))*time.Second)
	p.mu.Unlock()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-cctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		fmt.Fprintf(logFile, "---- %s killed: %v\n", time.Now().Format(time.RFC3339), context.Cause(cctx))
		return context.Cause(cctx)
	}
}

func initialDelay(probe *corev1.Probe) int32 {
	if probe == nil {
		return 0
	}
	return probe.InitialDelaySeconds
}

// probe runs each running container's readiness probe, and its liveness
// probe when due: failureThreshold failures in a row (default 3), every
// periodSeconds (default 10), kill the container, which is restarted.
func (p *pod) probe(ctx context.Context, ns *netns) {
	for _, c := range p.containers {
		p.mu.Lock()
		running, probe, live := c.running, c.spec.ReadinessProbe, c.spec.LivenessProbe
		due := live != nil && running && !time.Now().Before(c.nextLive)
		p.mu.Unlock()
		ready := running
		if running && probe != nil {
			ready = p.check(ctx, ns, c, probe) == nil
		}
		p.mu.Lock()
		c.ready = ready
		p.mu.Unlock()
		if !due {
			continue
		}
		err := p.check(ctx, ns, c, live)
		p.mu.Lock()
		c.nextLive = time.Now().Add(time.Duration(orDefault(live.PeriodSeconds, 10)) * time.Second)
		if err == nil {
			c.liveFailures = 0
		} else if c.liveFailures++; c.liveFailures >= orDefault(live.FailureThreshold, 3) && c.kill != nil {
			p.r.logf("pod %s/%s container %s: liveness probe failed %d times, restarting: %v", p.ns, p.name, c.spec.Name, c.liveFailures, err)
			c.kill(fmt.Errorf("liveness probe failed: %w", err))
		}
		p.mu.Unlock()
	}
}

func orDefault(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

func (p *pod) check(ctx context.Context, ns *netns, c *container, probe *corev1.Probe) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(max(2, probe.TimeoutSeconds))*time.Second)
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
	var unready []string
	s.ContainerStatuses = nil
	for _, c := range p.containers {
		cs := corev1.ContainerStatus{
			Name: c.spec.Name, Image: c.spec.Image, ImageID: c.spec.Image,
			Ready: c.ready, RestartCount: c.restarts, Started: ptr.To(c.running),
		}
		if c.image != nil {
			cs.ImageID = c.image.ref + "@" + c.image.digest.String()
		}
		switch {
		case p.waiting != "":
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: p.waitingReason, Message: p.waiting}
		case c.running:
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.started.Truncate(time.Second))}
		default:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: c.lastExit}
		}
		if !c.ready {
			unready = append(unready, c.spec.Name)
		}
		allReady = allReady && c.ready
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
	}
	// Why the pod is not ready, as the kubelet says it, and what keeps its
	// containers from starting.
	why := ""
	if len(unready) > 0 {
		why = fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
		if p.waiting != "" {
			why += ": " + p.waitingReason + ": " + p.waiting
		}
	}
	s.Phase = corev1.PodPending
	if running {
		s.Phase = corev1.PodRunning
	}
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		st, reason, msg := corev1.ConditionFalse, "ContainersNotReady", why
		if ok {
			st, reason, msg = corev1.ConditionTrue, "", ""
		}
		if t == corev1.PodScheduled || t == corev1.PodInitialized {
			reason, msg = "", ""
		}
		for _, old := range obj.Status.Conditions {
			if old.Type == t && old.Status == st {
				old.Reason, old.Message = reason, msg
				return old
			}
		}
		return corev1.PodCondition{Type: t, Status: st, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))}
	}
	s.Conditions = []corev1.PodCondition{
		cond(corev1.PodScheduled, true),
		cond(corev1.PodInitialized, running),
		cond(corev1.ContainersReady, allReady),
		cond(corev1.PodReady, allReady),
	}
	return *s
}
