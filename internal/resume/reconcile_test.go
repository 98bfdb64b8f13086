package resume

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// urlError is an error as client-go returns it when the connection fails.
func urlError(err error) error {
	return &url.Error{Op: "Put", URL: "https://127.0.0.1:6443/apis/metal3.io/v1alpha1/namespaces/hosts/baremetalhosts/h/status", Err: err}
}

func TestUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	gr := schema.GroupResource{Group: "metal3.io", Resource: "hostclaims"}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused", urlError(refused), true},
		{"reset mid-request, wrapped by the reconciler", fmt.Errorf("status of hosts/h: %w", urlError(reset)), true},
		{"connection closed before the answer", urlError(io.EOF), true},
		{"the answer's body broke off", fmt.Errorf("status of hosts/h: %w",
			fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", io.ErrUnexpectedEOF)), true},
		{"timed out", urlError(&net.DNSError{Err: "i/o timeout", IsTimeout: true}), true},
		{"none", nil, false},
		{"a conflict: the server answered", apierrors.NewConflict(gr, "c", errors.New("changed")), false},
		{"too many requests: the server answered (backed off)", apierrors.NewTooManyRequests("later", 1), false},
		{"unavailable: the server answered (backed off)", apierrors.NewServiceUnavailable("starting"), false},
		{"a BMC's own refusal", errors.New("the BMC refused ForceOff"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			NewWithT(t).Expect(Unreachable(c.err)).To(Equal(c.want))
		})
	}
}

// TestReconcilerRetriesUnreachable: a reconcile that could not reach its API
// server is tried again within Retry, without an error (no backoff); any
// other error is the controller's to back off.
func TestReconcilerRetriesUnreachable(t *testing.T) {
	g := NewWithT(t)
	var err error
	r := Reconciler(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, err
	}))
	err = fmt.Errorf("hub: %w", urlError(io.ErrUnexpectedEOF))
	for range 20 {
		res, got := r.Reconcile(context.Background(), reconcile.Request{})
		g.Expect(got).NotTo(HaveOccurred())
		g.Expect(res.RequeueAfter).To(And(BeNumerically(">=", Retry/2), BeNumerically("<", Retry)))
	}
	err = apierrors.NewConflict(schema.GroupResource{Resource: "hostclaims"}, "c", errors.New("changed"))
	res, got := r.Reconcile(context.Background(), reconcile.Request{})
	g.Expect(got).To(MatchError(err))
	g.Expect(res.RequeueAfter).To(Equal(time.Duration(0)))
}
