// Package command is what every Hostfleet binary's main does: flags (its
// Options' and --version, and zap's logging flags), validation (exit 2 with
// everything wrong), logging, and running until SIGTERM (exit 1 on error).
// The hub, the agent and the operator share it as they share hub/api.
package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Version is the release the binary was built from, stamped at build time:
// -ldflags "-X github.com/hostfleet/hostfleet/internal/command.Version=v0.1.0".
var Version = "dev"

// Options are a binary's flags.
type Options interface {
	AddFlags(fs *pflag.FlagSet)
	Validate() []error
}

// Main parses the flags into o, validates them and calls run with a context
// that ends on SIGTERM or SIGINT; name says what stopped in the log.
func Main[O Options](name string, o O, run func(context.Context, O) error) {
	fs := pflag.CommandLine
	o.AddFlags(fs)
	printVersion := fs.Bool("version", false, "print the version and exit")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	fs.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	if *printVersion {
		fmt.Println(Version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if errs := o.Validate(); len(errs) > 0 {
		fmt.Fprintln(os.Stderr, errors.Join(errs...))
		os.Exit(2)
	}
	if err := run(ctrl.SetupSignalHandler(), o); err != nil {
		ctrl.Log.Error(err, name+" stopped")
		os.Exit(1)
	}
}
