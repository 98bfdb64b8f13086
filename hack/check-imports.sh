#!/usr/bin/env bash
# check-imports.sh fails when the product's parts import each other: the hub,
# the agent and the operator share only the APIs under hub/api, the runtime
# code under internal/ (one package per concern) and the embedded manifests;
# no product package imports the test harness, the emulators or the
# programs under e2e/; internal/ imports none of the parts but hub/api; and
# hub/api is only the API and the parsers of the annotations it names:
# nothing of internal/, no controller-runtime but the scheme builder
# metal3's API types register with.
set -euo pipefail
cd "$(dirname "$0")/.."

mod=$(go list -m)
bad=0
# deny <packages> <forbidden import prefix>... [-- <allowed import prefix>...]
deny() {
	local pkgs=$1
	shift
	local forbidden=() allowed=() dep f a ok
	while [[ $# -gt 0 && $1 != -- ]]; do forbidden+=("${mod}/$1"); shift; done
	[[ $# -gt 0 ]] && shift
	while [[ $# -gt 0 ]]; do allowed+=("${mod}/$1"); shift; done
	while IFS= read -r dep; do
		for f in "${forbidden[@]}"; do
			[[ ${dep} == "${f}" || ${dep} == "${f}"/* ]] || continue
			ok=0
			for a in "${allowed[@]}"; do [[ ${dep} == "${a}" || ${dep} == "${a}"/* ]] && ok=1; done
			if ((!ok)); then
				echo "./${pkgs} depends on ${dep#"${mod}"/}: $(go list -deps -f '{{.ImportPath}} {{join .Imports " "}}' "./${pkgs}" | grep -F " ${dep}" | cut -d' ' -f1 | sed "s#${mod}/##" | head -3 | tr '\n' ' ')"
				bad=1
			fi
		done
	done < <(go list -deps "./${pkgs}")
}

deny hub/... agent operator e2e
deny agent/... hub operator e2e -- hub/api
deny operator/... hub agent e2e -- hub/api
deny internal/... hub agent operator e2e -- hub/api
# The API and the parsers of its annotations stand alone: no runtime code.
deny hub/api/... internal agent operator e2e
while IFS= read -r dep; do
	case "${dep}" in
	sigs.k8s.io/controller-runtime/pkg/scheme) ;;
	sigs.k8s.io/controller-runtime/*)
		echo "./hub/api depends on ${dep}: the API packages hold types, names and advice; runtime code goes to internal/"
		bad=1
		;;
	esac
done < <(go list -deps ./hub/api/...)
if ((bad)); then
	echo "the hub, the agent and the operator share only hub/api, internal/ and manifests: move the shared piece there"
	exit 1
fi
echo "check-imports: hub, agent and operator share only hub/api, internal/ and manifests; hub/api is API only"
