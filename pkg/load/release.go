package load

import (
	"fmt"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// resolveRelease picks the release to replay: --kube-version when given,
// else the release of the first snapshot whose server reported /version
// (live, or kept in a bundle), else the newest. The note is set when the
// server's release is not one the engine knows exactly.
func resolveRelease(kubeVersion string, snaps []*dump.Snapshot) (rel engine.Release, from, note string, err error) {
	if kubeVersion != "" {
		rel, err = engine.ParseRelease(kubeVersion)
		if err != nil {
			return engine.Release{}, "", "", fmt.Errorf("--kube-version: %w", err)
		}
		return rel, state.ReleaseFromFlag, "", nil
	}
	for _, s := range snaps {
		if s == nil || s.ServerVersion == nil || s.ServerVersion.GitVersion == "" {
			continue
		}
		gv := printable(s.ServerVersion.GitVersion)
		r, n, err := engine.ReleaseForServer(gv)
		if err != nil {
			return engine.NewestRelease, state.ReleaseFromDefault, fmt.Sprintf("note: %v; replaying %s, whose behaviour may differ from the server's", err, engine.NewestRelease), nil
		}
		if n != "" {
			n = "note: " + n
		}
		return r, "server " + gv, n, nil
	}
	if layout := oldLayout(snaps); layout != "" {
		return engine.NewestRelease, state.ReleaseFromDefault, fmt.Sprintf("note: the input's dumps are of %s, from a server older than any release the engine replays (%s to %s); replaying %s, whose behaviour may differ from the server's (--kube-version %s is the nearest)", layout, engine.OldestRelease, engine.NewestRelease, engine.NewestRelease, engine.OldestRelease), nil
	}
	return engine.NewestRelease, state.ReleaseFromDefault, "", nil
}

// oldLayout names the layout of a snapshot's dumps that only a server
// before 1.28 writes, "" for none: a dump_requests without StartTime (the
// waiting requests alone, before 1.28), a dump_priority_levels without
// the cumulative counters (before 1.27).
func oldLayout(snaps []*dump.Snapshot) string {
	for _, s := range snaps {
		if s == nil {
			continue
		}
		for _, pl := range s.PriorityLevelDump {
			if !pl.HasCounters {
				return "a layout before 1.27 (dump_priority_levels without its counters)"
			}
		}
		if s.RequestsWaitingOnly() {
			return "a layout before 1.28 (dump_requests of the waiting requests alone)"
		}
	}
	return ""
}

// printable keeps a server-provided version to one line of printable text.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}
