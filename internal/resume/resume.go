// Package resume keeps watches through a stalled or unreachable API server.
//
// client-go's reflectors list everything again when a watch's connection
// breaks ("http2: client connection lost") or when a new watch cannot reach
// its server (a TLS handshake timeout): after a hub API server stall, every
// informer of every agent lists at once. Through Watches, a broken watch
// stream ends as an unexpected EOF, after which a reflector watches again
// from the last version it saw; and a watch request that cannot reach its
// server is tried again, backing off, until it does or its context ends. A
// version the server no longer has still gets 410 Gone, and a list, as
// before.
package resume

import (
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Backoff bounds the waits between tries of a watch request: each wait is
// between half of the bound and all of it, so that many clients that lost
// their server at once do not come back in step.
const (
	firstWait = 200 * time.Millisecond
	maxWait   = 4 * time.Second
)

// Watches returns a copy of cfg whose watches resume as the package says;
// other requests are untouched.
func Watches(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { return &transport{next: next} })
	return cfg
}

type transport struct{ next http.RoundTripper }

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet || r.URL.Query().Get("watch") != "true" {
		return t.next.RoundTrip(r)
	}
	wait := firstWait
	for {
		resp, err := t.next.RoundTrip(r)
		if err == nil {
			resp.Body = &endOnBreak{resp.Body}
			return resp, nil
		}
		if r.Context().Err() != nil {
			return nil, err
		}
		// Said each time, as a reflector says a failed watch: a watch
		// that can never connect (a wrong CA, say) is not silent.
		jittered := wait/2 + rand.N(wait/2)
		klog.FromContext(r.Context()).Info("watch failed; trying again", "url", r.URL.Redacted(), "in", jittered, "err", err.Error())
		select {
		case <-r.Context().Done():
			return nil, err
		case <-time.After(jittered):
		}
		wait = min(2*wait, maxWait)
	}
}

// endOnBreak ends a stream whose connection broke as an unexpected EOF,
// which a watch takes for the end of the stream rather than an error.
type endOnBreak struct{ io.ReadCloser }

func (b *endOnBreak) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
