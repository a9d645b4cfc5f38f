package input

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// TestPerInputAheadSame: inputs merged together and parsed each in a
// goroutine of its own give what they give parsed in one: the same
// requests in the same order, the same counts, the same instances named
// and the same inputs naming them (an httplog joined to two audit files,
// wrapped inputs of three kinds, one gzipped, and an httplog joined to
// three audit files).
func TestPerInputAheadSame(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testdata, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.ReplaceAll(string(b), `"2000-`, `"2026-`), "\n")
	dir := t.TempDir()
	half := len(lines) / 2
	for i, part := range [][]string{lines[:half], lines[half:]} {
		if err := os.WriteFile(filepath.Join(dir, "audit-"+string(rune('a'+i))+".log"), []byte(strings.Join(part, "")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	httplog := filepath.Join(testdata, "httplog-v1.37.log")
	wrapped := []string{filepath.Join(wrappedTestdata, "cri"), filepath.Join(wrappedTestdata, "docker-json-file"), filepath.Join(wrappedTestdata, "cloudwatch-s3-export")}
	for _, paths := range [][]string{
		{httplog, dir},
		wrapped,
		{httplog, dir, filepath.Join(wrappedTestdata, "raw-audit.log")},
	} {
		read := func(ahead bool) ([]workload.Request, *workload.Files, error) {
			got, fs, err := readFilesWith(t, Options{Lenient: true, tuning: tuning{mergedInline: !ahead}}, paths...)
			if fs != nil {
				fs.Opened.Settle(fs)
			}
			return got, fs, err
		}
		want, wfs, werr := read(false)
		got, gfs, gerr := read(true)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("%v: error %v parsed apart, %v parsed together", paths, gerr, werr)
		}
		if len(want) == 0 {
			t.Fatalf("%v: no request", paths)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: %d requests parsed apart differ from the %d parsed together", paths, len(got), len(want))
		}
		if !reflect.DeepEqual(gfs.Stats, wfs.Stats) || !reflect.DeepEqual(gfs.Named, wfs.Named) || !reflect.DeepEqual(gfs.NamedIn, wfs.NamedIn) || !reflect.DeepEqual(gfs.Join, wfs.Join) {
			t.Errorf("%v: stats, instances or join differ: %+v %v %v %+v; together %+v %v %v %+v", paths, gfs.Stats, gfs.Named, gfs.NamedIn, gfs.Join, wfs.Stats, wfs.Named, wfs.NamedIn, wfs.Join)
		}
		if n := len(gfs.Opened.(*opened).prefetchers) - len(wfs.Opened.(*opened).prefetchers); n <= 0 {
			t.Errorf("%v: %d goroutines more parsing apart, want some", paths, n)
		}
	}
}
