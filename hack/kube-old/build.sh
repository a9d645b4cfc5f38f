#!/usr/bin/env bash
# Usage: hack/kube-old/build.sh v1.MINOR   (a module directory here: v1.26 to v1.35)
#
# Prints the path of the kube-apiserver of an older release, building it first
# from the release's module in this directory (k8s.io/kubernetes with every
# staging module replaced by its published release) if it is not cached yet.
# The cache is outside the clone, keyed like hack/bin.sh's; binaries are never
# committed.
set -euo pipefail

rel=${1:?usage: hack/kube-old/build.sh v1.MINOR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
moddir=$here/$rel
[ -f "$moddir/go.mod" ] || { echo "hack/kube-old/build.sh: no module for $rel in $here" >&2; exit 2; }
version=$(awk '{for (i = 1; i < NF; i++) if ($i == "k8s.io/kubernetes" && $(i+1) ~ /^v1\./) {print $(i+1); exit}}' "$moddir/go.mod")
minor=$(echo "$version" | cut -d. -f2)
cache=${KUBECTL_APF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-apf}

# The version stamps of a release build (hack/lib/version.sh upstream), so that
# /version says the release.
ldflags="-s -w"
for pkg_version in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg_version.gitVersion=$version -X $pkg_version.gitMajor=1 -X $pkg_version.gitMinor=$minor"
	ldflags+=" -X $pkg_version.gitTreeState=clean -X $pkg_version.buildDate=1970-01-01T00:00:00Z"
done
key=$( (cat "$moddir/go.mod" "$moddir/go.sum"; go env GOVERSION; echo "$ldflags") | sha256sum | cut -c1-12)
out=$cache/bin/kube-apiserver-$version-$key/kube-apiserver
if [ ! -x "$out" ]; then
	echo "building kube-apiserver $version (cached at $out; about 3 minutes on 2 cores)" >&2
	mkdir -p "$(dirname "$out")"
	(cd "$moddir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
	mv "$out.tmp" "$out"
fi
echo "$out"
