#!/usr/bin/env bash
# unit-packages.sh lists the packages whose tests start no process: none of
# their test binaries depends on the test harness (control planes, the pod
# runner) or on ipmi_sim, and no test file imports os/exec. `make test-unit`
# runs these; `make test` runs everything.
set -euo pipefail
cd "$(dirname "$0")/.."

mod=$(go list -m)
{
	# Test binaries that link the harness or the IPMI emulator.
	go list -test -f '{{if .ForTest}}{{.ForTest}} {{join .Deps " "}}{{end}}' ./... |
		awk -v m="${mod}" '{for (i = 2; i <= NF; i++) if ($i ~ "^" m "/e2e/(harness|emulators/ipmisim)(/|$)") {print $1; next}}'
	# Tests that run programs themselves.
	go list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
		awk '{for (i = 2; i <= NF; i++) if ($i == "os/exec") {print $1; next}}'
	# Packages of the harness itself.
	go list ./e2e/harness/... ./e2e/suites/...
} | sort -u >"${TMPDIR:-/tmp}/hostfleet-process-packages.$$"
go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... | grep . |
	grep -vxF -f "${TMPDIR:-/tmp}/hostfleet-process-packages.$$" || true
rm -f "${TMPDIR:-/tmp}/hostfleet-process-packages.$$"
