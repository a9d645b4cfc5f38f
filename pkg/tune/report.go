package tune

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
)

// Report is tune's answer; its JSON is "kubectl apf tune -o json"
// (docs/tune.md).
type Report struct {
	Goal   Goal    `json:"goal"`
	Budget float64 `json:"budget"`
	// Verdict says in one line whether a candidate meets the goal; Why,
	// when none does, why not.
	Verdict string   `json:"verdict"`
	Why     []string `json:"why,omitempty"`
	// Starved are the levels of the protected clients the search is for.
	Starved []string `json:"starved,omitempty"`
	// Clients are the workload's clients in the replay of the recorded
	// configuration, protected ones first.
	Clients []ClientFigures `json:"clients"`
	// Written, Replayed and Pruned count the candidates: written and
	// valid, replayed, and not replayed because their bounds could not
	// enter the first ones shown; Dropped those past --max-candidates,
	// Refused those refused before any replay, by reason.
	Written  int            `json:"written"`
	Replayed int            `json:"replayed"`
	Pruned   int            `json:"pruned"`
	Dropped  int            `json:"dropped,omitempty"`
	Refused  map[string]int `json:"refused,omitempty"`
	// Candidates are the replayed candidates, best first.
	Candidates []*Candidate `json:"candidates"`
	// Baseline is the replay of the recorded configuration (simulate's
	// result, for its fit and calibration); not in the JSON.
	Baseline *simulate.Result `json:"-"`
}

// ClientFigures are one client's figures in the replay of the recorded
// configuration.
type ClientFigures struct {
	Name        string  `json:"name"`
	FlowSchema  string  `json:"flowSchema"`
	Level       string  `json:"level"`
	Protected   bool    `json:"protected"`
	Requests    int64   `json:"requests"`
	Recorded429 int64   `json:"recorded429"`
	SeatSeconds float64 `json:"seatSeconds"`
	figures
}

// Candidate is one configuration change and its replay.
type Candidate struct {
	// ID numbers the candidates as written (stable for a given input),
	// Rank their place, 1 the best.
	ID   int `json:"id"`
	Rank int `json:"rank"`
	// Changes say the change in words, one remedy each; Families name
	// their remedies.
	Changes  []string `json:"changes"`
	Families []string `json:"families"`
	// Objects are the objects it creates or changes.
	Objects []ObjectKey `json:"objects"`
	// SeatsMoved are the seats it gives levels (nominal, or to lend);
	// SharesMoved the nominal shares it adds to levels (those --budget
	// bounds); ObjectsChanged the objects it creates or changes.
	SeatsMoved     int   `json:"seatsMoved"`
	SharesMoved    int64 `json:"sharesMoved"`
	ObjectsChanged int   `json:"objectsChanged"`
	// GoalMet says whether the replay meets the goal; Verified whether it
	// can be trusted: Unverified says why not.
	GoalMet    bool     `json:"goalMet"`
	Verified   bool     `json:"verified"`
	Unverified []string `json:"unverified,omitempty"`
	// Shortfall is the protected clients' 429s above --max-429, and
	// WaitShortfallSeconds their p99 waits above --max-wait, summed.
	Shortfall            int64   `json:"shortfall"`
	WaitShortfallSeconds float64 `json:"waitShortfallSeconds"`
	// Added429 and AddedWaitSeconds are what it adds to the other clients
	// beyond the goal's tolerances: their 429s, and their p99 waits,
	// summed.
	Added429         int64   `json:"added429"`
	AddedWaitSeconds float64 `json:"addedWaitSeconds"`
	// IgnoredAdded429 is the 429s it adds to the clients --ignore names,
	// which the goal does not judge: it ranks candidates that tie on the
	// rest of the goal.
	IgnoredAdded429 int64 `json:"ignoredAdded429,omitempty"`
	// Protected and Others sum the protected clients and the others,
	// before → after.
	Protected Summary `json:"protected"`
	Others    Summary `json:"others"`
	// Levels are every level's figures before → after.
	Levels []LevelChange `json:"levels"`
	// Clients are every client's figures after the change (the order of
	// Report.Clients).
	ClientsAfter []figures `json:"clientsAfter"`
	// Warnings are simulate's warnings for the change.
	Warnings []string `json:"warnings,omitempty"`
	// Slower, for a candidate among the first shown that meets the goal,
	// is how it does on a server 10% slower (checkSlower).
	Slower *SlowerServer `json:"slowerServer,omitempty"`
	// RedundantOf, when set, is the ID of a candidate that changes less
	// (some of this one's changes, or the same numbers moved no further:
	// within) and whose replay does as well by every figure the ranking
	// reads: the further changes buy nothing, and this one ranks after
	// every candidate that buys something (a remedy paired with one that
	// changes nothing would otherwise fill the first ranks beside the
	// remedy alone).
	RedundantOf int `json:"redundantOf,omitempty"`
	// NoEffect says that the candidate misses the goal and does no better
	// than the replay of the recorded configuration by any figure the
	// ranking reads (the protected clients' and the others' 429s and
	// worst p99 waits): the change buys nothing, and it ranks after every
	// candidate that buys something.
	NoEffect bool `json:"noEffect,omitempty"`

	config  *engine.Config
	objects []runtime.Object
	touched []string
	// steps are each change's numbers (edit.steps), nil for one that
	// moves no number alone
	steps [][]step
}

// RuntimeObjects are the objects to apply.
func (c *Candidate) RuntimeObjects() []runtime.Object { return c.objects }

// Config is the changed configuration.
func (c *Candidate) Config() *engine.Config { return c.config }

// Summary sums clients before → after.
type Summary struct {
	Clients        int      `json:"clients"`
	RejectedBefore int64    `json:"rejectedBefore"`
	RejectedAfter  int64    `json:"rejectedAfter"`
	WorstP99Before *float64 `json:"worstWaitP99SecondsBefore"`
	WorstP99After  *float64 `json:"worstWaitP99SecondsAfter"`
}

// LevelChange is one level before → after.
type LevelChange struct {
	Name               string   `json:"name"`
	NominalSeatsBefore *int     `json:"nominalSeatsBefore"`
	NominalSeatsAfter  *int     `json:"nominalSeatsAfter"`
	RejectedBefore     int64    `json:"rejectedBefore"`
	RejectedAfter      int64    `json:"rejectedAfter"`
	WaitP99Before      *float64 `json:"waitP99SecondsBefore"`
	WaitP99After       *float64 `json:"waitP99SecondsAfter"`
}

// scorer scores a replay against the goal.
type scorer struct {
	goal   Goal
	before []figures
	prot   map[int]bool
	// ignored are the other clients the goal does not judge (--ignore)
	ignored map[int]bool
	cen     *census
	fit     map[string]string
	scl     int
	// seats are the recorded configuration's nominal seats per level
	seats map[string]int
}

func (s *scorer) score(c *Candidate, res *simulate.Result, t *tally) {
	after := t.figures(len(s.cen.clients))
	c.ClientsAfter = after
	g := s.goal
	for i, b := range s.before {
		a := after[i]
		sum := &c.Others
		if s.prot[i] {
			sum = &c.Protected
			c.Shortfall += max(0, a.Rejected-g.Max429)
			if g.MaxWait > 0 && a.WaitP99Seconds != nil && *a.WaitP99Seconds > g.MaxWait.Seconds() {
				c.WaitShortfallSeconds += *a.WaitP99Seconds - g.MaxWait.Seconds()
			}
		} else if s.ignored[i] {
			c.IgnoredAdded429 += max(0, a.Rejected-b.Rejected)
		} else {
			if g.RejectTolerance.more(b.Rejected, a.Rejected) {
				c.Added429 += a.Rejected - b.Rejected
			}
			if b.WaitP99Seconds != nil && a.WaitP99Seconds != nil && g.WaitTolerance.longer(*b.WaitP99Seconds, *a.WaitP99Seconds) {
				c.AddedWaitSeconds += *a.WaitP99Seconds - *b.WaitP99Seconds
			}
		}
		sum.Clients++
		sum.RejectedBefore += b.Rejected
		sum.RejectedAfter += a.Rejected
		sum.WorstP99Before = maxp(sum.WorstP99Before, b.WaitP99Seconds)
		sum.WorstP99After = maxp(sum.WorstP99After, a.WaitP99Seconds)
	}
	c.GoalMet = c.Shortfall == 0 && c.WaitShortfallSeconds == 0 && c.Added429 == 0 && c.AddedWaitSeconds == 0
	for _, w := range res.Warnings {
		c.Warnings = append(c.Warnings, w.Text)
		c.Unverified = append(c.Unverified, fmt.Sprintf("leaves the calibrated regime (%s, %s)", w.Kind, w.Level))
	}
	for _, l := range c.touched {
		if q := s.fit[l]; q == "poor" {
			c.Unverified = append(c.Unverified, fmt.Sprintf("touches %s, whose recorded 429s the replay reproduces poorly", l))
		}
	}
	c.Verified = len(c.Unverified) == 0
	c.Levels = levelChanges(res, s.scl, c.config)
	for i := range c.Levels {
		if n, ok := s.seats[c.Levels[i].Name]; ok {
			c.Levels[i].NominalSeatsBefore = &n
		}
	}
}

func maxp(a, b *float64) *float64 {
	if b == nil {
		return a
	}
	if a == nil || *b > *a {
		v := *b
		return &v
	}
	return a
}

func levelChanges(res *simulate.Result, scl int, after *engine.Config) []LevelChange {
	if scl == 0 {
		scl = res.ServerConcurrencyLimit
	}
	bl, al := levelTotals(res.Levels), map[string]bool{}
	seatsAfter := map[string]int{}
	for _, l := range after.Limits(scl) {
		seatsAfter[l.Name] = l.NominalCL
	}
	var out []LevelChange
	add := func(name string) {
		lc := LevelChange{Name: name}
		if b, ok := bl[name]; ok {
			lc.RejectedBefore = total(b.Rejected)
			if b.Dispatched > 0 {
				lc.WaitP99Before = ptrf(b.WaitP99Seconds)
			}
		}
		if res.After != nil {
			for _, a := range res.After.Levels {
				if a.Name == name {
					lc.RejectedAfter = total(a.Rejected)
					if a.Dispatched > 0 {
						lc.WaitP99After = ptrf(a.WaitP99Seconds)
					}
				}
			}
		}
		if n, ok := seatsAfter[name]; ok {
			lc.NominalSeatsAfter = &n
		}
		out = append(out, lc)
	}
	for _, l := range res.Levels {
		al[l.Name] = true
		add(l.Name)
	}
	if res.After != nil {
		for _, l := range res.After.Levels {
			if !al[l.Name] {
				add(l.Name)
			}
		}
	}
	return out
}

func ptrf(v float64) *float64 { return &v }

// fitQuality is the fit's quality per level of the recorded replay.
func fitQuality(r *simulate.Result) map[string]string {
	m := map[string]string{}
	if r == nil {
		return m
	}
	for _, f := range r.Fit {
		m[f.Level] = f.Quality
	}
	return m
}

// tier orders the candidates: verified ones that meet the goal, then
// verified ones that do not, then the unverified: an unverified candidate
// is never ranked above a verified one.
func tier(c *Candidate) int {
	switch {
	case c.Verified && c.GoalMet:
		return 0
	case c.Verified:
		return 1
	case c.GoalMet:
		return 2
	}
	return 3
}

// less ranks a before b: by tier, then (for those that miss the goal) by
// how far they miss it, the 429s and the wait they add to the others,
// the seats they move, the objects they change, the 429s they add to
// the clients --ignore names, and their ID.
func less(a, b *Candidate) bool {
	if ta, tb := tier(a), tier(b); ta != tb {
		return ta < tb
	}
	if a.Shortfall != b.Shortfall {
		return a.Shortfall < b.Shortfall
	}
	if a.WaitShortfallSeconds != b.WaitShortfallSeconds {
		return a.WaitShortfallSeconds < b.WaitShortfallSeconds
	}
	if a.Added429 != b.Added429 {
		return a.Added429 < b.Added429
	}
	if a.AddedWaitSeconds != b.AddedWaitSeconds {
		return a.AddedWaitSeconds < b.AddedWaitSeconds
	}
	if a.SeatsMoved != b.SeatsMoved {
		return a.SeatsMoved < b.SeatsMoved
	}
	if a.ObjectsChanged != b.ObjectsChanged {
		return a.ObjectsChanged < b.ObjectsChanged
	}
	if a.IgnoredAdded429 != b.IgnoredAdded429 {
		return a.IgnoredAdded429 < b.IgnoredAdded429
	}
	return a.ID < b.ID
}

func rank(cs []*Candidate) {
	markRedundant(cs)
	sort.SliceStable(cs, func(i, j int) bool {
		if ri, rj := cs[i].buysNothing(), cs[j].buysNothing(); ri != rj {
			return rj
		}
		return less(cs[i], cs[j])
	})
	for i, c := range cs {
		c.Rank = i + 1
	}
}

// markRedundant sets each candidate's RedundantOf: the best of the
// candidates that change less than it (within) and that it does no better
// than.
func markRedundant(cs []*Candidate) {
	for _, c := range cs {
		p, o := c.Protected, c.Others
		c.NoEffect = !c.GoalMet && p.RejectedAfter >= p.RejectedBefore && o.RejectedAfter >= o.RejectedBefore &&
			noShorter(p.WorstP99After, p.WorstP99Before) && noShorter(o.WorstP99After, o.WorstP99Before)
	}
	for _, c := range cs {
		c.RedundantOf = 0
		var best *Candidate
		for _, d := range cs {
			if d != c && d.within(c) && noBetter(c, d) && (best == nil || less(d, best)) {
				best = d
			}
		}
		if best != nil {
			c.RedundantOf = best.ID
		}
	}
}

// within says whether d changes less than c: each of d's changes is one
// of c's, or a smaller step of the same knobs (borrowingLimitPercent
// 0→200 of 0→400), and d has fewer changes or a smaller step.
func (d *Candidate) within(c *Candidate) bool {
	if len(d.Changes) > len(c.Changes) {
		return false
	}
	used := make([]bool, len(c.Changes))
	fewer := len(d.Changes) < len(c.Changes)
	for i, dc := range d.Changes {
		found := false
		for j, cc := range c.Changes {
			if used[j] {
				continue
			}
			if dc == cc {
				used[j], found = true, true
				break
			}
			if i < len(d.steps) && j < len(c.steps) && stepsWithin(d.steps[i], c.steps[j]) {
				used[j], found, fewer = true, true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return fewer
}

// stepsWithin says whether the steps a move the knobs of b, each no
// further.
func stepsWithin(a, b []step) bool {
	if len(a) == 0 || len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].within(b[i]) {
			return false
		}
	}
	return true
}

// buysNothing says whether c ranks after every candidate that buys
// something: it changes nothing the ranking reads, or another candidate
// does as well changing less.
func (c *Candidate) buysNothing() bool { return c.NoEffect || c.RedundantOf != 0 }

// noBetter says whether c does no better than d by every figure the
// ranking reads, and moves no fewer seats and objects.
func noBetter(c, d *Candidate) bool {
	return tier(c) >= tier(d) && c.Shortfall >= d.Shortfall && c.WaitShortfallSeconds >= d.WaitShortfallSeconds &&
		c.Added429 >= d.Added429 && c.AddedWaitSeconds >= d.AddedWaitSeconds && c.IgnoredAdded429 >= d.IgnoredAdded429 &&
		c.Protected.RejectedAfter >= d.Protected.RejectedAfter && c.Others.RejectedAfter >= d.Others.RejectedAfter &&
		noShorter(c.Protected.WorstP99After, d.Protected.WorstP99After) && noShorter(c.Others.WorstP99After, d.Others.WorstP99After) &&
		c.SeatsMoved >= d.SeatsMoved && c.ObjectsChanged >= d.ObjectsChanged
}

// noShorter says whether wait a is no shorter than b; an absent wait is
// comparable only to an absent one.
func noShorter(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a >= *b
}

func describeClients(cen *census, before []figures, prot map[int]bool) []ClientFigures {
	out := make([]ClientFigures, len(cen.clients))
	for i, c := range cen.clients {
		out[i] = ClientFigures{Name: c.Name(), FlowSchema: c.FlowSchema, Level: c.Level, Protected: prot[i], Requests: c.Requests, Recorded429: c.Recorded429, SeatSeconds: c.SeatSeconds, figures: before[i]}
	}
	return out
}

// seatFamilies are the remedies that give the starved levels seats.
var seatFamilies = []string{FamilyShares, FamilyBorrowing, FamilyLending}

// verdict says whether a candidate meets the goal and, when none does,
// why not.
func verdict(rep *Report, w *world, base *simulate.Result, sc *scorer) (string, []string) {
	if len(rep.Candidates) == 0 {
		why := []string{"no candidate could be written: " + refusedText(rep.Refused)}
		return "no candidate to replay", why
	}
	first := rep.Candidates[0]
	var protBefore int64
	for i := range sc.prot {
		protBefore += sc.before[i].Rejected
	}
	if first.GoalMet && first.Verified {
		others := "the others"
		if len(sc.ignored) > 0 {
			others += " (but those --ignore names)"
		}
		v := fmt.Sprintf("candidate %d meets the goal: the protected clients' 429s %d → %d, nothing added to %s", first.ID, protBefore, first.Protected.RejectedAfter, others)
		if s := first.Slower; s != nil && !s.GoalMet {
			// it met the goal at the recorded speed alone: name the first
			// one shown that has that much room
			line := fmt.Sprintf("but not on a server %.0f%% slower (two runs of one server differ about so), where the protected clients keep %d 429s", 100*s.Margin, s.ProtectedRejected)
			room := slices.IndexFunc(rep.Candidates, func(c *Candidate) bool { return c.Slower != nil && c.Slower.GoalMet })
			if room >= 0 {
				c := rep.Candidates[room]
				line += fmt.Sprintf("; candidate %d (#%d: %s) meets it there too", c.ID, c.Rank, strings.Join(c.Changes, "; "))
			} else {
				line += "; none of the candidates shown meets it there"
			}
			return v, []string{line}
		}
		return v, nil
	}
	var why []string
	for _, c := range rep.Candidates {
		if c.GoalMet && !c.Verified {
			why = append(why, fmt.Sprintf("candidate %d meets the goal in the replay but is unverified: %s", c.ID, strings.Join(c.Unverified, "; ")))
			break
		}
	}
	// the most seats the search gave a starved level, and what they bought
	var best *Candidate
	for _, c := range rep.Candidates {
		if !slices.ContainsFunc(c.Families, func(f string) bool { return slices.Contains(seatFamilies, f) }) || slices.Contains(c.Families, FamilyIsolate) || slices.Contains(c.Families, FamilyMove) {
			continue
		}
		if best == nil || c.Protected.RejectedAfter < best.Protected.RejectedAfter || (c.Protected.RejectedAfter == best.Protected.RejectedAfter && c.SeatsMoved > best.SeatsMoved) {
			best = c
		}
	}
	short := shortOfCPU(base, w.starved)
	if best != nil && protBefore > 0 {
		gain := float64(protBefore-best.Protected.RejectedAfter) / float64(protBefore)
		if gain < 0.10 {
			line := fmt.Sprintf("more seats buy nothing: the best of the candidates that give %s seats (candidate %d: %s) leaves the protected clients %d of their %d 429s",
				strings.Join(w.starved, ", "), best.ID, strings.Join(best.Changes, "; "), best.Protected.RejectedAfter, protBefore)
			if short != "" {
				line += "; the server was short of CPU (" + short + "): give kube-apiserver more CPU, or send it less, rather than seats"
			}
			why = append(why, line)
		}
	}
	if n := rep.Refused["beyond --budget"]; n > 0 {
		why = append(why, fmt.Sprintf("%d candidates moved more than --budget %.2f of the shares and were not replayed", n, rep.Budget))
	}
	if tier(first) == 1 {
		why = append(why, fmt.Sprintf("the closest, candidate %d, leaves the protected clients %d 429s and adds %d to the others", first.ID, first.Protected.RejectedAfter, first.Added429))
	}
	if !first.Verified {
		return "no verified candidate meets the goal; every candidate is unverified", why
	}
	return "no verified candidate meets the goal", why
}

// shortOfCPU says how the calibration found the server short of CPU on
// one of levels, "" when it did not.
func shortOfCPU(base *simulate.Result, levels []string) string {
	if base == nil || base.Calibration == nil {
		return ""
	}
	cal := base.Calibration
	var parts []string
	for _, l := range cal.Levels {
		if l.ShortOfCPU && slices.Contains(levels, l.Level) {
			parts = append(parts, fmt.Sprintf("%s: %d executions stalled, %.0f%% of its execution time", l.Level, l.Stalls, 100*l.StallShare))
		}
	}
	if cal.Shared != nil {
		parts = append(parts, fmt.Sprintf("its executions stretched with the requests in flight, up to %d at once", cal.Shared.MaxInFlight))
	}
	if cal.CPU != nil {
		parts = append(parts, "its CPU limit's quota throttled it")
	}
	return strings.Join(parts, "; ")
}

func refusedText(m map[string]int) string {
	if len(m) == 0 {
		return "the incident names no level or client a remedy applies to"
	}
	var parts []string
	for _, k := range slices.Sorted(mapsKeys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

func mapsKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
