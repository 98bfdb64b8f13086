package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestLabel(t *testing.T) {
	g := NewWithT(t)
	line := `apiserver_request_total{code="200",component="apiserver",resource="hostclaims",subresource="status",verb="PATCH"} 12`
	g.Expect(label(line, "verb")).To(Equal("PATCH"))
	g.Expect(label(line, "resource")).To(Equal("hostclaims"), "not the subresource's")
	g.Expect(label(line, "subresource")).To(Equal("status"))
	g.Expect(label(`watch_cache_capacity{group="metal3.io",resource="hostclaims"} 6400`, "group")).To(Equal("metal3.io"))
	g.Expect(label(line, "scope")).To(BeEmpty())
}

func TestByResource(t *testing.T) {
	g := NewWithT(t)
	g.Expect(byResource(nil)).To(BeEmpty())
	g.Expect(byResource(map[string]float64{"leases": 0})).To(BeEmpty())
	g.Expect(byResource(map[string]float64{"leases": 1, "hostclaims": 287, "secrets": 1})).To(Equal(" (hostclaims 287, leases 1, secrets 1)"))
}
