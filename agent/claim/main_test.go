package claim_test

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestMain routes the in-process agents' logs to stderr when
// HOSTFLEET_TEST_AGENT_LOGS is set, and drops them otherwise.
func TestMain(m *testing.M) {
	if os.Getenv("HOSTFLEET_TEST_AGENT_LOGS") != "" {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	os.Exit(m.Run())
}
