package planes

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// inProcessLogs keeps the last lines the controllers running in the test
// process logged (hub, agents, managers: Main), so that a failed test
// shows what they decided and refused, not only what the API servers and
// baremetal-operator said.
var inProcessLogs = &ring{max: 4000}

// ring is an io.Writer keeping the last max lines written to it.
type ring struct {
	mu    sync.Mutex
	max   int
	lines []string
	next  int
}

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		if len(r.lines) < r.max {
			r.lines = append(r.lines, string(l))
			continue
		}
		r.lines[r.next] = string(l)
		r.next = (r.next + 1) % r.max
	}
	return len(p), nil
}

// tail is the last n lines, oldest first.
func (r *ring) tail(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := append(append([]string(nil), r.lines[r.next:]...), r.lines[:r.next]...)
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return all
}

// dumpInProcess prints the tail of the in-process controllers' log and
// every HostClaim on every plane, with its placement, host and conditions:
// what a failed test's last Eventually was waiting for.
func (f *Fleet) dumpInProcess(t testing.TB) {
	if lines := inProcessLogs.tail(5 * logLines()); len(lines) > 0 {
		t.Logf("--- last lines of the controllers in this process ---\n%s", strings.Join(lines, "\n"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range f.order {
		// A test may have stopped its fleet before this cleanup runs (the
		// local suite does): its planes are gone.
		p := f.Plane(name)
		if p == nil {
			continue
		}
		var claims metal3api.HostClaimList
		if err := p.Client.List(ctx, &claims); err != nil || len(claims.Items) == 0 {
			continue
		}
		var b strings.Builder
		for i := range claims.Items {
			describeClaim(&b, &claims.Items[i])
		}
		t.Logf("--- HostClaims on %s ---\n%s", name, b.String())
	}
}

func describeClaim(b *strings.Builder, c *metal3api.HostClaim) {
	host := "-"
	if c.Status.BareMetalHost != nil {
		host = c.Status.BareMetalHost.Name
	}
	fmt.Fprintf(b, "%s labels=%v host=%s deleting=%t\n", client.ObjectKeyFromObject(c), c.Labels, host, !c.DeletionTimestamp.IsZero())
	for _, cond := range c.Status.Conditions {
		msg := cond.Message
		if len(msg) > 160 {
			msg = msg[:160] + "…"
		}
		fmt.Fprintf(b, "  %s=%s %s (%s): %s\n", cond.Type, cond.Status, cond.Reason, cond.LastTransitionTime.UTC().Format(time.TimeOnly), msg)
	}
}
