#!/usr/bin/env bash
# Usage: hack/apf-oracle/newmod.sh v0.31.14 ...
#
# Writes releases/v0.MINOR.mod and .sum: the module file that builds the
# oracle against that k8s.io/apiserver release (build.sh passes it with
# -modfile). Needs the Go module proxy; run once per release, then commit.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$here/releases"
for v in "$@"; do
	[[ $v =~ ^v0\.([0-9]+)\.[0-9]+$ ]] || { echo "newmod.sh: $v is not v0.MINOR.PATCH" >&2; exit 2; }
	mod=$here/releases/v0.${BASH_REMATCH[1]}.mod
	cat >"$mod" <<EOM
// The apf-oracle against k8s.io/apiserver $v (hack/apf-oracle/newmod.sh).
module github.com/kubectl-apf/kubectl-apf/hack/apf-oracle

go 1.24

require (
	k8s.io/api $v
	k8s.io/apimachinery $v
	k8s.io/apiserver $v
	k8s.io/client-go $v
	k8s.io/component-base $v
)
EOM
	rm -f "${mod%.mod}.sum"
	(cd "$here" && go mod tidy -modfile="$mod")
	echo "$mod"
done
