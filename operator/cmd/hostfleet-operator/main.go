// Command hostfleet-operator installs, upgrades and uninstalls Hostfleet hubs
// from HostfleetHubs (operator.hostfleet.io/v1alpha1), in Default or Hosted
// mode.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/hostfleet/hostfleet/operator/app"
)

func main() {
	o := app.NewOptions()
	o.AddFlags(pflag.CommandLine)
	version := pflag.Bool("version", false, "print the version and exit")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	pflag.CommandLine.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	if *version {
		fmt.Println(app.Version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if errs := o.Validate(); len(errs) > 0 {
		fmt.Fprintln(os.Stderr, errors.Join(errs...))
		os.Exit(2)
	}
	if err := app.Run(ctrl.SetupSignalHandler(), o); err != nil {
		ctrl.Log.Error(err, "operator stopped")
		os.Exit(1)
	}
}
