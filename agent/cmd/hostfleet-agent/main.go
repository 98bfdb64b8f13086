// Command hostfleet-agent binds the hub HostClaims placed on one
// infrastructure cluster to that cluster's BareMetalHosts.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/hostfleet/hostfleet/agent/app"
)

// version is stamped at build time (-ldflags "-X main.version=v0.3.0").
var version = "dev"

func main() {
	o := app.NewOptions()
	o.AddFlags(pflag.CommandLine)
	printVersion := pflag.Bool("version", false, "print the version and exit")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	pflag.CommandLine.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	if *printVersion {
		fmt.Println(version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if errs := o.Validate(); len(errs) > 0 {
		fmt.Fprintln(os.Stderr, errors.Join(errs...))
		os.Exit(2)
	}
	if err := app.Run(ctrl.SetupSignalHandler(), o); err != nil {
		ctrl.Log.Error(err, "agent stopped")
		os.Exit(1)
	}
}
