#!/usr/bin/env bash
# Usage: hack/krew/bin.sh krew|validate-krew-manifest
#
# Prints the path of a krew tool, building it from sigs.k8s.io/krew (the version
# this module's go.mod pins) if it is not cached yet. Cached like hack/bin.sh
# caches kubectl: outside the clone, keyed by version and by the hash of the
# module files, Go version and flags it is built from. Set KUBECTL_APF_CACHE to
# move the cache.
set -euo pipefail

name=${1:?usage: hack/krew/bin.sh krew|validate-krew-manifest}
moddir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${KUBECTL_APF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-apf}
mkdir -p "$cache/bin"

case "$name" in
krew | validate-krew-manifest) ;;
*)
	echo "hack/krew/bin.sh: unknown binary $name" >&2
	exit 2
	;;
esac

version=$(awk '$1 == "sigs.k8s.io/krew" {print $2; exit}' "$moddir/go.mod")
# krew reads its own version from this (sigs.k8s.io/krew/internal/version); a
# tagged version also makes "krew version" honest.
ldflags="-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$version"

# The build's own flags (the environment's GOFLAGS left out), in the key with
# everything else the build is made with.
goflags="-mod=readonly -trimpath -buildvcs=false -gcflags=all=-dwarf=false"
key=$( (cat "$moddir/go.mod" "$moddir/go.sum"; go env GOVERSION; echo "$ldflags $goflags") | sha256sum | cut -c1-12)
out=$cache/bin/$name-$version-$key
if [ ! -x "$out" ]; then
	exec 9>"$cache/bin/.$name.lock"
	flock 9
	if [ ! -x "$out" ]; then
		echo "building $name $version (cached at $out)" >&2
		# shellcheck disable=SC2086 # goflags is a list of flags
		(cd "$moddir" && CGO_ENABLED=0 GOFLAGS= GOGC=${GOGC:-400} go build $goflags -ldflags "$ldflags" -o "$out.tmp" "sigs.k8s.io/krew/cmd/$name")
		mv "$out.tmp" "$out"
	fi
fi
echo "$out"
