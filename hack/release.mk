# Release targets, included by the top-level Makefile.
#
#   make dist          reproducible archives for every platform, SHA256SUMS, the
#                      rendered krew manifest and the krew index to publish
#                      (krew-index/plugins/apf.yaml), in $(DIST)
#   make test-release  checks $(DIST) with krew's published types and krew-index's
#                      rules, rebuilds the same commit elsewhere compiling every
#                      package again and compares the bytes (every platform; make
#                      test builds and checks linux/amd64 alone: DIST_PLATFORMS,
#                      REPRO_PLATFORMS), installs the plugin with the real
#                      krew and kubectl, and upgrades it through a local copy of
#                      the index
#
# The release tooling is a Go module of its own (hack/krew): sigs.k8s.io/krew's
# dependencies would clash with k8s.io/kubernetes in the hack module.

GO         ?= go
TEST_FLAGS ?= -count=1 -timeout 50m
DIST       ?= dist
DIST_ABS   := $(abspath $(DIST))
# The platforms make dist builds (comma-separated os/arch; empty: all six,
# a release). make test sets linux/amd64: each other platform is a cold
# cross-compile of every package, about 260 CPU seconds on 2 cores, five of
# them two fifths of a cold make test's CPU. Its dist/krew.yaml then offers
# linux/amd64 alone (release.RenderPartialManifest) and is no release's.
DIST_PLATFORMS ?=
# The platforms whose build TestDistReproducible repeats, compiling every
# package again (comma-separated os/arch; empty: all six). make test sets
# linux/amd64.
REPRO_PLATFORMS ?=
# 1: TestDistReproducible compiles every package of its builds again (go
# build -a), which also checks that the compiler's output is reproducible;
# 0: its builds take the compiled objects from the build cache and link,
# stamp and pack afresh in directories of their own. make test sets 0: the
# cold rebuild of linux/amd64 is about 250 CPU seconds of a cold make test.
REPRO_REBUILD ?= 1

.PHONY: dist
dist: ## Reproducible release archives for every platform, SHA256SUMS, dist/krew.yaml and the krew index dist/krew-index/.
	@# Only what an earlier dist wrote, so a stale version's archives do not linger.
	rm -f $(DIST_ABS)/kubectl-apf_*.tar.gz $(DIST_ABS)/SHA256SUMS $(DIST_ABS)/krew.yaml
	rm -rf $(DIST_ABS)/krew-index
	$(NICE) $(GO) -C hack/krew run ./cmd/dist -repo $(CURDIR) -out $(DIST_ABS) $(if $(DIST_PLATFORMS),-platforms $(DIST_PLATFORMS))

# The tools the release tests run, built (or found in the cache) before
# them, beside the other steps of make test.
.PHONY: krew-tools
krew-tools:
	$(NICE) hack/bin.sh krew >/dev/null
	$(NICE) hack/bin.sh validate-krew-manifest >/dev/null

.PHONY: test-release
test-release: dist krew-tools bin-kubectl ## Check dist/ against krew's rules, prove it reproducible (each platform compiled again from scratch), install it through krew and kubectl, upgrade it through the index.
	KUBECTL=$$(hack/bin.sh kubectl) KUBECTL_APF_DIST=$(DIST_ABS) KUBECTL_APF_REPO=$(CURDIR) KUBECTL_APF_REPRO_PLATFORMS=$(REPRO_PLATFORMS) KUBECTL_APF_REPRO_REBUILD=$(REPRO_REBUILD) \
		$(NICE) $(GO) -C hack/krew test $(TEST_FLAGS) ./...
