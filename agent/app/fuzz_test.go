package app

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// FuzzOptions: any command line parses or is refused, and a parsed one
// validates or names what is wrong, never a panic; a valid one has a
// cluster name and a positive worker count.
func FuzzOptions(f *testing.F) {
	f.Add("--hub-kubeconfig=/h --cluster-name=infra-1 --erase=Full --erase-image=https://x/erase.iso")
	f.Add("--cluster-name=a --bmc-workers=0 --erase-timeout=1ms --bmh-driver=some")
	f.Fuzz(func(t *testing.T, line string) {
		o := NewOptions()
		fs := pflag.NewFlagSet("fuzz", pflag.ContinueOnError)
		fs.Usage = func() {}
		fs.SetOutput(io.Discard)
		o.AddFlags(fs)
		if err := fs.Parse(strings.Fields(line)); err != nil {
			return
		}
		if errs := o.Validate(); len(errs) == 0 && (o.ClusterName == "" || o.BMCWorkers < 1 || o.Concurrency < 1) {
			t.Fatalf("%q validated with cluster %q, %d BMC workers, concurrency %d", line, o.ClusterName, o.BMCWorkers, o.Concurrency)
		}
	})
}
