#!/usr/bin/env bash
# Usage: hack/test-versions.sh [v1.29 v1.31 ...]   (make test-versions)
#
# Runs the version e2e of test/e2e against a real kube-apiserver of each older
# release, built (or found in the cache) by hack/kube-old/build.sh: explain
# checked against the X-Kubernetes-PF-* headers, dump/top/explain 429 under
# load, lint and capacity on the release's defaults, LIST seats against the
# server's logged apf_iseats, a simulate recording and
# its replay; then pkg/engine's TestReleaseDifferential against hack/apf-oracle
# for every k8s.io/apiserver release from v0.29 to v0.37. With CAPTURE=1 the tests also write their real captures (dumps,
# /metrics idle and under load, the release's default objects) into testdata/,
# named by the server's /version. Releases are built one at a time.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
releases=("$@")
[ ${#releases[@]} -gt 0 ] || releases=(v1.29 v1.31 v1.33 v1.35)
tests=${VERSION_TESTS:-'^(TestCaptureReleaseDefaults|TestPFHeadersNameExpectedObjects|TestExplainAgreesWithServerHeaders|TestExplainBinaryAgreesWithServer|TestDumpTopWhoisUnderLoad|TestExplain429UnderLoad|TestSimulateReplaysRecordedLoad|TestListSeatsAgreeWithServer|TestLintClusterDefaults|TestCapacityMatchesServerMetrics)$'}
capture=()
[ "${CAPTURE:-}" = 1 ] && capture=(-capture-fixtures "$root/testdata")
etcd=$(hack/bin.sh etcd)
status=0
for rel in "${releases[@]}"; do
	bin=$(hack/kube-old/build.sh "$rel")
	echo "=== $rel: $bin"
	start=$(date +%s)
	if KUBE_APISERVER_BIN=$bin ETCD_BIN=$etcd go test -count=1 -timeout 30m ./test/e2e -run "$tests" -v "${capture[@]}" \
		> >(tee "${TMPDIR:-/tmp}/kubectl-apf-test-versions-$rel.log" | grep -E '^(=== RUN|--- |PASS|FAIL|ok )|agreement:|LIST seats from|replayed|wrote ') ; then
		echo "=== $rel: PASS in $(($(date +%s) - start))s"
	else
		echo "=== $rel: FAIL in $(($(date +%s) - start))s (full log: ${TMPDIR:-/tmp}/kubectl-apf-test-versions-$rel.log)"
		status=1
	fi
done
# The engine against each k8s.io/apiserver release's own code (hack/apf-oracle,
# built once per release and cached): ORACLE_RELEASES=29,31 narrows it, 0 skips.
oracles=${ORACLE_RELEASES:-all}
if [ "$oracles" != 0 ]; then
	echo "=== differential: k8s.io/apiserver releases $oracles"
	if ! go test -count=1 -timeout 60m ./pkg/engine -run '^TestReleaseDifferential$' -v -releases "$oracles" | grep -E '^(\s*--- |PASS|FAIL|ok )|identical to the engine|engine_test|release_diff_test'; then
		status=1
	fi
fi
exit $status
