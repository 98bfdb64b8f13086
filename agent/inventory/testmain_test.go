package inventory

import (
	"testing"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

// TestMain drops controller-runtime's logs from the test process itself
// (HOSTFLEET_TEST_AGENT_LOGS=1 shows them).
func TestMain(m *testing.M) { planes.Main(m) }
