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
	return engine.NewestRelease, state.ReleaseFromDefault, "", nil
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
