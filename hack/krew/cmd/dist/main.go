// Command dist builds kubectl-apf's release: one reproducible .tar.gz per
// platform, SHA256SUMS, the krew manifest rendered from plugins/krew.yaml, and
// the same manifest laid out as a krew custom index (krew-index/plugins/apf.yaml,
// to commit into the index repository users add with `kubectl krew index add`).
// `make dist` runs it; see hack/release.mk.
//
//	go run ./cmd/dist -repo ../.. -out ../../dist
//
// The version, commit and date come from git (describe --tags --always --dirty,
// rev-parse HEAD, the committer date of HEAD) unless given as flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"time"

	"github.com/kubectl-apf/kubectl-apf/hack/krew/release"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "dist: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	repo := fs.String("repo", ".", "root of the kubectl-apf repository")
	out := fs.String("out", "dist", "directory to write the release into")
	platforms := fs.String("platforms", "", "comma-separated os/arch list (default: every release platform)")
	version := fs.String("version", "", "version to stamp (default: from git describe)")
	commit := fs.String("commit", "", "commit to stamp (default: git rev-parse HEAD)")
	date := fs.String("date", "", "RFC 3339 build date to stamp and to use as archive mtime (default: committer date of HEAD)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	stamp := release.Stamp{Version: *version, Commit: *commit}
	if *version == "" || *commit == "" || *date == "" {
		fromGit, err := release.StampFromGit(ctx, *repo)
		if err != nil {
			return fmt.Errorf("reading the version from git (or pass -version, -commit and -date): %w", err)
		}
		if stamp.Version == "" {
			stamp.Version = fromGit.Version
		}
		if stamp.Commit == "" {
			stamp.Commit = fromGit.Commit
		}
		stamp.Date = fromGit.Date
	}
	if *date != "" {
		d, err := time.Parse(time.RFC3339, *date)
		if err != nil {
			return fmt.Errorf("-date: %w", err)
		}
		stamp.Date = d.UTC()
	}
	cfg := release.Config{
		RepoDir: *repo,
		OutDir:  *out,
		Stamp:   stamp,
		Log:     func(f string, a ...any) { fmt.Fprintf(os.Stderr, "dist: "+f+"\n", a...) },
	}
	if *platforms != "" {
		ps, err := release.ParsePlatforms(*platforms)
		if err != nil {
			return fmt.Errorf("-platforms: %w", err)
		}
		cfg.Platforms = ps
	}
	fmt.Fprintf(os.Stderr, "dist: kubectl-apf %s (commit %s, %s)\n", stamp.Version, stamp.Commit, stamp.DateString())
	res, err := release.Build(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Print(string(release.FormatSums(res.Archives)))
	if res.Manifest == nil {
		fmt.Fprintf(os.Stderr, "dist: wrote %d archives and %s to %s\n", len(res.Archives), release.SumsFile, filepath.Clean(*out))
		return nil
	}
	fmt.Fprintf(os.Stderr, "dist: wrote %d archives, %s, %s and the krew index %s to %s\n", len(res.Archives), release.SumsFile, release.ManifestFile,
		path.Join(release.IndexDir, res.IndexManifest), filepath.Clean(*out))
	return nil
}
