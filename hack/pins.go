//go:build pins

// Package hack pins, in go.mod, the modules of the dependency set that no
// package imports directly (sdk-go, which addon-framework builds on), so that
// the whole set resolves together. The build tag keeps this file out of every
// build; `go mod tidy` still sees its imports.
package hack

import (
	_ "open-cluster-management.io/sdk-go/pkg/patcher"
)
