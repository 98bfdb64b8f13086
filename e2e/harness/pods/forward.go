//go:build linux

package pods

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
)

// forward accepts on l and pipes each connection to what dial returns, until l
// is closed.
func forward(l net.Listener, dial func(context.Context) (net.Conn, error)) {
	for {
		in, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go func() {
			defer in.Close()
			out, err := dial(context.Background())
			if err != nil {
				return
			}
			defer out.Close()
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); pipe(out, in) }()
			go func() { defer wg.Done(); pipe(in, out) }()
			wg.Wait()
		}()
	}
}

// pipe copies src to dst, then half-closes dst so the peer sees the end.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if tc, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	} else {
		_ = dst.Close()
	}
}

// forwardUDP relays datagrams arriving on in to target (on the host's
// loopback), and the answers back to their sender: one host-side socket per
// sender, so replies find their way. It returns when in is closed.
func forwardUDP(in net.PacketConn, target string) {
	var mu sync.Mutex
	peers := map[string]net.Conn{}
	defer func() {
		mu.Lock()
		for _, c := range peers {
			_ = c.Close()
		}
		mu.Unlock()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, from, err := in.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		mu.Lock()
		out, ok := peers[from.String()]
		if !ok {
			if out, err = net.Dial("udp", target); err != nil {
				mu.Unlock()
				continue
			}
			peers[from.String()] = out
			go func() {
				reply := make([]byte, 64<<10)
				for {
					n, err := out.Read(reply)
					if errors.Is(err, net.ErrClosed) {
						return
					}
					if err == nil {
						_, _ = in.WriteTo(reply[:n], from)
					}
				}
			}()
		}
		mu.Unlock()
		_, _ = out.Write(buf[:n])
	}
}
