// Package app is the hostfleet-hub program: its Options and Run, which runs
// the hub controllers in one controller-runtime manager.
package app
