# Release targets, included by the top-level Makefile.
#
#   make dist          reproducible archives for every platform, SHA256SUMS and
#                      the rendered krew manifest, in $(DIST)
#   make test-release  checks $(DIST) with krew's published types and krew-index's
#                      rules, rebuilds the same commit elsewhere and compares the
#                      bytes, and installs the plugin with the real krew and kubectl
#
# The release tooling is a Go module of its own (hack/krew): sigs.k8s.io/krew's
# dependencies would clash with k8s.io/kubernetes in the hack module.

GO         ?= go
TEST_FLAGS ?= -count=1 -timeout 50m
DIST       ?= dist
DIST_ABS   := $(abspath $(DIST))

.PHONY: dist
dist: ## Reproducible release archives for every platform, SHA256SUMS and dist/krew.yaml.
	@# Only what an earlier dist wrote, so a stale version's archives do not linger.
	rm -f $(DIST_ABS)/kubectl-apf_*.tar.gz $(DIST_ABS)/SHA256SUMS $(DIST_ABS)/krew.yaml
	$(GO) -C hack/krew run ./cmd/dist -repo $(CURDIR) -out $(DIST_ABS)

.PHONY: test-release
test-release: dist ## Check dist/ against krew's rules, prove it reproducible, install it through krew and kubectl.
	kubectl=$$(hack/bin.sh kubectl); \
	KUBECTL=$$kubectl KUBECTL_APF_DIST=$(DIST_ABS) KUBECTL_APF_REPO=$(CURDIR) \
		$(GO) -C hack/krew test $(TEST_FLAGS) ./...
