package planes

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

// TestTransient: the starts made again are those that failed on the
// connection or an API server that never became ready; others fail at once.
func TestTransient(t *testing.T) {
	g := NewWithT(t)
	for msg, want := range map[string]bool{
		"unable to start control plane itself: timeout waiting for process kube-apiserver to start successfully": true,
		"default namespace didn't register within deadline: context deadline exceeded":                           true,
		`read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer`:                                      true,
		"unable to install CRDs onto control plane: unable to read CRD files":                                    false,
	} {
		g.Expect(transient(errors.New(msg))).To(Equal(want), msg)
	}
}
