package reconstruct_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	testfixture "github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// TestClassifyMemoRecordings classifies every request of every recording
// under testdata/simulate/recordings, read as the httplog joined to the
// audit log and as the httplog alone (no identity: the recorded
// FlowSchema), under every recording's configuration, by
// fairqueue.ClassifyRecorded and by its memoized form, and by
// Config.Classify and engine.ClassifyMemo: the FlowSchema, priority level,
// distinguisher and hash (and the whole classification) must be the same.
// The identity is taken as the calibration takes it and with
// system:authenticated added, as the reconstruction does.
func TestClassifyMemoRecordings(t *testing.T) {
	entries, err := os.ReadDir(recordings)
	if err != nil {
		t.Fatal(err)
	}
	var fixtures []fixture
	for _, e := range entries {
		if e.IsDir() {
			fixtures = append(fixtures, loadFixture(t, filepath.Join(recordings, e.Name())))
		}
	}
	memos := make([]engine.ClassifyMemo, len(fixtures))
	checked, known, hits := 0, 0, 0
	for _, f := range fixtures {
		tmp := t.TempDir()
		httplog := testfixture.Gunzip(t, filepath.Join(f.dir, recording.HTTPLogFile), tmp)
		audit := testfixture.Gunzip(t, filepath.Join(f.dir, recording.AuditLogFile), tmp)
		for _, paths := range [][]string{{httplog, audit}, {httplog}} {
			files, err := input.OpenFiles(paths, input.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var w workload.Request
			var parsed engine.RequestCache
			for {
				err := files.Next(&w)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range []engine.Identity{{User: w.User, Groups: w.Groups}, withAuthenticated(w.User, w.Groups)} {
					er, err := parsed.Parse(w.Method, w.URI, id)
					if err != nil || er.Bypass != "" {
						continue
					}
					for i, g := range fixtures {
						c, m := g.config, &memos[i]
						before := m.Len()
						want, werr := fairqueue.ClassifyRecorded(c, &w, &er)
						got, gerr := fairqueue.ClassifyRecordedMemo(m, c, &w, &er)
						if got != want || (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
							t.Fatalf("%s %s %s as %+v under %s: memoized %+v, %v; unmemoized %+v, %v", f.name, w.Method, w.URI, id, g.name, got, gerr, want, werr)
						}
						if w.UserKnown {
							if got, want := m.Classify(c, &er), c.Classify(er); !reflect.DeepEqual(got, want) {
								t.Fatalf("%s %s %s as %+v under %s: memo %+v, Classify %+v", f.name, w.Method, w.URI, id, g.name, got, want)
							}
							if m.Len() == before {
								hits++
							}
							known++
						}
						checked++
					}
				}
			}
			files.Close()
		}
	}
	t.Logf("%d classifications of recorded requests agree (%d with an identity, of which the memo answered %d)", checked, known, hits)
	if known == 0 || hits < known/2 {
		t.Errorf("%d classifications with an identity, %d answered by the memo: the test does not exercise it", known, hits)
	}
}

func withAuthenticated(user string, groups []string) engine.Identity {
	if slices.Contains(groups, "system:authenticated") || slices.Contains(groups, "system:unauthenticated") {
		return engine.Identity{User: user, Groups: groups}
	}
	return engine.Identity{User: user, Groups: append(slices.Clip(groups), "system:authenticated")}
}
