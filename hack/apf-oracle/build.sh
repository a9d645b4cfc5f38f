#!/usr/bin/env bash
# Usage: hack/apf-oracle/build.sh v0.31
#
# Prints the path of the apf-oracle built against that k8s.io/apiserver
# release (releases/v0.MINOR.mod), building it first if it is not cached yet.
# Cached outside the clone like hack/bin.sh, keyed by the sources and module
# files; set KUBECTL_APF_CACHE to move the cache.
set -euo pipefail

rel=${1:?usage: hack/apf-oracle/build.sh v0.MINOR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mod=$here/releases/$rel.mod
[ -f "$mod" ] || { echo "hack/apf-oracle/build.sh: no module file for $rel in $here/releases" >&2; exit 2; }
minor=${rel#v0.}
# apf_etcdfeature: the release has storage/feature (v0.31 on), apf_stats: its
# estimator reads storage.Stats (v0.34 on).
tags=
[ "$minor" -ge 31 ] && tags=apf_etcdfeature
[ "$minor" -ge 34 ] && tags+=,apf_stats
cache=${KUBECTL_APF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-apf}
key=$( (cat "$mod" "${mod%.mod}.sum" "$here"/*.go; go env GOVERSION; echo "$tags") | sha256sum | cut -c1-12)
out=$cache/bin/apf-oracle-$rel-$key/apf-oracle
if [ ! -x "$out" ]; then
	mkdir -p "$cache/bin"
	exec 9>"$cache/bin/.apf-oracle-$rel.lock"
	flock 9
	if [ ! -x "$out" ]; then
		echo "building apf-oracle against k8s.io/apiserver $rel (cached at $out)" >&2
		mkdir -p "$(dirname "$out")"
		(cd "$here" && CGO_ENABLED=0 go build -modfile="$mod" -tags "$tags" -trimpath -o "$out.tmp" .)
		mv "$out.tmp" "$out"
	fi
fi
echo "$out"
