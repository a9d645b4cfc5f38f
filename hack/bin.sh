#!/usr/bin/env bash
# Usage: hack/bin.sh NAME
#
# Prints the path of a test binary (kube-apiserver, etcd, kubectl, Prometheus,
# promtool, VictoriaLogs, krew and its manifest validator), building it
# first if it is not cached yet. Binaries are cached outside the clone, keyed by
# version and by the hash of the module files, Go version and flags they are built
# from, so that fresh clones (CI's among them) reuse them. Set KUBECTL_APF_CACHE
# to move the cache.
set -euo pipefail

name=${1:?usage: hack/bin.sh kube-apiserver|etcd|kubectl|prometheus|promtool|victoria-logs|krew|validate-krew-manifest}
hack=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${KUBECTL_APF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-apf}
mkdir -p "$cache/bin"

kube_version=v1.37.1
case "$name" in
kube-apiserver | kubectl)
	moddir=$hack
	pkg=k8s.io/kubernetes/cmd/$name
	version=$kube_version
	# The same version stamps a release build sets (hack/lib/version.sh upstream),
	# so that /version and the client's User-Agent say v1.37.1.
	ldflags="-s -w"
	for pkg_version in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg_version.gitVersion=$kube_version -X $pkg_version.gitMajor=1 -X $pkg_version.gitMinor=37"
		ldflags+=" -X $pkg_version.gitTreeState=clean -X $pkg_version.buildDate=1970-01-01T00:00:00Z"
	done
	;;
etcd)
	moddir=$hack/etcd
	pkg=go.etcd.io/etcd/server/v3
	version=$(awk '{for (i = 1; i < NF; i++) if ($i == "go.etcd.io/etcd/server/v3") {print $(i+1); exit}}' "$moddir/go.mod")
	ldflags="-s -w"
	;;
prometheus | promtool)
	# Built from the Prometheus Go module without service discovery (the tests
	# scrape static loopback targets), which keeps the build small.
	moddir=$hack/prometheus
	pkg=github.com/prometheus/prometheus/cmd/$name
	version=$(awk '{for (i = 1; i < NF; i++) if ($i == "github.com/prometheus/prometheus") {print $(i+1); exit}}' "$moddir/go.mod")
	ldflags="-s -w -X github.com/prometheus/common/version.Version=${version#v}"
	tags=remove_all_sd
	;;
victoria-logs)
	# The VictoriaLogs server (single node, or any node of a cluster: the same
	# binary with -storageNode), pure Go (CGO_ENABLED=0 picks its Go zstd).
	moddir=$hack/victorialogs
	pkg=github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs
	version=$(awk '{for (i = 1; i < NF; i++) if ($i == "github.com/VictoriaMetrics/VictoriaLogs") {print $(i+1); exit}}' "$moddir/go.mod")
	ldflags="-s -w -X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=victoria-logs-$version"
	;;
krew | validate-krew-manifest)
	# The release tests' krew and its index validator, at the version
	# hack/krew's go.mod pins. krew reads its own version from the tag
	# (sigs.k8s.io/krew/internal/version), which makes "krew version" honest.
	moddir=$hack/krew
	pkg=sigs.k8s.io/krew/cmd/$name
	version=$(awk '$1 == "sigs.k8s.io/krew" {print $2; exit}' "$moddir/go.mod")
	ldflags="-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$version"
	;;
*)
	echo "hack/bin.sh: unknown binary $name" >&2
	exit 2
	;;
esac

# The build's own flags, the environment's GOFLAGS left out (GOFLAGS= below), so
# that the key names everything the build is made with: the same binary whether
# make (which exports -trimpath and -dwarf=false) or a test helper asks for it.
# No DWARF (-dwarf=false), as the Makefile's go commands build: -s -w drops it
# anyway, and the packages this build shares with theirs are then compiled once.
goflags="-trimpath -buildvcs=false -gcflags=all=-dwarf=false"
key=$( (cat "$moddir/go.mod" "$moddir/go.sum"; go env GOVERSION; echo "$ldflags${tags:+ tags=$tags} $goflags") | sha256sum | cut -c1-12)
# One directory per build, the binary under its plain name (so that, for example,
# kubectl's User-Agent says kubectl/v1.37.1).
out=$cache/bin/$name-$version-$key/$name
if [ ! -x "$out" ]; then
	exec 9>"$cache/bin/.$name.lock"
	flock 9
	if [ ! -x "$out" ]; then
		echo "building $name $version (cached at $out; the first build takes several minutes)" >&2
		mkdir -p "$(dirname "$out")"
		# GOGC=400 unless set: the compiler collects its garbage less often,
		# for about 8% less CPU and the same binary byte for byte (etcd: 140
		# CPU seconds instead of 153, 5% more peak memory). It is set for the
		# build alone, never for the binary when it runs.
		# shellcheck disable=SC2086 # goflags is a list of flags
		(cd "$moddir" && CGO_ENABLED=0 GOFLAGS= GOGC=${GOGC:-400} go build $goflags -tags "${tags:-}" -ldflags "$ldflags" -o "$out.tmp" "$pkg")
		mv "$out.tmp" "$out"
	fi
fi
echo "$out"
