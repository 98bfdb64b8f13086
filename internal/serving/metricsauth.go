package serving

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Authorized is controller-runtime's metrics filter (TokenReview, then a
// SubjectAccessReview of get on the path, through the API server of
// config) with the answer a scraper can act on when the token is refused:
// 401, as the API server itself answers, where controller-runtime answers
// 500 "Authentication failed" to a token the API server does not accept (one
// another cluster signed, say). A 500 stays a 500 while the API server does
// not answer: then the token could not be checked at all.
func Authorized(config *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	inner, err := filters.WithAuthenticationAndAuthorization(config, hc)
	if err != nil {
		return nil, err
	}
	probe := &answers{url: strings.TrimSuffix(config.Host, "/") + "/version", hc: hc}
	return func(log logr.Logger, handler http.Handler) (http.Handler, error) {
		h, err := inner(log, handler)
		if err != nil {
			return nil, err
		}
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			hw := &heldError{ResponseWriter: w}
			h.ServeHTTP(hw, req)
			if !hw.held {
				return
			}
			if strings.HasPrefix(hw.body.String(), "Authentication failed") && probe.up(req.Context()) {
				http.Error(w, "Unauthorized: the API server does not accept this token", http.StatusUnauthorized)
				return
			}
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write(hw.body.Bytes())
		}), nil
	}, nil
}

// heldError passes a response through, except a 500, which it holds (code
// and body) for the filter to answer.
type heldError struct {
	http.ResponseWriter
	held bool
	body bytes.Buffer
}

func (h *heldError) WriteHeader(code int) {
	if code == http.StatusInternalServerError {
		h.held = true
		return
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *heldError) Write(b []byte) (int, error) {
	if h.held {
		return h.body.Write(b)
	}
	return h.ResponseWriter.Write(b)
}

// answers says whether the API server answers, asked at most every few
// seconds however many refused scrapes come.
type answers struct {
	url string
	hc  *http.Client

	mu     sync.Mutex
	at     time.Time
	answer bool
}

func (a *answers) up(ctx context.Context) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if time.Since(a.at) < 5*time.Second {
		return a.answer
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	a.answer, a.at = false, time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url, nil)
	if err != nil {
		return false
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	a.answer = resp.StatusCode == http.StatusOK
	return a.answer
}
