package simulate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// noiseFloor gathers the what-if figures of the kept recordings by
// scenario (recording.Result.Scenario, the seeds of one scenario
// together), what-if and level, to
// say how close the re-runs' own noise lets a prediction come: a what-if
// re-run on fresh servers gives another count each time (the garbage
// collector's timing, the machine's speed), and a prediction that knew
// the true mean would still miss the mean of a recording's few re-runs by
// their spread over the square root of their number. TestSimulateRecordings
// reports the floor beside the predictions' own mean |log(predicted /
// re-runs' mean)|; where the two are near, a change to the model cannot
// show on these recordings.
type noiseFloor map[noiseKey][]noiseFigure

type noiseKey struct{ scenario, whatIf, level string }

// noiseFigure is one recording's what-if of a level: its re-runs' 429s and
// the predictions from httplog + audit and from the audit log alone (0
// where simulate gives none: a bound, or a figure it says is not known).
type noiseFigure struct {
	runs        []int64
	pred, audit int64
}

func (nf noiseFloor) add(scenario, whatIf, level string, runs []int64, pred, audit int64) {
	k := noiseKey{scenario, whatIf, level}
	nf[k] = append(nf[k], noiseFigure{runs: runs, pred: pred, audit: audit})
}

// noiseRow is one scenario's what-if of a level: how many recordings, the
// mean number of re-runs each, the spread of one re-run (the standard
// deviation of log(429s) within a recording's re-runs, pooled over the
// recordings), the floor (the mean |log| by which the true mean misses the
// mean of that many re-runs, √(2/π) · spread / √re-runs, as for a normal
// spread), and the predictions' mean |log(predicted / re-runs' mean)|.
type noiseRow struct {
	noiseKey
	recordings          int
	reruns              float64
	spread, floor       float64
	fromBoth, fromAudit float64
}

// rows are the scenarios' what-ifs with two re-runs or more on two
// recordings or more, every re-run and prediction above 0 (the log of 0 is
// none).
func (nf noiseFloor) rows() []noiseRow {
	var out []noiseRow
	for k, figs := range nf {
		var ss, df, reruns, obs, aud float64
		n := 0
		for _, f := range figs {
			if len(f.runs) < 2 || f.pred <= 0 || f.audit <= 0 || slices.Min(f.runs) <= 0 {
				continue
			}
			var mean, lmean float64
			for _, r := range f.runs {
				mean += float64(r) / float64(len(f.runs))
				lmean += math.Log(float64(r)) / float64(len(f.runs))
			}
			for _, r := range f.runs {
				ss += (math.Log(float64(r)) - lmean) * (math.Log(float64(r)) - lmean)
			}
			df += float64(len(f.runs) - 1)
			reruns += float64(len(f.runs))
			obs += math.Abs(math.Log(float64(f.pred) / mean))
			aud += math.Abs(math.Log(float64(f.audit) / mean))
			n++
		}
		if n < 2 {
			continue
		}
		spread := math.Sqrt(ss / df)
		reruns /= float64(n)
		out = append(out, noiseRow{noiseKey: k, recordings: n, reruns: reruns, spread: spread,
			floor: math.Sqrt(2/math.Pi) * spread / math.Sqrt(reruns), fromBoth: obs / float64(n), fromAudit: aud / float64(n)})
	}
	slices.SortFunc(out, func(a, b noiseRow) int {
		return cmp.Or(strings.Compare(a.scenario, b.scenario), strings.Compare(a.whatIf, b.whatIf), strings.Compare(a.level, b.level))
	})
	return out
}

// report is the floor's table, as TestSimulateRecordings prints it.
func (nf noiseFloor) report() []string {
	out := []string{"== the re-runs' own noise: how close a prediction of the true mean would come to the re-runs' mean (floor), against the predictions (mean |log(predicted / re-runs' mean)|)"}
	for _, r := range nf.rows() {
		out = append(out, fmt.Sprintf("  %-18s %-16s %2d recordings, %.1f re-runs each, one re-run spread %.3f: floor %.3f; predicted from httplog + audit %.3f, from the audit log alone %.3f  (%s)",
			r.scenario, r.level, r.recordings, r.reruns, r.spread, r.floor, r.fromBoth, r.fromAudit, r.whatIf))
	}
	return out
}

// TestNoiseFloorOfTwoRecordings: two recordings whose re-runs got 100 and
// 121 429s: log(121/100) = 0.1906, each run 0.0953 from its recording's
// mean log, so one re-run spreads √(4 · 0.0953² / 2) = 0.1348 and the mean
// of two misses the true one by √(2/π) · 0.1348 / √2 = 0.0760 on average.
// Predictions of 110 and 100 for the mean 110.5 miss it by 0.0045 and
// 0.0998. A recording with one re-run, or a 0, tells no spread and is left
// out; a what-if of one recording is no row.
func TestNoiseFloorOfTwoRecordings(t *testing.T) {
	nf := noiseFloor{}
	nf.add("starved", "queues", "apf-load", []int64{100, 121}, 110, 100)
	nf.add("starved", "queues", "apf-load", []int64{121, 100}, 100, 110)
	nf.add("starved", "queues", "apf-load", []int64{100}, 100, 100)
	nf.add("starved", "queues", "apf-load", []int64{0, 100}, 50, 50)
	nf.add("crowded", "queues", "tiny", []int64{100, 121}, 110, 110)
	rows := nf.rows()
	if len(rows) != 1 {
		t.Fatalf("rows %+v, want one (starved's)", rows)
	}
	r := rows[0]
	near := func(a, b float64) bool { return math.Abs(a-b) < 5e-4 }
	wantObs := (math.Abs(math.Log(110/110.5)) + math.Abs(math.Log(100/110.5))) / 2
	if r.scenario != "starved" || r.recordings != 2 || r.reruns != 2 || !near(r.spread, 0.1348) || !near(r.floor, 0.0760) || !near(r.fromBoth, wantObs) || !near(r.fromAudit, wantObs) {
		t.Errorf("row %+v, want starved: 2 recordings, 2 re-runs, spread 0.1348, floor 0.0760, observed %.4f from both", r, wantObs)
	}
}
