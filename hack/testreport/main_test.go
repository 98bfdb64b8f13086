package main

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestReport: a passing test's output is dropped, a failed test's and a
// failed package's printed whole, go test's package lines kept, and the
// slowest top-level tests ordered by their time.
func TestReport(t *testing.T) {
	g := NewWithT(t)
	in := strings.Join([]string{
		`{"Action":"output","Package":"a","Test":"TestFast","Output":"=== RUN   TestFast\n"}`,
		`{"Action":"output","Package":"a","Test":"TestFast","Output":"quiet\n"}`,
		`{"Action":"pass","Package":"a","Test":"TestFast","Elapsed":0.5}`,
		`{"Action":"output","Package":"a","Test":"TestSlow/sub","Output":"    x_test.go:9: boom\n"}`,
		`{"Action":"fail","Package":"a","Test":"TestSlow/sub","Elapsed":40}`,
		`{"Action":"fail","Package":"a","Test":"TestSlow","Elapsed":41}`,
		`{"Action":"output","Package":"a","Output":"FAIL\n"}`,
		`{"Action":"output","Package":"a","Output":"FAIL\ta\t42.0s\n"}`,
		`{"Action":"fail","Package":"a","Elapsed":42}`,
		`{"Action":"output","Package":"b","Output":"ok  \tb\t3.0s\n"}`,
		`{"Action":"pass","Package":"b","Test":"TestMiddle","Elapsed":3}`,
		`{"Action":"pass","Package":"b","Elapsed":3}`,
		`{"Action":"output","Package":"c","Output":"?   \tc\t[no test files]\n"}`,
		`{"Action":"skip","Package":"c"}`,
		`# a build error as text`,
	}, "\n")
	var out strings.Builder
	r := &report{out: &out, output: map[string]*strings.Builder{}}
	g.Expect(r.read(strings.NewReader(in))).To(Succeed())
	r.printSlowest(2)
	g.Expect(out.String()).To(Equal("    x_test.go:9: boom\n" +
		"FAIL\nFAIL\ta\t42.0s\n" +
		"ok  \tb\t3.0s\n" +
		"?   \tc\t[no test files]\n" +
		"# a build error as text\n" +
		"the 2 slowest tests:\n       41s  a TestSlow\n        3s  b TestMiddle\n"))
	g.Expect([]int{r.passed, r.failed, r.failedPackages}).To(Equal([]int{2, 2, 1}))
}
