//go:build pins

// Package hack pins, in go.mod, the modules of the dependency set that no
// package imports yet (the BMC driver, the add-on manager), so that the whole
// set resolves together from the start. The build tag keeps this file out of
// every build; `go mod tidy` still sees its imports.
package hack

import (
	_ "github.com/bmc-toolbox/bmclib/v2"
	_ "open-cluster-management.io/addon-framework/pkg/addonmanager"
	_ "open-cluster-management.io/sdk-go/pkg/patcher"
)
