# kubectl-apf — see README.md. Everything CI runs is "make test".
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

BIN        ?= bin
CLUSTER    ?= .cluster
GO         ?= go
# Like make dist: a v-prefixed tag as it is, else v0.0.0-<commit>.
VERSION    ?= $(shell (git describe --tags --always --dirty 2>/dev/null || echo dev) | sed 's/^\([^v]\)/v0.0.0-\1/')
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BUILD_DATE ?= $(shell git log -1 --format=%cI 2>/dev/null || echo unknown)
LDFLAGS    := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildDate=$(BUILD_DATE)
TEST_FLAGS ?= -count=1 -timeout 50m
# Every go command here builds as hack/bin.sh builds the test binaries
# (kube-apiserver, etcd, Prometheus, VictoriaLogs) and as the release is
# built: without cgo, with -trimpath, and without DWARF (-dwarf=false: every
# binary of theirs is linked with -s -w, which drops the debug information
# anyway; the compiler then does not make it, for about 5-7% less CPU and the
# same machine code). The build cache then holds one compile of each package
# they share (the standard library and the modules at the same version)
# instead of one per set of flags, and the release's linux/amd64 build links
# what go test compiled. The test binaries have no DWARF either: their stack
# traces are whole, but a debugger needs go test run without these flags.
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(GOFLAGS) -trimpath -gcflags=all=-dwarf=false)

.PHONY: build
build: ## Build bin/kubectl-apf.
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/kubectl-apf ./cmd/kubectl-apf
	cp kubectl_complete-apf $(BIN)/ 2>/dev/null || true

.PHONY: binaries
binaries: ## Build (or reuse from the cache) kube-apiserver v1.37.1, etcd, Prometheus, promtool and VictoriaLogs for the tests and the demo.
	hack/bin.sh kube-apiserver >/dev/null
	hack/bin.sh etcd >/dev/null
	hack/bin.sh prometheus >/dev/null
	hack/bin.sh promtool >/dev/null
	hack/bin.sh victoria-logs >/dev/null

# make test runs in two lines at once, each step's output printed whole when
# it ends. The path to the e2e tests builds kube-apiserver, etcd, Prometheus
# (then promtool and VictoriaLogs) side by side, and the e2e tests start as
# soon as those are built. gofmt, the go mod tidy check and go vet run beside
# the builds, go vet under $(NICE): kube-apiserver, the longest build and the
# one the e2e tests wait for, keeps the CPU, and go vet finds most of the
# packages it shares with the builds compiled. The package tests (go test,
# which does not vet again) follow go vet, under $(NICE) beside the e2e
# tests. Beside them, after go vet, one chain under
# $(NICE) runs staticcheck, hack/apfvalidation and the release steps (make
# test-release: dist, the krew tools, kubectl, the release tests), one step at
# a time: it takes the CPU the path leaves, above all while
# the e2e tests wait on the control plane, and never slows the path or the e2e
# tests down (the chain's sub-make shares make test's job slots, one or two).
# Builds that compile the same packages seldom run at once
# (concurrent go commands do not share a compilation): kubectl waits for
# kube-apiserver (hack/bin.sh's lock), promtool and VictoriaLogs follow
# Prometheus, the package tests follow go vet, and go vet, under $(NICE),
# takes little CPU until the builds beside it end.
NICE ?=
# The garbage collector's target for go vet and staticcheck, and for the
# builds of hack/bin.sh (which sets the same unless GOGC is set): they then
# collect less often, for less CPU and the same output (a cold etcd build 140
# CPU seconds instead of 153, the same binary). Never exported: the tests'
# binaries, and the kube-apiservers they start, run with Go's default.
BUILD_GOGC ?= 400

.PHONY: test
test: ## Everything CI runs: lint, unit tests, fuzz seeds, e2e tests on the local control plane (with the what-if check of quiet, borrowing and lists), hack/apfvalidation, release tests of linux/amd64 (its archive, reproducibility, krew install and upgrade; make test-release builds and checks all six platforms).
	$(MAKE) --no-print-directory -j6 --output-sync=target test-steps DIST_PLATFORMS=linux/amd64 REPRO_PLATFORMS=linux/amd64 REPRO_REBUILD=0 NICE="nice -n 10"

.PHONY: test-steps test-go test-go-e2e test-go-pkgs test-beside bin-kube-apiserver bin-etcd bin-prometheus bin-kubectl
test-steps: test-go test-beside

# The e2e tests (about twelve minutes, a third of it the what-if check)
# start as soon as the binaries they run are built, without waiting for go
# vet, beside the package tests, instead of after them as the last package of
# one go test ./... would. The package tests run under $(NICE): at the same
# priority they slowed the e2e tests by about 45 s.
test-go: test-go-e2e test-go-pkgs
test-go-e2e: bin-kube-apiserver bin-etcd bin-prometheus
	$(GO) test -vet=off $(TEST_FLAGS) ./test/e2e/
test-go-pkgs: bin-kube-apiserver bin-etcd bin-prometheus lint-vet
	$(NICE) $(GO) test -vet=off $(TEST_FLAGS) $$($(GO) list ./... | grep -v '/test/e2e$$')

# One job of make test's, so that the path to go test always has its own.
# staticcheck reads the export data go vet compiled: it starts after it.
test-beside: lint-vet
	$(MAKE) --no-print-directory staticcheck
	$(NICE) $(GO) -C hack/apfvalidation test $(TEST_FLAGS) ./...
	$(if $(wildcard hack/release.mk),$(MAKE) --no-print-directory test-release)

bin-kube-apiserver bin-etcd:
	hack/bin.sh $(@:bin-%=%) >/dev/null
bin-prometheus:
	hack/bin.sh prometheus >/dev/null
	hack/bin.sh promtool >/dev/null
	hack/bin.sh victoria-logs >/dev/null
bin-kubectl: bin-kube-apiserver
	$(NICE) hack/bin.sh kubectl >/dev/null

# The clock-ahead run: every test, with the plugin's clock (its Options'
# Clock, in the test binaries and in the plugin the e2e tests build) a year
# ahead of the machine's. A test that passes here does not depend on
# today's date: its windows over fixtures come from the fixtures.
CLOCK_AHEAD ?= 8760h
.PHONY: test-clock-ahead
test-clock-ahead: binaries ## Every test with the plugin's clock a year ahead (CLOCK_AHEAD=8760h): finds the tests that depend on today's date (not part of make test).
	KUBECTL_APF_CLOCK_AHEAD=$(CLOCK_AHEAD) $(GO) test -vet=off $(TEST_FLAGS) \
		-ldflags "-X github.com/kubectl-apf/kubectl-apf/cmd/kubectl-apf.clockAhead=$(CLOCK_AHEAD) -X main.clockAhead=$(CLOCK_AHEAD)" ./...

.PHONY: unit
unit: ## Unit tests only (no control plane).
	$(GO) test -short $(TEST_FLAGS) ./...

.PHONY: e2e
e2e: binaries ## End-to-end tests on the local control plane.
	$(GO) test $(TEST_FLAGS) ./test/e2e/...

.PHONY: test-versions
test-versions: binaries ## The version e2e against real kube-apiservers 1.29, 1.31, 1.33, 1.35 (built by hack/kube-old; not in make test). CAPTURE=1 rewrites their fixtures.
	hack/test-versions.sh $(RELEASES)
.PHONY: bench-history
bench-history: binaries ## Benchmark "explain 429 --since 30d" on 200 apiservers x 30 days in a real Prometheus against a naive raw fetch (minutes; not part of make test).
	KUBECTL_APF_BENCH_HISTORY=1 $(GO) test -run '^$$' -bench BenchmarkExplain429Scale -benchtime 1x -timeout 60m -v ./pkg/promfetch

.PHONY: bench-vlogs
bench-vlogs: binaries ## Benchmark "explain 429 --victorialogs --since 24h" on a generated fleet day (3 clusters x 3 apiservers, 20 million audit events; KUBECTL_APF_BENCH_VLOGS_EVENTS and _CLUSTERS change them) in a real VictoriaLogs against a raw pull and the file reader (tens of minutes and about 15 GB of disk at the default size; not part of make test).
	KUBECTL_APF_BENCH_VLOGS=1 $(GO) test -run '^$$' -bench BenchmarkFleetDay -benchtime 1x -timeout 180m -v ./pkg/vlogs

.PHONY: ablation
ablation: ## The ablation study of simulate's calibration: every kept recording predicted with every rule of the model, then without each in turn; a rule stays only where its removal makes the held-out recordings worse, or, for a rule that reads what httplog records, takes the executions the audit log alone gives the replay further from httplog + audit's, request by request (about twenty minutes on 2 cores; not part of make test).
	KUBECTL_APF_ABLATION=1 $(GO) test -count=1 -timeout 60m -run TestEveryRuleEarnsItsPlace -v ./pkg/simulate

.PHONY: e2e-tune
e2e-tune: binaries ## tune's proof on a real server alone (make test runs it): record a fresh overload (a controller starved by two users' storms of LISTs), run tune, apply its first candidate to a fresh control plane and re-run the load (about a minute and a half; needs root and the cgroup v1 cpu controller).
	$(GO) test $(TEST_FLAGS) -timeout 30m -v -run TestTuneFirstCandidateHoldsInARerun ./test/e2e/

.PHONY: e2e-whatif
e2e-whatif: binaries ## Check simulate's what-ifs: re-run each scenario's seeded load on each of its changed configurations, every scenario (about 37 minutes when measured, before a control after each scenario's re-runs added about a minute per scenario; up to an hour when scenarios are recorded again; needs root and the cgroup v1 cpu controller; make test runs the first what-if of quiet, borrowing and lists).
	KUBECTL_APF_WHATIF=1 $(GO) test $(TEST_FLAGS) -timeout 120m -v -run TestSimulateWhatIfMatchesRerun ./test/e2e/

.PHONY: e2e-whatif-evidence
e2e-whatif-evidence: binaries ## The crowded what-ifs predicted from the server's full logs with the evidence users hold: a real Prometheus scraping it every second (--prometheus) and a dump bundle --watch, beside the bundle (about ten minutes a scenario; needs root and the cgroup v1 cpu controller).
	KUBECTL_APF_WHATIF_SCENARIOS=crowded-30,crowded-60,crowded-95,crowded-95-seed2 KUBECTL_APF_WHATIF_EVIDENCE=prometheus,watch $(GO) test $(TEST_FLAGS) -timeout 120m -v -run TestSimulateWhatIfMatchesRerun ./test/e2e/

.PHONY: record-simulate
record-simulate: binaries ## Record the overload fixtures under testdata/simulate/recordings (several minutes; needs root and the cgroup v1 cpu controller, which pin the server's CPU or, for crowded, share it with the load's client processes).
	for s in quiet starved borrowing lists crowded; do $(GO) run ./internal/testharness/cmd/apf-record -scenario $$s -seed 1 -out testdata/simulate/recordings/$$s; done
	for s in borrowing-three timeouts; do $(GO) run ./internal/testharness/cmd/apf-record -scenario $$s -seed 1 -whatif=false -out testdata/simulate/recordings/$$s; done
	for s in crowded-30 crowded-60 crowded-95; do $(GO) run ./internal/testharness/cmd/apf-record -scenario $$s -seed 1 -all-whatifs -out testdata/simulate/recordings/$$s; done
	$(GO) run ./internal/testharness/cmd/apf-record -scenario crowded-95 -seed 2 -all-whatifs -out testdata/simulate/recordings/crowded-95-seed2
	for n in 6 7 8 9 10 11; do $(GO) run ./internal/testharness/cmd/apf-record -scenario noisy-pages-heavy -seed $$n -all-whatifs -out testdata/simulate/recordings/noisy-pages-heavy-seed$$n; done

.PHONY: golden
golden: ## Rewrite the golden files: go test -update over every package whose tests use internal/testharness/golden. Review the diff.
	pkgs=$$($(GO) list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | \
		awk '{ for (i = 2; i <= NF; i++) if ($$i == "github.com/kubectl-apf/kubectl-apf/internal/testharness/golden") { print $$1; break } }'); \
	$(GO) test -count=1 $$pkgs -update

.PHONY: lint lint-vet staticcheck
lint: lint-vet staticcheck ## gofmt, go mod tidy (checked, not applied), go vet and staticcheck (pinned in hack/tools/go.mod).

lint-vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod and go.sum are not tidy (the diff above): run go mod tidy"; exit 1; }
	GOGC=$(BUILD_GOGC) $(NICE) $(GO) vet ./...

staticcheck:
	GOGC=$(BUILD_GOGC) $(NICE) $(GO) -C hack/tools build -o $(CURDIR)/$(BIN)/staticcheck honnef.co/go/tools/cmd/staticcheck
	GOGC=$(BUILD_GOGC) $(NICE) $(BIN)/staticcheck ./...

.PHONY: cluster-up
cluster-up: binaries ## Start etcd and kube-apiserver on 127.0.0.1; writes $(CLUSTER)/kubeconfig.
	$(GO) run ./internal/testharness/cmd/apf-devcluster up -dir $(CLUSTER)

.PHONY: cluster-down
cluster-down: ## Stop the local control plane and remove its data.
	$(GO) run ./internal/testharness/cmd/apf-devcluster down -dir $(CLUSTER)

.PHONY: load
load: ## Send bounded bursts to the local control plane so that APF queues and rejects.
	$(GO) run ./internal/testharness/cmd/apf-devcluster load -dir $(CLUSTER)

.PHONY: demo
demo: build binaries ## Start the local control plane with background load and open the plugin's live view.
	$(GO) build -o $(BIN)/apf-devcluster ./internal/testharness/cmd/apf-devcluster
	hack/demo.sh $(BIN) $(CLUSTER)

.PHONY: clean
clean:
	rm -rf $(BIN) dist

-include hack/release.mk

.PHONY: help
help:
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'
