// Command hostfleet-operator installs, upgrades and uninstalls Hostfleet hubs
// from HostfleetHubs (operator.hostfleet.io/v1alpha1), in Default or Hosted
// mode.
package main

import (
	"github.com/hostfleet/hostfleet/internal/command"
	"github.com/hostfleet/hostfleet/operator/app"
)

func main() { command.Main("operator", app.NewOptions(), app.Run) }
