package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// releaseInfo is the release a command replays and where it came from.
type releaseInfo struct {
	Release engine.Release
	From    string
}

// addKubeVersionFlag declares --kube-version, the Kubernetes release whose
// defaults and behaviour the engine replays when the server's own release is
// not read (--defaults, or files alone).
func addKubeVersionFlag(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "kube-version", "", fmt.Sprintf("Kubernetes release to replay (%s to %s, e.g. 1.31): its default objects with --defaults and its APF behaviour; default: the server's, from /version or the bundle, else %s.",
		engine.OldestRelease, engine.NewestRelease, engine.NewestRelease))
}

// validateKubeVersion checks --kube-version early, for one clear line.
func validateKubeVersion(v string) error {
	if v == "" {
		return nil
	}
	if _, err := engine.ParseRelease(v); err != nil {
		return fmt.Errorf("--kube-version: %w", err)
	}
	return nil
}

// resolveRelease picks the release to replay: --kube-version when given,
// else the release of the first snapshot's server (/version, live or from a
// bundle), else the newest. from says where it came from, for the output;
// note is set when the server's release is not one the engine knows exactly.
func resolveRelease(kubeVersion string, snaps []*dump.Snapshot) (rel engine.Release, from, note string, err error) {
	if kubeVersion != "" {
		rel, err = engine.ParseRelease(kubeVersion)
		if err != nil {
			return engine.Release{}, "", "", fmt.Errorf("--kube-version: %w", err)
		}
		return rel, "--kube-version", "", nil
	}
	for _, s := range snaps {
		if s == nil || s.ServerVersion == nil || s.ServerVersion.GitVersion == "" {
			continue
		}
		gv := sanitizeLine(s.ServerVersion.GitVersion)
		r, n, err := engine.ReleaseForServer(gv)
		if err != nil {
			return engine.NewestRelease, "default", fmt.Sprintf("note: %v; replaying %s, whose behaviour may differ from the server's", err, engine.NewestRelease), nil
		}
		if n != "" {
			n = "note: " + n
		}
		return r, "server " + gv, n, nil
	}
	return engine.NewestRelease, "default", "", nil
}
