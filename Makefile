# Hostfleet. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

export HOSTFLEET_CACHE ?= $(HOME)/.cache/hostfleet
TOOLS := hack/tools.sh
CONTROLLER_GEN = $(shell $(TOOLS) --print-bin controller-gen)
STATICCHECK = $(shell $(TOOLS) --print-bin staticcheck)
BIN := bin
# VERSION is stamped into the binaries and names the images and the plugin:
# a release's tag (make images VERSION=v0.1.0), else what git describes.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# One build configuration for everything but the race detector and the
# fuzzer: the images' (CGO_ENABLED=0, -trimpath). The tests, the programs
# they build, go vet and staticcheck share one compile of every
# dependency; -race needs cgo and compiles its own.
export CGO_ENABLED ?= 0
export GOFLAGS ?= -trimpath
# -vet=off: make lint has vetted every package already. -timeout bounds a
# package: the slowest take 12-13 minutes in CI, and the chaos package ran
# past 20 on a machine loaded past 40.
GO_TEST_FLAGS ?= -count=1 -timeout 30m -vet=off
# Packages tested with the race detector in `make test` (the rest run without
# it: -race costs CI more time than it has on the end-to-end suites).
# agent/binder is pure and runs on one goroutine: its property test (10 000
# event sequences) costs ten times as much under -race, for nothing.
# agent/app's tests parse flags on one goroutine, and its imports (OCM's
# add-on framework, every client) are a quarter of a cold race build.
RACE_PKGS ?= $(filter-out %/agent/binder %/agent/app,$(shell hack/unit-packages.sh)) ./hub/scheduler/ ./hub/tenant/ ./agent/inventory/

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

.PHONY: tools
tools: ## Build every tool the tests need into $(HOSTFLEET_CACHE) (minutes the first time, seconds after).
	$(TOOLS) envtest kube-controller-manager kubectl node baremetal-operator upstreambind controller-gen staticcheck kustomize helm shellcheck ipmi prometheus ocm clusteradm

.PHONY: build
build: ## Build the binaries into bin/ (the hub, the agent, the operator and kubectl-hostfleet).
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/ ./agent/cmd/... ./hub/cmd/... ./operator/cmd/...

.PHONY: plugin
plugin: ## kubectl-hostfleet for linux and darwin on amd64 and arm64 into bin/plugin/: archives and the krew manifest (docs/kubectl.md).
	go run ./hack/krew -out $(BIN)/plugin -version "$(VERSION)"

.PHONY: generate
generate: ## Generate deepcopy code, and docs/troubleshooting.md from hub/api/advice.
	$(TOOLS) controller-gen
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./hub/api/... paths=./operator/api/...
	go run ./hack/troubleshooting docs/troubleshooting.md

.PHONY: manifests
manifests: ## Generate our CRDs (the hub's, the operator's), vendor the upstream metal3 and OCM CRDs into manifests/crds, copy the flow schemas to deploy/flowcontrol.
	$(TOOLS) controller-gen
	$(CONTROLLER_GEN) crd paths=./hub/api/... output:crd:artifacts:config=manifests/crds/hostfleet
	$(CONTROLLER_GEN) crd paths=./operator/api/... output:crd:artifacts:config=manifests/crds/operator
	cp manifests/flowcontrol/flowcontrol.yaml deploy/flowcontrol/flowcontrol.yaml
	hack/helm-chart.sh
	hack/vendor-crds.sh

.PHONY: verify
verify: ## Fail when generated code, CRDs, the Helm chart or go.mod/go.sum are stale, a build output is tracked, the parts import each other or the README's layout is out of date (changes nothing).
	hack/verify.sh

.PHONY: lint
lint: ## gofmt, go vet, staticcheck (also with the e2ekind tag: the kind suite builds and is linted here) and shellcheck.
	$(TOOLS) staticcheck shellcheck
	@if [[ -n "$$(gofmt -l .)" ]]; then gofmt -l .; echo "run gofmt -w on the files above"; exit 1; fi
	go vet ./...
	go vet -tags e2ekind ./e2e/...
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags e2ekind ./e2e/...
	shellcheck hack/*.sh .ci/run

.PHONY: images
IMAGE_ARCH ?= amd64,arm64
images: ## The hub, agent and operator images into bin/images: OCI layouts (linux/amd64 and arm64; IMAGE_ARCH) and docker tarballs, no container engine.
	go run ./hack/images -out $(BIN)/images -version "$(VERSION)" -arch $(IMAGE_ARCH)

.PHONY: test-images
test-images: ## The images for this machine's architecture only: what the end-to-end tests run.
	$(MAKE) images IMAGE_ARCH=$$(go env GOARCH)

# lint runs beside the tests (its output follows theirs): it only reads
# the tree. verify runs first: it regenerates files the tests read.
# The slowest packages first: go test starts packages in the order given,
# TEST_P at a time, so the longest do not start last. The race-detector
# packages run beside them (their output follows). Every fuzz target runs
# as a test on its corpus (its seeds and testdata/fuzz) like any other;
# make fuzz explores beyond it: an instrumented build of every dependency,
# a third of a cold run's compiling, is not in make test. hack/testreport prints go test's lines from its
# JSON, then the ten slowest tests, and writes every package's and test's
# seconds to bin/test-times.tsv; the JSON itself (every test's log) stays
# in bin/test-run until the next run. Test binaries, and the
# programs tests build, are linked without a symbol table or DWARF
# (-ldflags=-s): a third less linking; stack traces and race reports keep
# their names and lines.
SLOW_PKGS := ./e2e/suites/local/ ./e2e/suites/forwarding/ ./e2e/programs/chaos/ ./agent/claim/ ./agent/cmd/hostfleet-agent/ ./e2e/programs/demo/ \
	./e2e/suites/capi/ ./hub/cmd/hostfleet-hub/ ./e2e/harness/planes/ ./agent/bmcdriver/ ./operator/controller/ ./e2e/suites/monitoring/ \
	./hub/kubectl/ ./hub/forwarder/ ./agent/nodelabels/
TEST_P ?= 4
.PHONY: test
test: verify tools test-images ## Everything CI runs: verify, lint, unit, integration and end-to-end tests on real control planes (root); the slowest ten tests at the end.
	go build -o $(BIN)/testreport ./hack/testreport
	out=$(BIN)/test-run; rm -rf "$$out"; mkdir -p "$$out"; \
	$(MAKE) --no-print-directory lint >"$$out/lint.log" 2>&1 & lintpid=$$!; \
	export KUBEBUILDER_ASSETS="$$($(TOOLS) --print-assets)" HOSTFLEET_BMO="$$($(TOOLS) --print-bmo)" GOFLAGS="-ldflags=-s $${GOFLAGS:-}"; \
	CGO_ENABLED=1 go test -json $(GO_TEST_FLAGS) -race $(RACE_PKGS) >"$$out/race.json" 2>&1 & racepid=$$!; \
	rc=0; go test -json $(GO_TEST_FLAGS) -p $(TEST_P) $$(go list $(SLOW_PKGS); go list ./... | grep -vxF -f <(go list $(SLOW_PKGS) $(RACE_PKGS))) 2>&1 | \
		tee "$$out/main.json" | $(BIN)/testreport -summary=false || rc=$$?; \
	wait $$racepid || rc=$$?; \
	echo "with the race detector:"; $(BIN)/testreport -summary=false "$$out/race.json" || rc=$$?; \
	if ! wait $$lintpid; then rc=1; echo "make lint failed:"; fi; tail -n 30 "$$out/lint.log"; \
	$(BIN)/testreport -quiet -times $(BIN)/test-times.tsv "$$out/main.json" "$$out/race.json" || rc=$$?; exit $$rc

# make test-versions: the oldest Kubernetes the docs claim and the newest.
OLDEST_KUBE ?= v1.30.14
NEWEST_KUBE ?= v1.37.2

.PHONY: test-versions
test-versions: tools ## The admission policies and webhook, the isolation suite, the operator's install and a claim bound by the agent's binary, on the control planes of the oldest Kubernetes the docs claim (OLDEST_KUBE) and the newest (NEWEST_KUBE).
	for v in $(OLDEST_KUBE) $(NEWEST_KUBE); do \
		KUBE_VERSION=$$v $(TOOLS) envtest kube-controller-manager; \
		export KUBE_VERSION=$$v KUBEBUILDER_ASSETS="$$(KUBE_VERSION=$$v $(TOOLS) --print-assets)" HOSTFLEET_BMO="$$($(TOOLS) --print-bmo)"; \
		echo "== control planes: $$("$$KUBEBUILDER_ASSETS/kube-apiserver" --version)"; \
		go test $(GO_TEST_FLAGS) ./hub/admission/ ./e2e/suites/isolation/; \
		go test $(GO_TEST_FLAGS) -run '^TestBinaryBindsClaim$$' ./agent/cmd/hostfleet-agent/; \
		go test $(GO_TEST_FLAGS) -run '^TestDefaultMode$$' ./operator/controller/; \
	done

.PHONY: fuzz
FUZZTIME ?= 50000x
fuzz: ## Every Go fuzz target for FUZZTIME each (default 50000x: a count of inputs, not a duration: golang/go#75804): the pure decisions and the parsers; a failing input lands in the package's testdata/fuzz, which make test replays.
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

.PHONY: test-unit
test-unit: ## Only the tests that start no process (no control plane, no emulator): under a minute.
	go test $(GO_TEST_FLAGS) $$(hack/unit-packages.sh)

.PHONY: e2e-local
e2e-local: test-images ## The real OCM flow on local planes with real nodes (kubelet, containerd), every pod from its image: clusteradm init/join (Default and Hosted), the add-on enabled, IPMI from the agent's image, claims Ready, teardown (root).
	$(TOOLS) envtest kube-controller-manager node baremetal-operator ocm clusteradm kustomize ipmi
	KUBEBUILDER_ASSETS="$$($(TOOLS) --print-assets)" HOSTFLEET_BMO="$$($(TOOLS) --print-bmo)" \
		go test $(GO_TEST_FLAGS) -v ./e2e/harness/nodes/ ./e2e/suites/local/

.PHONY: e2e-kind
e2e-kind: images ## The same scenarios as e2e-local on four kind clusters (needs kind and a container engine; not run by make test): see docs/e2e-kind.md.
	$(TOOLS) baremetal-operator ocm clusteradm kustomize ipmi
	HOSTFLEET_BMO="$$($(TOOLS) --print-bmo)" go test -tags e2ekind -count=1 -timeout 60m -v ./e2e/suites/kind/

.PHONY: demo
demo: build ## Local hub, three infrastructure clusters and a workload cluster, hub and agents running, a tenant's claims going Ready (Ctrl-C stops it).
	$(TOOLS) envtest kube-controller-manager baremetal-operator ipmi ocm
	go build -o $(BIN)/hostfleet-demo ./e2e/programs/demo/cmd
	KUBEBUILDER_ASSETS="$$($(TOOLS) --print-assets)" HOSTFLEET_BMO="$$($(TOOLS) --print-bmo)" $(BIN)/hostfleet-demo --bin $(BIN)

.PHONY: chaos
chaos: build ## Churn 2000 claims over 500 BMC-driven hosts while the hub and agents are killed and the hub API server stops; then check nothing was lost.
	$(TOOLS) envtest
	go build -o $(BIN)/hostfleet-chaos ./e2e/programs/chaos/cmd
	KUBEBUILDER_ASSETS="$$($(TOOLS) --print-assets)" $(BIN)/hostfleet-chaos --bin $(BIN) $(CHAOS_FLAGS)

.PHONY: bench
bench: tools ## Benchmarks on real control planes, each printed beside a baseline measured in the same run.
	go build -o $(BIN)/hostfleet-bench ./e2e/programs/bench
	cp "$$($(TOOLS) --print-bin upstreambind)" $(BIN)/upstreambind
	KUBEBUILDER_ASSETS="$$($(TOOLS) --print-assets)" $(BIN)/hostfleet-bench -n $${BENCH_N:-1000} -hardware

.PHONY: bench-scale
bench-scale: tools ## One hub on a core of its own, the real agent for 100 then 1000 clusters × 10 hosts in one process on the other: latencies, late placements, hub CPU per claim (idle subtracted) and memory, requests per claim.
	go build -o $(BIN)/hostfleet-bench ./e2e/programs/bench
	go build -o $(BIN)/hostfleet-hub ./hub/cmd/hostfleet-hub
	KUBEBUILDER_ASSETS="$$($(TOOLS) --print-assets)" $(BIN)/hostfleet-bench -only scale $(SCALE_FLAGS)

.PHONY: bench-storm
bench-storm: tools ## The bench-scale fleet of 1000 clusters; the hub API server restarted with every agent connected, without then with the flow schemas: a tenant's and the hub's latencies.
	go build -o $(BIN)/hostfleet-bench ./e2e/programs/bench
	go build -o $(BIN)/hostfleet-hub ./hub/cmd/hostfleet-hub
	KUBEBUILDER_ASSETS="$$($(TOOLS) --print-assets)" $(BIN)/hostfleet-bench -only storm $(STORM_FLAGS)

.PHONY: clean
clean: ## Remove bin/ (the tool cache stays; delete $(HOSTFLEET_CACHE) to rebuild it).
	rm -rf $(BIN)
