// Command demo runs the Hostfleet demo (make demo).
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
	"github.com/hostfleet/hostfleet/e2e/programs/demo"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding hostfleet-hub and hostfleet-agent")
	exit := flag.Bool("exit-when-ready", false, "stop once every claim is Ready")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long claims may take to go Ready")
	dir := flag.String("dir", planes.CacheDir("demo"), "kubeconfigs and logs (emptied first)")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	if err := os.RemoveAll(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	absBin, _ := filepath.Abs(*bin)
	err := demo.Run(ctx, demo.Options{Bin: absBin, Dir: *dir, Out: os.Stdout, ExitWhenReady: *exit, Timeout: *timeout})
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
