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
