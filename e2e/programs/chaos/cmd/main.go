// Command chaos runs the chaos suite at full size (make chaos).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/e2e/programs/chaos"
)

func main() {
	o := chaos.Options{Out: os.Stdout}
	flag.StringVar(&o.Bin, "bin", "bin", "directory holding hostfleet-hub and hostfleet-agent")
	flag.StringVar(&o.Dir, "dir", planes.CacheDir("chaos"), "kubeconfigs and logs (emptied first)")
	flag.Uint64Var(&o.Seed, "seed", uint64(time.Now().UnixNano()), "seed of every random choice (printed)")
	flag.IntVar(&o.Planes, "planes", 3, "infrastructure planes")
	flag.IntVar(&o.Hosts, "hosts", 500, "BMC-driven hosts, spread over the planes")
	flag.IntVar(&o.Claims, "claims", 2000, "claims created in all")
	flag.IntVar(&o.Live, "live", 0, "claims at once at most (default: hosts + 20%)")
	flag.Float64Var(&o.Rate, "rate", 20, "churn operations per second")
	flag.IntVar(&o.Kills, "kills", 10, "SIGKILLs of the hub and the agents")
	flag.DurationVar(&o.Outage, "outage", 2*time.Minute, "how long the hub's API server is stopped, once")
	flag.IntVar(&o.Partitions, "partitions", 3, "times an agent is cut from an API server (the hub's, its plane's, its plane's mid-release, in turn)")
	flag.DurationVar(&o.PartitionFor, "partition-for", 2*time.Minute, "how long each partition lasts")
	flag.IntVar(&o.HostFailures, "host-failures", 6, "bound hosts whose BMC fails (HTTP 500), one after another, under a tenant that replaces failed hosts")
	flag.DurationVar(&o.FailFor, "fail-for", 3*time.Minute, "how long a failed BMC stays failed at most: until its host's claim says Fencing")
	flag.DurationVar(&o.Converge, "converge", 15*time.Minute, "how long the fleet may take to settle after the churn")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	fmt.Printf("chaos: seed %d\n", o.Seed)
	if err := os.RemoveAll(o.Dir); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	o.Bin, _ = filepath.Abs(o.Bin)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	rep, err := chaos.Run(ctx, o)
	if rep != nil {
		fmt.Printf("\nclaims created %d, updated %d, deleted %d; writes retried after %d conflicts and %d failures; kills %d %v; hub API server stopped %s\n",
			rep.Created, rep.Updated, rep.Deleted, rep.Conflicts, rep.Failures, len(rep.Kills), rep.Kills, rep.Outage)
		for _, p := range rep.Partitions {
			fmt.Printf("partition: %s\n", p)
		}
		for _, h := range rep.HostFailures {
			fmt.Printf("host failure: %s\n", h)
		}
		fmt.Printf("hosts quarantined: %d; claims bound to another host after one: %d\n", rep.Quarantined, rep.Rebound)
		fmt.Printf("processes that exited by themselves (started again): %d\n", len(rep.Exits))
		fmt.Printf("converged %s after the churn, the kills, the outage and the partitions ended, %s after the last heal; final: %s\n",
			rep.Converged.Round(100*time.Millisecond), rep.SinceHeal.Round(100*time.Millisecond), rep.Final)
	}
	fmt.Printf("total %s\n", time.Since(start).Round(time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}
