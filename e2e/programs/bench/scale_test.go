package main

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestCountRequests: what the bench reads of an API server's metrics, from
// the text it serves.
func TestCountRequests(t *testing.T) {
	g := NewWithT(t)
	text := `# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",resource="hostclaims",subresource="status",verb="PATCH"} 12
apiserver_request_total{code="201",component="apiserver",resource="hostclaims",subresource="",verb="POST"} 3
apiserver_request_total{code="101",component="apiserver",resource="pods",subresource="exec",verb="CONNECT"} 9
# TYPE watch_cache_capacity gauge
watch_cache_capacity{group="metal3.io",resource="hostclaims"} 6400
# TYPE etcd_request_duration_seconds histogram
etcd_request_duration_seconds_bucket{operation="get",type="x",le="0.5"} 90
etcd_request_duration_seconds_bucket{operation="get",type="x",le="1"} 95
etcd_request_duration_seconds_bucket{operation="get",type="x",le="+Inf"} 100
etcd_request_duration_seconds_sum{operation="get",type="x"} 42
etcd_request_duration_seconds_count{operation="get",type="x"} 100
`
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	g.Expect(err).NotTo(HaveOccurred())
	got := countRequests(families)
	g.Expect(got).To(HaveKeyWithValue("PATCH", 12.0))
	g.Expect(got).To(HaveKeyWithValue(keyByResource+"/PATCH hostclaims/status", 12.0), "the subresource apart")
	g.Expect(got).To(HaveKeyWithValue(keyByResource+"/POST hostclaims", 3.0))
	g.Expect(got).NotTo(HaveKey("CONNECT"))
	g.Expect(got).To(HaveKeyWithValue(keyClaimCache, 6400.0))
	g.Expect(got).To(HaveKeyWithValue(keySlowEtcd, 5.0), "over one second: the count less the le=1 bucket")
}

func TestByResource(t *testing.T) {
	g := NewWithT(t)
	g.Expect(byResource(nil)).To(BeEmpty())
	g.Expect(byResource(map[string]float64{"leases": 0})).To(BeEmpty())
	g.Expect(byResource(map[string]float64{"leases": 1, "hostclaims": 287, "secrets": 1})).To(Equal(" (hostclaims 287, leases 1, secrets 1)"))
}
