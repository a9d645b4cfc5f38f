package simulate

import (
	"path/filepath"
	"testing"
)

// TestSpeedSpread: the spread of a change's figures is the replay of the
// same change on a server RangeMargin faster and slower, as --server-speed
// replays it, and a level near its capacity is marked steep where it
// leaves the band. crowded-30's tiny with queues 6 long (its re-runs got
// 49, 41 and 70 429s) follows the server's speed that far; wide, whose
// configuration the change leaves alone, does not.
func TestSpeedSpread(t *testing.T) {
	kr := openRecording(t, filepath.Join(recordingsDir(t), "crowded-30"))
	files, change := []string{kr.logFile, kr.auditFile}, filepath.Join(kr.dir, "whatif-3.yaml")
	res := kr.simulate(t, files, true, change)
	if res.SpeedSpread == nil || res.SpeedSpread.Margin != DefaultParams().RangeMargin {
		t.Fatalf("speed spread: %+v", res.SpeedSpread)
	}
	by := map[string]SpeedSpreadLevel{}
	for _, l := range res.SpeedSpread.Levels {
		by[l.Level] = l
	}
	for i, speed := range []float64{1 + res.SpeedSpread.Margin, 1 / (1 + res.SpeedSpread.Margin)} {
		at := kr
		at.speed = speed
		r := at.simulate(t, files, true, change)
		for _, l := range r.After.Levels {
			want := by[l.Name].Faster
			if i == 1 {
				want = by[l.Name].Slower
			}
			if got := total(l.Rejected); got != want {
				t.Errorf("%s at %.3g× the speed: %d 429s, the spread says %d", l.Name, speed, got, want)
			}
		}
	}
	tiny, wide := by["tiny"], by["wide"]
	t.Logf("tiny %d (%d-%d), wide %d (%d-%d)", tiny.Rejected, tiny.Faster, tiny.Slower, wide.Rejected, wide.Faster, wide.Slower)
	if !tiny.Steep || !(tiny.Faster < tiny.Rejected && tiny.Rejected < tiny.Slower) {
		t.Errorf("tiny: %+v, want steep, fewer 429s on a faster server and more on a slower one", tiny)
	}
	if wide.Steep {
		t.Errorf("wide: %+v, want within the band", wide)
	}
	if len(res.SpeedSpread.Steep()) != 1 {
		t.Errorf("steep levels: %+v", res.SpeedSpread.Steep())
	}
}

// TestSpreadBeyondBand: the band of the what-if check, 0.75-1.25 of the
// figure, or 10 requests where fewer than 20 are in question.
func TestSpreadBeyondBand(t *testing.T) {
	for _, tt := range []struct {
		r, f, s int64
		want    bool
	}{
		{62, 48, 78, true},     // 0.77 but 1.26
		{219, 178, 270, false}, // 0.81, 1.23
		{100, 74, 100, true},
		{5, 0, 14, false},
		{5, 0, 16, true},
		{0, 0, 11, true},
	} {
		if got := SpreadBeyondBand(tt.r, tt.f, tt.s); got != tt.want {
			t.Errorf("SpreadBeyondBand(%d, %d, %d) = %v", tt.r, tt.f, tt.s, got)
		}
	}
}
