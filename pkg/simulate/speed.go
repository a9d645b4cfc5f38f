package simulate

import (
	"context"
	"slices"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
)

// SpeedSpread is how each level's rejections after the change move when
// the changed server runs Margin faster or slower than the replay has it.
// A recording fixes the server's speed on the day it was made, not on the
// day of the change: two runs of one load on one server differ by about
// Margin (Params.RangeMargin). Near its capacity a level's 429s follow
// that speed further than a prediction's band, and such a level (Steep)
// is not known closer than Faster to Slower.
type SpeedSpread struct {
	Margin float64            `json:"margin"`
	Levels []SpeedSpreadLevel `json:"levels"`
}

// SpeedSpreadLevel is one level's rejections after the change: as
// predicted, on a server Margin faster and on one Margin slower.
type SpeedSpreadLevel struct {
	Level    string `json:"level"`
	Rejected int64  `json:"rejected"`
	Faster   int64  `json:"faster"`
	Slower   int64  `json:"slower"`
	// Steep: Faster or Slower leaves the band a prediction is held to
	// (SpreadBeyondBand).
	Steep bool `json:"steep,omitempty"`
}

// Steep returns the levels whose figures follow the server's speed beyond
// the band, in the order replayed.
func (s *SpeedSpread) Steep() []SpeedSpreadLevel {
	if s == nil {
		return nil
	}
	var out []SpeedSpreadLevel
	for _, l := range s.Levels {
		if l.Steep {
			out = append(out, l)
		}
	}
	return out
}

// SpreadBeyondBand reports whether a figure of rejected 429s that becomes
// faster and slower on a server Margin faster and slower leaves the band
// the what-ifs are checked to (docs/simulate.md): 0.75–1.25 of it, or,
// where fewer than 20 are in question, by more than 10 requests.
func SpreadBeyondBand(rejected, faster, slower int64) bool {
	if max(rejected, slower) < 20 {
		return slower-rejected > 10 || rejected-faster > 10
	}
	r := float64(rejected)
	return float64(faster) < 0.75*r || float64(slower) > 1.25*r
}

// speedSpread replays the change twice more, on a server p.RangeMargin
// faster and one as much slower than res's replay of it (on the CPU
// evidence's model where res's is: BeyondCPU), and returns every level's
// rejections after the change at the three speeds; nil without a change
// or a calibration's tape to replay it from. Levels whose figures are not
// known, or bounded (CPUComparison.RangeOf), are left out: their answer
// is already not one figure.
func speedSpread(ctx context.Context, res *Result, cal *calibrate.Result, rc replayConfigs, p Params) (*SpeedSpread, error) {
	if res.After == nil || rc.after == nil || cal == nil || rc.tape == nil || p.RangeMargin <= 0 {
		return nil, nil
	}
	rc.beyond = res.BeyondCPU != nil
	speed := rc.afterSpeed()
	at := func(s float64) (map[string]int64, error) {
		r, err := replayAfterAt(ctx, cal, rc, s)
		if err != nil {
			return nil, err
		}
		out := map[string]int64{}
		for _, l := range r.After.Levels {
			out[l.Name] = total(l.Rejected)
		}
		return out, nil
	}
	faster, err := at(speed * (1 + p.RangeMargin))
	if err != nil {
		return nil, err
	}
	slower, err := at(speed / (1 + p.RangeMargin))
	if err != nil {
		return nil, err
	}
	s := &SpeedSpread{Margin: p.RangeMargin}
	for _, l := range res.After.Levels {
		if slices.Contains(res.NotKnown, l.Name) {
			continue
		}
		if _, _, bounded := res.CPUComparison.RangeOf(l.Name); bounded {
			continue
		}
		lv := SpeedSpreadLevel{Level: l.Name, Rejected: total(l.Rejected), Faster: faster[l.Name], Slower: slower[l.Name]}
		if lv.Rejected == 0 && lv.Faster == 0 && lv.Slower == 0 {
			continue
		}
		lv.Steep = SpreadBeyondBand(lv.Rejected, min(lv.Faster, lv.Slower), max(lv.Faster, lv.Slower))
		s.Levels = append(s.Levels, lv)
	}
	if len(s.Levels) == 0 {
		return nil, nil
	}
	return s, nil
}

// afterSpeed is the speed of the change's server (ReplayConfig.Speed: 0
// is the recorded server's, 1).
func (rc replayConfigs) afterSpeed() float64 {
	if rc.after.Speed <= 0 {
		return 1
	}
	return rc.after.Speed
}

// replayAfterAt replays rc, prepared by cal, with the change's server at
// speed: the bound's ends and the speed spread.
func replayAfterAt(ctx context.Context, cal *calibrate.Result, rc replayConfigs, speed float64) (*Result, error) {
	a := *rc.after
	a.Speed = speed
	rc.after = &a
	return replayOnce(ctx, cal.Apply(logs.Cancellable(ctx, rc.tape.Reader())), cal, rc)
}
