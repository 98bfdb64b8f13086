// Command hostfleet-hub runs the hub controllers: tenant registration, claim
// scheduling, the admission policies and the hostfleet-agent add-on manager.
package main

import (
	"github.com/hostfleet/hostfleet/hub/app"
	"github.com/hostfleet/hostfleet/internal/command"
)

func main() { command.Main("hub", app.NewOptions(), app.Run) }
