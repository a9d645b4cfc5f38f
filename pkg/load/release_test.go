package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// TestResolveReleaseOfAnOldLayout: dumps of a layout only a server before
// 1.28 writes (the real 1.26.15 and 1.27.4 captures) and no /version
// replay the newest release, as any input without a version does, with a
// note that the server was older than any release replayed; a 1.37.1
// capture's dumps give no such note.
func TestResolveReleaseOfAnOldLayout(t *testing.T) {
	read := func(capture, name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "dump", capture, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tt := range []struct {
		capture, want string
	}{
		{"v1.26.15-load", "a layout before 1.27 (dump_priority_levels without its counters)"},
		{"v1.27.4-load", "a layout before 1.28 (dump_requests of the waiting requests alone)"},
		{"v1.37.1-load", ""},
	} {
		levels, err := dump.ParsePriorityLevels(read(tt.capture, "dump_priority_levels.txt"))
		if err != nil {
			t.Fatal(err)
		}
		requests, err := dump.ParseRequests(read(tt.capture, "dump_requests.txt"))
		if err != nil {
			t.Fatal(err)
		}
		rel, _, note, err := resolveRelease("", []*dump.Snapshot{{PriorityLevelDump: levels, RequestDump: requests}})
		if err != nil || rel != engine.NewestRelease {
			t.Errorf("%s: %v, %v", tt.capture, rel, err)
		}
		if tt.want == "" && note != "" || tt.want != "" && (!strings.Contains(note, tt.want) || !strings.Contains(note, "older than any release the engine replays")) {
			t.Errorf("%s: note %q, want one naming %q", tt.capture, note, tt.want)
		}
		// --kube-version says which release to replay: no note then
		if _, _, note, _ := resolveRelease("1.29", []*dump.Snapshot{{PriorityLevelDump: levels, RequestDump: requests}}); note != "" {
			t.Errorf("%s with --kube-version: note %q", tt.capture, note)
		}
	}
}
