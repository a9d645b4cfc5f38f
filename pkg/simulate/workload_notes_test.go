package simulate

import (
	"slices"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// TestClampedNotes: joined files that each record the same long-running
// requests are named in one note that counts them once (the demo
// cluster's httplog and audit log gave two notes of 43); files not joined,
// or of other counts, keep a note each.
func TestClampedNotes(t *testing.T) {
	stats := func(a, b int64) map[string]*workload.Stats {
		return map[string]*workload.Stats{"kube-apiserver.log": {Clamped: a}, "audit.log": {Clamped: b}, "quiet.log": {}}
	}
	for _, c := range []struct {
		name  string
		files *workload.Files
		want  []string
	}{
		{"joined, the same count", &workload.Files{Stats: stats(43, 43), Join: &workload.JoinStats{}},
			[]string{"note: audit.log, kube-apiserver.log: 43 long-running requests (each file's record of them, joined) arrived before the re-ordering window and were replayed at its edge"}},
		{"not joined", &workload.Files{Stats: stats(43, 43)},
			[]string{"note: audit.log: 43 long-running requests arrived before the re-ordering window and were replayed at its edge",
				"note: kube-apiserver.log: 43 long-running requests arrived before the re-ordering window and were replayed at its edge"}},
		{"joined, other counts", &workload.Files{Stats: stats(1, 2), Join: &workload.JoinStats{}},
			[]string{"note: kube-apiserver.log: 1 long-running request arrived before the re-ordering window and was replayed at its edge",
				"note: audit.log: 2 long-running requests arrived before the re-ordering window and were replayed at its edge"}},
	} {
		if got := clampedNotes(c.files); !slices.Equal(got, c.want) {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, got, c.want)
		}
	}
}
