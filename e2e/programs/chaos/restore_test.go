package chaos_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/e2e/programs/chaos"
)

// TestRestoreHub restores the hub's etcd from a snapshot older than the
// last bindings: claims bound after it are gone and their hosts come back
// after --orphan-grace, the claim deleted after it comes back and is bound
// again, the claims older than the snapshot keep their hosts untouched,
// and no host passes from one claim to another.
func TestRestoreHub(t *testing.T) {
	rep := restore(t, "hub")
	g := NewWithT(t)
	g.Expect(rep.Final).To(HaveKey("gone-after"), "the claim deleted after the snapshot is back, and bound")
	g.Expect(rep.UsageAfter).To(BeNumerically(">=", rep.UsageSnapshot), "the restored hub's ledger goes on from its snapshot")
}

// TestRestoreInfra restores an infrastructure cluster's etcd from an older
// snapshot: the host of the claim deleted after it is released after
// --orphan-grace, the claims bound after it are bound again, the claims
// older than the snapshot keep their hosts untouched, and no host passes
// from one claim to another.
func TestRestoreInfra(t *testing.T) {
	rep := restore(t, "infra-1")
	g := NewWithT(t)
	g.Expect(rep.Final).To(SatisfyAll(HaveKey("new-1"), HaveKey("new-2")), "the claims bound after the snapshot are bound again")
	g.Expect(rep.UsageAfter).To(BeNumerically(">=", rep.UsageBefore), "a cluster restored from an older snapshot takes nothing from the hub's ledger")
}

// restore runs chaos.Restore on a plane and checks what every restore must
// show.
func restore(t *testing.T, plane string) *chaos.RestoreReport {
	g := NewWithT(t)
	var out strings.Builder
	grace := 10 * time.Second
	rep, err := chaos.Restore(context.Background(), chaos.RestoreOptions{Bin: build(t), Dir: t.TempDir(), Out: &out,
		Plane: plane, Grace: grace, Converge: 3 * time.Minute})
	t.Log("\n" + out.String())
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("%s restored in %s; claims truthful %s and the fleet converged %s after the restore (--orphan-grace %s)",
		plane, rep.Restore.Round(10*time.Millisecond), rep.Truthful.Round(100*time.Millisecond), rep.Converged.Round(100*time.Millisecond), grace)
	g.Expect(rep.Check.Violations).To(BeEmpty())
	g.Expect(rep.Handovers).To(BeEmpty(), "no host passes from one claim to another")
	g.Expect(rep.Touched).To(BeEmpty(), "the claims older than the snapshot keep their hosts, untouched")
	// A claim the restore brought back says Ready on its old host until its
	// agent has listed the claims again: its watch broke with the restore,
	// and is tried again every 4 s at most once the restored API server
	// answers (2–16 s here; the restore itself takes 2 s, and 35 s on a
	// machine loaded past its cores).
	g.Expect(rep.Truthful-rep.Restore).To(BeNumerically("<", 45*time.Second),
		"no claim says Ready on another claim's host for long once the restored API server answers")
	g.Expect(rep.UsageBefore).To(BeNumerically(">", rep.UsageSnapshot), "the claim released after the snapshot was counted")
	return rep
}
