// Package app is the hostfleet-agent program: its Options (flags, validation)
// and Run, which connects to the hub and to the managed cluster and runs the
// agent's controllers in one controller-runtime manager.
package app
