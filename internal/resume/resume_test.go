package resume

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

type stub struct {
	fails int
	calls int
	body  io.ReadCloser
}

func (s *stub) RoundTrip(*http.Request) (*http.Response, error) {
	s.calls++
	if s.calls <= s.fails {
		return nil, errors.New("net/http: TLS handshake timeout")
	}
	return &http.Response{StatusCode: http.StatusOK, Body: s.body}, nil
}

// broken reads its data, then fails as a lost connection does.
type broken struct{ io.Reader }

func (b broken) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err == io.EOF {
		err = errors.New("http2: client connection lost")
	}
	return n, err
}
func (broken) Close() error { return nil }

func request(g Gomega, ctx context.Context, url string) *http.Request {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	return r
}

func TestWatchTriedAgainAndEndsOnBreak(t *testing.T) {
	g := NewWithT(t)
	s := &stub{fails: 2, body: broken{strings.NewReader(`{"type":"ADDED"}`)}}
	resp, err := (&transport{next: s}).RoundTrip(request(g, context.Background(), "https://hub/apis/metal3.io/v1alpha1/hostclaims?watch=true"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.calls).To(Equal(3), "tried until it reached the server")
	data, err := io.ReadAll(resp.Body)
	g.Expect(string(data)).To(Equal(`{"type":"ADDED"}`))
	g.Expect(err).To(MatchError(io.ErrUnexpectedEOF), "a lost connection ends the stream")
}

func TestWatchGivesUpWithItsContext(t *testing.T) {
	g := NewWithT(t)
	s := &stub{fails: 1 << 30}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := (&transport{next: s}).RoundTrip(request(g, ctx, "https://hub/apis/metal3.io/v1alpha1/hostclaims?watch=true"))
	g.Expect(err).To(MatchError(ContainSubstring("TLS handshake timeout")))
	g.Expect(s.calls).To(BeNumerically(">=", 2))
}

func TestOtherRequestsUntouched(t *testing.T) {
	g := NewWithT(t)
	s := &stub{fails: 1}
	_, err := (&transport{next: s}).RoundTrip(request(g, context.Background(), "https://hub/apis/metal3.io/v1alpha1/hostclaims"))
	g.Expect(err).To(HaveOccurred(), "a list fails as it did")
	g.Expect(s.calls).To(Equal(1))
	resp, err := (&transport{next: &stub{body: broken{strings.NewReader("{}")}}}).RoundTrip(request(g, context.Background(), "https://hub/apis/metal3.io/v1alpha1/hostclaims"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = io.ReadAll(resp.Body)
	g.Expect(err).To(MatchError(ContainSubstring("connection lost")), "a list's broken body is reported as it is")
}
