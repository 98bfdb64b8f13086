// Command hostfleet-agent binds the hub HostClaims placed on one
// infrastructure cluster to that cluster's BareMetalHosts.
package main

import (
	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/internal/command"
)

func main() { command.Main("agent", app.NewOptions(), app.Run) }
