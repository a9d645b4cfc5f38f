package release

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	k8sversion "k8s.io/apimachinery/pkg/util/version"
)

// Stamp is what a release build injects into the binary with -ldflags -X.
type Stamp struct {
	// Version is a semantic version with a "v" prefix, as krew requires.
	Version string
	// Commit is the full commit hash.
	Commit string
	// Date is the commit time in UTC; it also becomes every archive entry's mtime,
	// so the same commit always gives the same bytes.
	Date time.Time
}

// DateString formats the stamp's date as main.buildDate receives it.
func (s Stamp) DateString() string { return s.Date.UTC().Format(time.RFC3339) }

// LDFlags returns the -ldflags value that stamps the binary (cmd/kubectl-apf
// version.go reads main.version, main.commit and main.buildDate). -s -w drop the
// symbol table and DWARF: smaller archives, and nothing in them that depends on
// where the build ran.
func (s Stamp) LDFlags() string {
	return fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s -X main.buildDate=%s", s.Version, s.Commit, s.DateString())
}

// IsKrewVersion reports whether v is a version krew accepts in spec.version:
// a "v" prefix, then a semantic version as k8s.io/apimachinery parses it. This is
// exactly krew's internal/installation/semver.Parse, which that package keeps
// internal.
func IsKrewVersion(v string) bool {
	if !strings.HasPrefix(v, "v") {
		return false
	}
	_, err := k8sversion.ParseSemantic(v)
	return err == nil
}

var hexRE = regexp.MustCompile(`^[0-9a-f]{4,64}$`)

// VersionFromDescribe turns the output of `git describe --tags --always --dirty`
// into a krew version. A tag-based description ("v0.2.0", "v0.2.0-3-gabc1234",
// "v0.2.0-dirty") is kept as it is; a bare commit ("abc1234", "abc1234-dirty",
// what --always prints when there is no tag) becomes "v0.0.0-abc1234[-dirty]".
// A description that is neither is an error rather than a version krew would
// refuse later.
func VersionFromDescribe(describe string) (string, error) {
	d := strings.TrimSpace(describe)
	if d == "" {
		return "", fmt.Errorf("empty git describe output")
	}
	if strings.HasPrefix(d, "v") {
		if !IsKrewVersion(d) {
			return "", fmt.Errorf("git describe gave %q, which is not a semantic version: tag releases as vMAJOR.MINOR.PATCH", d)
		}
		return d, nil
	}
	commit, dirty := strings.CutSuffix(d, "-dirty")
	if !hexRE.MatchString(commit) {
		return "", fmt.Errorf("git describe gave %q: neither a v-prefixed tag nor an abbreviated commit", d)
	}
	// A prerelease identifier made of digits only may not start with 0
	// (semver.org, item 9); an abbreviated hash like "0123456" would, so it gets
	// git describe's own "g" prefix in that one case.
	if strings.Trim(commit, "0123456789") == "" && strings.HasPrefix(commit, "0") {
		commit = "g" + commit
	}
	v := "v0.0.0-" + commit
	if dirty {
		v += "-dirty"
	}
	return v, nil
}

// StampFromGit reads the stamp of the work tree at dir: version from
// `git describe --tags --always --dirty`, commit from `git rev-parse HEAD`, date
// from the committer date of HEAD (never the wall clock).
func StampFromGit(ctx context.Context, dir string) (Stamp, error) {
	return stampFromGit(ctx, dir, "HEAD", true)
}

// StampForCommit reads the stamp a clean checkout of rev would get.
func StampForCommit(ctx context.Context, dir, rev string) (Stamp, error) {
	return stampFromGit(ctx, dir, rev, false)
}

func stampFromGit(ctx context.Context, dir, rev string, dirty bool) (Stamp, error) {
	args := []string{"describe", "--tags", "--always"}
	if dirty {
		args = append(args, "--dirty")
	} else {
		args = append(args, rev)
	}
	describe, err := git(ctx, dir, args...)
	if err != nil {
		return Stamp{}, err
	}
	version, err := VersionFromDescribe(describe)
	if err != nil {
		return Stamp{}, err
	}
	commit, err := git(ctx, dir, "rev-parse", rev+"^{commit}")
	if err != nil {
		return Stamp{}, err
	}
	iso, err := git(ctx, dir, "log", "-1", "--format=%cI", rev)
	if err != nil {
		return Stamp{}, err
	}
	date, err := time.Parse(time.RFC3339, iso)
	if err != nil {
		return Stamp{}, fmt.Errorf("parsing commit date %q of %s: %w", iso, rev, err)
	}
	return Stamp{Version: version, Commit: commit, Date: date.UTC()}, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("running git %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
