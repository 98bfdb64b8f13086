//go:build linux

package pods

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// netns is a network namespace held open by a file descriptor.
type netns struct {
	fd int
}

// openNetns opens the network namespace of a process.
func openNetns(pid int) (*netns, error) {
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open network namespace of pid %d: %w", pid, err)
	}
	return &netns{fd: fd}, nil
}

// sameNetns reports whether process pid is still in the caller's network
// namespace (it has not unshared yet).
func sameNetns(pid int) (bool, error) {
	mine, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return false, err
	}
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return false, err
	}
	return mine == theirs, nil
}

// do runs fn on an OS thread that has entered the namespace. Sockets created
// by fn belong to the namespace for their whole life, whichever thread uses
// them afterwards.
func (n *netns) do(fn func() error) error {
	runtime.LockOSThread()
	home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer unix.Close(home)
	if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace: %w", err)
	}
	fnErr := fn()
	if err := unix.Setns(home, unix.CLONE_NEWNET); err != nil {
		// Leave the thread locked: the runtime ends a locked thread when its
		// goroutine returns, so no other goroutine runs in the pod's namespace.
		return fmt.Errorf("leave network namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return fnErr
}

// loopbackUp sets lo up inside the namespace.
func (n *netns) loopbackUp() error {
	return n.do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		ifr, err := unix.NewIfreq("lo")
		if err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
			return fmt.Errorf("get lo flags: %w", err)
		}
		ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
			return fmt.Errorf("set lo up: %w", err)
		}
		return nil
	})
}

// listen opens a TCP listener inside the namespace.
func (n *netns) listen(addr string) (net.Listener, error) {
	var l net.Listener
	err := n.do(func() (err error) {
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}

// listenPacket opens a UDP socket inside the namespace.
func (n *netns) listenPacket(addr string) (net.PacketConn, error) {
	var c net.PacketConn
	err := n.do(func() (err error) {
		c, err = net.ListenPacket("udp", addr)
		return err
	})
	return c, err
}

// dial connects, from inside the namespace, to addr.
func (n *netns) dial(ctx context.Context, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.do(func() (err error) {
		d := net.Dialer{Timeout: 2 * time.Second}
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

func (n *netns) close() { _ = unix.Close(n.fd) }
