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
