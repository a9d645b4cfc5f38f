#!/usr/bin/env bash
# Usage: hack/demo.sh BIN_DIR CLUSTER_DIR
#
# "make demo": starts the local control plane, keeps a bounded load running in
# the background, and opens the plugin's live view (kubectl apf top). Everything is
# stopped and removed on exit, Ctrl-C included.
set -euo pipefail
bin=$1
dir=$2
plugin=$bin/kubectl-apf
load_pid=
ship_pid=

cleanup() {
	trap - EXIT INT TERM
	if [ -n "$load_pid" ]; then kill "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true; fi
	if [ -n "$ship_pid" ]; then kill "$ship_pid" 2>/dev/null || true; wait "$ship_pid" 2>/dev/null || true; fi
	echo "stopping the local control plane..." >&2
	"$bin/apf-devcluster" down -dir "$dir" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$bin/apf-devcluster" up -dir "$dir" >/dev/null
export KUBECONFIG=$PWD/$dir/kubeconfig
echo "local control plane up; KUBECONFIG=$KUBECONFIG" >&2
# "up" also started Prometheus, scraping the apiserver every second.
prom=$(cat "$dir/prometheus-url" 2>/dev/null || true)
history=()
if [ -n "$prom" ]; then
	# The live view reads the cluster and, behind it, Prometheus's last 30
	# minutes: left steps back through them, right returns to live.
	history=(--prometheus "$prom" --scrape-interval 1s --step 2s)
	echo "Prometheus at $prom; the live view steps back through its history with left/right." >&2
	echo "In another terminal, with the KUBECONFIG above:" >&2
	echo "  $plugin explain 429 --prometheus $prom --scrape-interval 1s --since 10m" >&2
	echo "  $plugin top --prometheus $prom --scrape-interval 1s --since 10m     # a window of the past only" >&2
	sleep 3
fi

# "up" also started VictoriaLogs: the audit log is shipped to it every second,
# as a log pipeline would (it stops by itself after 30 minutes).
vlogs=$(cat "$dir/victorialogs-url" 2>/dev/null || true)
if [ -n "$vlogs" ]; then
	"$bin/apf-devcluster" ship -dir "$dir" -duration 30m >"$dir/ship.log" 2>&1 &
	ship_pid=$!
	echo "VictoriaLogs at $vlogs holds the audit log; in another terminal:" >&2
	echo "  $plugin explain 429 --victorialogs $vlogs --since 10m" >&2
fi

echo "Record the next incident (Ctrl-C ends it), then explain it and play it back:" >&2
echo "  $plugin dump bundle --watch 30m --keep 10m --interval 1s --to incident.tar.gz" >&2
echo "  $plugin explain 429 --from incident.tar.gz; $plugin top --from incident.tar.gz" >&2

# Bounded background load (it stops by itself after 30 minutes).
"$bin/apf-devcluster" load -dir "$dir" -duration 30m -rounds 0 -quiet >"$dir/load.log" 2>&1 &
load_pid=$!

# The live terminal UI. No "--help | grep" probe: under pipefail a grep that
# exits first kills the plugin with SIGPIPE and the probe fails at random.
"$plugin" top "${history[@]}"
