// Package app builds the hostfleet-operator's controller manager from its
// flags.
package app
