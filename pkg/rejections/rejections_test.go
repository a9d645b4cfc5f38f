package rejections

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDocumented: every field of the schema is in
// docs/explain-429-schema.md, so the document cannot fall behind the
// types.
func TestDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "explain-429-schema.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	// The words of the document's code spans.
	words := map[string]bool{}
	for _, span := range regexp.MustCompile("`[^`]+`").FindAllString(doc, -1) {
		for _, w := range regexp.MustCompile(`[A-Za-z0-9./-]+`).FindAllString(span, -1) {
			words[w] = true
		}
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || ty.PkgPath() != reflect.TypeOf(Report{}).PkgPath() {
			return
		}
		seen[ty] = true
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && !words[name] {
				t.Errorf("%s.%s (%q) is not in docs/explain-429-schema.md", ty.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Report{}))
	for _, c := range []string{CauseNoQueues, CauseTooLittleConcurrency, CauseElephantFlow, CauseWideRequests, CauseTimeOuts, CauseNotAPF, CauseUnclear,
		CountsPerSecond, CountsInWindow, CountsSinceStart, CountsPerInstance, SourceCluster, SourceBundle, SourcePrometheus, SourceLog, Schema} {
		if !words[c] {
			t.Errorf("%q is not in docs/explain-429-schema.md", c)
		}
	}
}

// TestPointJSON: a point without a value is null, and reads back as NaN.
func TestPointJSON(t *testing.T) {
	at := time.Date(2026, 11, 23, 3, 10, 0, 0, time.UTC)
	b, err := json.Marshal([]Point{{T: at, V: 2.5}, {T: at, V: math.NaN()}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"t":"2026-11-23T03:10:00Z","v":2.5},{"t":"2026-11-23T03:10:00Z","v":null}]`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var back []Point
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back[0].V != 2.5 || !math.IsNaN(back[1].V) || !back[1].T.Equal(at) {
		t.Errorf("read back %+v", back)
	}
}

// TestKeep: incidents that overlap the window stay, by a second on each
// side; Rejected recounts what stays; an unbounded incident stays.
func TestKeep(t *testing.T) {
	at := func(s int) *time.Time { v := time.Unix(1000+int64(s), 0).UTC(); return &v }
	r := &Report{Rejected: map[string]float64{"a": 99}, Incidents: []Incident{
		{Level: "a", Start: at(0), End: at(9), Rejected: 1},   // ends before since
		{Level: "a", Start: at(9), End: at(11), Rejected: 2},  // overlaps since
		{Level: "b", Start: at(19), End: at(30), Rejected: 4}, // overlaps until
		{Level: "b", Start: at(21), End: at(25), Rejected: 8}, // starts after until
		{Level: "c", Rejected: 16},                            // unbounded
	}}
	r.Keep(*at(10), *at(20))
	if len(r.Incidents) != 3 || r.Incidents[0].Rejected != 2 || r.Incidents[1].Rejected != 4 || r.Incidents[2].Level != "c" {
		t.Fatalf("kept %+v", r.Incidents)
	}
	if want := map[string]float64{"a": 2, "b": 4, "c": 16}; !reflect.DeepEqual(r.Rejected, want) {
		t.Fatalf("Rejected %v, want %v", r.Rejected, want)
	}
	if r.Window.Start == nil || !r.Window.Start.Equal(*at(10)) || !r.Window.End.Equal(*at(20)) {
		t.Fatalf("window %+v", r.Window)
	}
}
