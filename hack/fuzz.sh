#!/usr/bin/env bash
# fuzz.sh runs every Go fuzz target for FUZZTIME (default 50000x: inputs,
# not seconds: golang/go#75804) each: the
# pure decisions (binder, placement, the forwarder's render and status, the
# BMC driver's power decisions) and the parsers of annotations, addresses,
# conditions and flags. A failing input is written under the package's
# testdata/fuzz/<target>/, where plain `go test` replays it from then on.
# Usage: hack/fuzz.sh [package-pattern]
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-50000x}
# Workers per target (default: one per CPU).
parallel=${FUZZPARALLEL:-$(nproc)}
only=${1:-}
n=0
start=$(date +%s)
while IFS= read -r file; do
	pkg="./$(dirname "${file}")"
	[[ -n ${only} && ${pkg} != *${only}* ]] && continue
	while IFS= read -r target; do
		echo "fuzz: ${pkg} ${target} for ${fuzztime}"
		go test -vet=off -run '^$' -fuzz "^${target}\$" -fuzztime "${fuzztime}" -parallel "${parallel}" "${pkg}" </dev/null >/tmp/fuzz.$$.log 2>&1 || {
			cat /tmp/fuzz.$$.log
			rm -f /tmp/fuzz.$$.log
			echo "fuzz: ${pkg} ${target} failed; the input is in ${pkg}/testdata/fuzz/${target}/"
			exit 1
		}
		n=$((n + 1))
	done < <(grep -oE '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' "${file}" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/')
done < <(git ls-files --cached --others --exclude-standard -- '*_test.go' | xargs grep -l '^func Fuzz' | sort)
rm -f /tmp/fuzz.$$.log
echo "fuzz: ${n} targets, ${fuzztime} each, no failure ($(($(date +%s) - start))s)"
