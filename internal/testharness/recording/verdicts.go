package recording

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// The verdicts on runs: whether a prediction agrees with a re-run, and
// whether a control run met the recorded run's server.

// WhatIfAgrees is the rule a level's predicted 429s are held to against
// the 429s a re-run of the same plan got: within 0.75–1.25 of them when
// either side has 20 or more, else within 10 requests (small counts are
// dominated by noise).
func WhatIfAgrees(predicted, real int64) bool {
	if max(predicted, real) >= 20 {
		ratio := float64(predicted) / float64(max(real, 1))
		return ratio >= 0.75 && ratio <= 1.25
	}
	return predicted-real <= 10 && real-predicted <= 10
}

// NoisierThanTheBand says whether the re-runs of one plan disagree among
// themselves under the band: one of them, against the mean of the others,
// falls outside WhatIfAgrees. Then the band is narrower than the noise of
// the server itself, and no prediction can be held to it.
func NoisierThanTheBand(reals []int64) bool {
	if len(reals) < 3 {
		return false
	}
	for i, r := range reals {
		var sum int64
		for j, o := range reals {
			if j != i {
				sum += o
			}
		}
		others := int64(math.Round(float64(sum) / float64(len(reals)-1)))
		if !WhatIfAgrees(r, others) {
			return true
		}
	}
	return false
}

// WhatIfAgreesRuns is WhatIfAgrees against several re-runs of one plan:
// the prediction agrees with their mean, or, where the re-runs are
// noisier than the band among themselves (NoisierThanTheBand, three
// re-runs or more), it lies within what they measured, from the fewest
// 429s to the most.
func WhatIfAgreesRuns(predicted int64, reals []int64) bool {
	if len(reals) == 0 {
		return false
	}
	var sum int64
	lo, hi := reals[0], reals[0]
	for _, r := range reals {
		sum += r
		lo, hi = min(lo, r), max(hi, r)
	}
	if WhatIfAgrees(predicted, int64(math.Round(float64(sum)/float64(len(reals))))) {
		return true
	}
	return NoisierThanTheBand(reals) && predicted >= lo && predicted <= hi
}

// WhatIfBoundHolds is the verdict on a prediction given as a bound
// (simulate cannot choose a figure without CPU evidence, and bounds it):
// every re-run lies between lo and hi. A bound is a claim about reality,
// not a figure near it: no band around its ends (simulate's
// TestRangeHoldsWithoutEvidence holds the kept recordings to the same).
// With no re-run there is nothing to hold it to: false.
func WhatIfBoundHolds(lo, hi int64, reals []int64) bool {
	for _, r := range reals {
		if r < lo || r > hi {
			return false
		}
	}
	return len(reals) > 0
}

// Levels is the levels that got 429s in any of runs, sorted.
func Levels(runs ...Run) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		for l := range r.Rejected429 {
			if !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	sort.Strings(out)
	return out
}

// SameServer says whether control, a re-run of the recorded configuration
// itself, met the server rec (the recorded run) met: every level's 429s
// within WhatIfAgrees of the recorded ones, kube-apiserver's CPU within
// 0.8–1.25 of the recorded run's, and the machine's speed the same
// (SameSpeed). The cgroups pin the server's share of the machine, not the
// machine's speed: a recording made while something else slowed the
// machine (a neighbour on the host, a build on the same cores) carries
// slower executions and more 429s than the re-runs that follow it will
// meet, whatever the prediction. It returns nil when they agree, else
// what differs.
func SameServer(rec, control Run) error {
	var diff []string
	for _, l := range Levels(rec, control) {
		if r, c := int64(rec.Rejected429[l]), int64(control.Rejected429[l]); !WhatIfAgrees(c, r) {
			diff = append(diff, fmt.Sprintf("%s got %d 429s, the recorded run %d", l, c, r))
		}
	}
	if rec.APIServerCPU > 0 && control.APIServerCPU > 0 {
		if !sameWithin(control.APIServerCPU / rec.APIServerCPU) {
			diff = append(diff, fmt.Sprintf("kube-apiserver used %.3f cores, in the recorded run %.3f", control.APIServerCPU, rec.APIServerCPU))
		}
	}
	diff = append(diff, speedDiff(rec, control)...)
	if len(diff) == 0 {
		return nil
	}
	return fmt.Errorf("a re-run of the recorded configuration did not meet the recorded run's server: %s", strings.Join(diff, "; "))
}
