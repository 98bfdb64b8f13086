package tenant

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestCountDelay: 5 s up to 100 clusters, then 50 ms per cluster, so that
// the bytes a count write sends to every agent grow with the fleet, not with
// its square.
func TestCountDelay(t *testing.T) {
	g := NewWithT(t)
	for clusters, want := range map[int]time.Duration{0: 5 * time.Second, 1: 5 * time.Second, 100: 5 * time.Second, 101: 5050 * time.Millisecond, 1000: 50 * time.Second} {
		g.Expect(countDelay(clusters)).To(Equal(want), "%d clusters", clusters)
	}
}
