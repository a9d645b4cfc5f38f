package dump

import (
	"reflect"
	"strings"
	"testing"
)

// withTrailingCommas ends every non-blank line with a comma, as the dumps
// in Kubernetes' documentation do.
func withTrailingCommas(b []byte) []byte {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = l + ","
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// TestTrailingCommaLayout: a dump in the documentation's layout (every line
// ends with a comma) reads as the same dump without them, for each endpoint
// and for rows whose last cell is empty.
func TestTrailingCommaLayout(t *testing.T) {
	for _, dir := range []string{"v1.20-layout", "v1.26-layout", "v1.37.1-load"} {
		t.Run(dir, func(t *testing.T) {
			for _, p := range []struct {
				file  string
				parse func([]byte) (any, error)
			}{
				{FilePriorityLevels, func(b []byte) (any, error) { return ParsePriorityLevels(b) }},
				{FileQueues, func(b []byte) (any, error) { return ParseQueues(b) }},
				{FileRequests, func(b []byte) (any, error) { return ParseRequests(b) }},
			} {
				plain := readFixture(t, dir, p.file)
				want, err := p.parse(plain)
				if err != nil {
					t.Fatalf("%s: %v", p.file, err)
				}
				got, err := p.parse(withTrailingCommas(plain))
				if err != nil {
					t.Fatalf("%s with trailing commas: %v", p.file, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s with trailing commas:\n got %+v\nwant %+v", p.file, got, want)
				}
			}
		})
	}
}

// TestDocsDumpExample reads the documentation's dump_priority_levels example
// as published, trailing commas and all.
func TestDocsDumpExample(t *testing.T) {
	rows, err := ParsePriorityLevels(readFixture(t, "docs-trailing-comma", FilePriorityLevels))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 7 || rows[0].Name != "workload-low" || !rows[0].IsIdle || !rows[2].Placeholder || rows[6].Name != "workload-high" {
		t.Errorf("rows = %+v", rows)
	}
}
