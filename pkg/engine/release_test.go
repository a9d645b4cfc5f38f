package engine

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

func TestParseRelease(t *testing.T) {
	for in, want := range map[string]int{"1.31": 31, "v1.31": 31, "v1.29.15": 29, "v1.33.13-eks-1a2b3c": 33, "v1.35.4+k3s1": 35, " 1.37 ": 37} {
		r, err := ParseRelease(in)
		if err != nil || r.Minor != want {
			t.Errorf("ParseRelease(%q) = %v, %v; want 1.%d", in, r, err, want)
		}
	}
	for _, in := range []string{"", "1", "2.31", "1.x", "v1.28.15", "1.38", "latest", "1.-3"} {
		if r, err := ParseRelease(in); err == nil {
			t.Errorf("ParseRelease(%q) = %v, want an error", in, r)
		}
	}
	if r, note, err := ReleaseForServer("v1.40.2"); err != nil || r != NewestRelease || !strings.Contains(note, "newer") {
		t.Errorf("ReleaseForServer(v1.40.2) = %v, %q, %v", r, note, err)
	}
	if _, _, err := ReleaseForServer("v1.27.4"); err == nil {
		t.Error("ReleaseForServer(v1.27.4) gave no error")
	}
}

func FuzzParseRelease(f *testing.F) {
	for _, s := range []string{"1.31", "v1.29.15", "v1.33.13-eks-1", "1.", "v1.+", "1.99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRelease(s)
		if err == nil && (r.Minor < OldestRelease.Minor || r.Minor > NewestRelease.Minor) {
			t.Fatalf("ParseRelease(%q) = %v outside the supported range", s, r)
		}
	})
}

// releaseDefaults is what the version e2e writes to
// testdata/engine/defaults/VERSION.json from a real server (test/e2e
// TestCaptureReleaseDefaults).
type releaseDefaults struct {
	ServerVersion  string                                     `json:"serverVersion"`
	FlowSchemas    []flowcontrolv1.FlowSchema                 `json:"flowSchemas"`
	PriorityLevels []flowcontrolv1.PriorityLevelConfiguration `json:"priorityLevels"`
}

// TestReleaseDefaultsMatchRealServers compares each release's default
// objects with those a real kube-apiserver of that release created.
func TestReleaseDefaultsMatchRealServers(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/engine/defaults/v1.*.json")
	if len(files) < 5 {
		t.Fatalf("only %d captures of real servers' defaults in testdata/engine/defaults", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var got releaseDefaults
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rel, err := ParseRelease(got.ServerVersion)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		fsNames := func(fss []*flowcontrolv1.FlowSchema) []string {
			var out []string
			for _, fs := range fss {
				out = append(out, fs.Name)
			}
			sort.Strings(out)
			return out
		}
		wantFS := map[string]*flowcontrolv1.FlowSchema{}
		for _, fs := range rel.DefaultFlowSchemas() {
			wantFS[fs.Name] = DefaultFlowSchema(fs)
		}
		var serverFS []*flowcontrolv1.FlowSchema
		for i := range got.FlowSchemas {
			serverFS = append(serverFS, &got.FlowSchemas[i])
		}
		if g, w := fsNames(serverFS), fsNames(rel.DefaultFlowSchemas()); strings.Join(g, ",") != strings.Join(w, ",") {
			t.Errorf("%s: the server's FlowSchemas are %v, release %s's defaults %v", got.ServerVersion, g, rel, w)
		}
		for _, fs := range serverFS {
			if w, ok := wantFS[fs.Name]; ok && !apiequality.Semantic.DeepEqual(w.Spec, fs.Spec) {
				t.Errorf("%s: FlowSchema %s differs:\nserver %+v\nengine %+v", got.ServerVersion, fs.Name, fs.Spec, w.Spec)
			}
		}
		wantPL := map[string]*flowcontrolv1.PriorityLevelConfiguration{}
		for _, pl := range rel.DefaultPriorityLevels() {
			wantPL[pl.Name] = DefaultPriorityLevel(pl)
		}
		if len(got.PriorityLevels) != len(wantPL) {
			t.Errorf("%s: %d priority levels, release %s has %d", got.ServerVersion, len(got.PriorityLevels), rel, len(wantPL))
		}
		for _, pl := range got.PriorityLevels {
			w, ok := wantPL[pl.Name]
			if !ok {
				t.Errorf("%s: priority level %s is not among release %s's defaults", got.ServerVersion, pl.Name, rel)
			} else if !apiequality.Semantic.DeepEqual(w.Spec, pl.Spec) {
				t.Errorf("%s: priority level %s differs:\nserver %+v\nengine %+v", got.ServerVersion, pl.Name, pl.Spec, w.Spec)
			}
		}
		t.Logf("%s: %d FlowSchemas and %d priority levels identical to release %s's defaults", got.ServerVersion, len(serverFS), len(got.PriorityLevels), rel)
	}
}

// TestBorrowingMatchesRealServers recomputes, from the limits and seat-demand
// gauges a real server published in one borrowing pass
// (testdata/metrics/VERSION-{idle,load}.txt), the current limits that pass
// set, with the borrowing of the server's release, and requires
// current_limit_seats exactly. The passes of 1.29 (exempt in the pool) and of
// 1.31+ differ; each is also run the other way, to show the capture tells
// them apart where it can.
func TestBorrowingMatchesRealServers(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/metrics/v1.*-*.txt")
	checked := 0
	for _, f := range files {
		version := strings.TrimSuffix(filepath.Base(f), ".txt")
		version = version[:strings.LastIndex(version, "-")]
		rel, err := ParseRelease(version)
		if err != nil {
			// 1.28 serves no flowcontrol v1, so the engine does not replay
			// it, but its borrowing pass is 1.29's (apf_controller.go:
			// updateBorrowingLocked is the same in v0.28.15 and v0.29.15);
			// 1.26/1.27 have no such gauges
			if rel, err = parseMinor(version); err != nil || rel.Minor != 28 {
				continue
			}
		}
		fams := readFamilies(t, f)
		gauge := func(name string) map[string]float64 {
			out := map[string]float64{}
			if mf, ok := fams["apiserver_flowcontrol_"+name]; ok {
				for _, m := range *mf {
					out[string(m.Metric["priority_level"])] = float64(m.Value)
				}
			}
			return out
		}
		nominal, lower, upper, current := gauge("nominal_limit_seats"), gauge("lower_limit_seats"), gauge("upper_limit_seats"), gauge("current_limit_seats")
		hw, smoothed := gauge("demand_seats_high_watermark"), gauge("demand_seats_smoothed")
		if len(current) == 0 || len(hw) == 0 {
			t.Errorf("%s: no current_limit_seats or demand_seats_high_watermark", f)
			continue
		}
		var levels []LevelLimits
		stats := map[string]SeatDemandStats{}
		serverCL := 0
		for name, n := range nominal {
			levels = append(levels, LevelLimits{Name: name, Exempt: name == "exempt", NominalCL: int(n), LowerCL: int(lower[name]), UpperCL: int(upper[name])})
			stats[name] = SeatDemandStats{HighWatermark: int(math.Round(hw[name])), Max: hw[name], Smoothed: smoothed[name]}
			serverCL += int(n)
		}
		sort.Slice(levels, func(i, j int) bool { return levels[i].Name < levels[j].Name })
		got := AllocateCurrentLimitsFor(rel, levels, stats, nil, serverCL)
		for name, want := range current {
			if float64(got.CurrentCL[name]) != want {
				t.Errorf("%s (release %s): level %s current limit %d, the server %v (branch %s)", f, rel, name, got.CurrentCL[name], want, got.Branch)
			}
		}
		other := OldestRelease
		if rel.ExemptInBorrowingPool() {
			other = NewestRelease
		}
		alt := AllocateCurrentLimitsFor(other, levels, stats, nil, serverCL)
		differs := 0
		for name, want := range current {
			if float64(alt.CurrentCL[name]) != want {
				differs++
			}
		}
		checked++
		t.Logf("%s: %d levels' current limits identical with release %s's borrowing; %s's would get %d wrong", filepath.Base(f), len(current), rel, other, differs)
	}
	if checked < 4 {
		t.Errorf("only %d real metrics captures checked", checked)
	}
}

func readFamilies(t *testing.T, path string) map[string]*model.Vector {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]*model.Vector{}
	for name, mf := range mfs {
		v, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, mf)
		if err != nil {
			t.Fatal(err)
		}
		vec := model.Vector(v)
		out[name] = &vec
	}
	return out
}
