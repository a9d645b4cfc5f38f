package tune

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
)

// Replayer replays configurations over a prepared workload
// (simulate.Prepared).
type Replayer interface {
	Replay(ctx context.Context, c *engine.Config, newObserver func() simulate.Observer) (*simulate.Result, simulate.Observer, error)
	// ReplayAt is Replay on a server that runs at speed against the
	// recorded one.
	ReplayAt(ctx context.Context, c *engine.Config, speed float64, newObserver func() simulate.Observer) (*simulate.Result, simulate.Observer, error)
	Baseline() *simulate.Result
}

// Input is the recorded configuration and server.
type Input struct {
	FlowSchemas    []*flowcontrolv1.FlowSchema
	PriorityLevels []*flowcontrolv1.PriorityLevelConfiguration
	Release        engine.Release
	// ServerConcurrency is the server's concurrency limit.
	ServerConcurrency int
}

// Options tune the search.
type Options struct {
	Goal Goal
	// Keep are the objects no candidate may change.
	Keep []ObjectKey
	// Budget is the largest share of the total nominal shares a
	// candidate may move between levels (0.5: half); 0 means
	// DefaultBudget.
	Budget float64
	// MaxCandidates bounds the candidates replayed (0: DefaultMaxCandidates).
	MaxCandidates int
	// Parallel bounds the replays run at once (0: GOMAXPROCS).
	Parallel int
	// NoPrune replays every candidate, even those that cannot enter the
	// first Show.
	NoPrune bool
	// Show is how many of the best candidates the ranking must get
	// right (the others may be pruned); 0: DefaultShow.
	Show int
	// Progress, if set, is called after every replay with the candidates
	// replayed or pruned so far, and their total.
	Progress func(done, total int)
}

// The defaults of Options.
const (
	DefaultBudget        = 0.5
	DefaultMaxCandidates = 400
	DefaultShow          = 5
	// Wave is how many candidates are replayed between two pruning
	// decisions: fixed, so that what is pruned does not depend on the
	// machine's cores.
	Wave = 8
)

// Search writes the candidates, replays them and ranks them.
func Search(ctx context.Context, rp Replayer, in Input, opts Options) (*Report, error) {
	if opts.Budget == 0 {
		opts.Budget = DefaultBudget
	}
	if opts.MaxCandidates == 0 {
		opts.MaxCandidates = DefaultMaxCandidates
	}
	if opts.Show == 0 {
		opts.Show = DefaultShow
	}
	if opts.Parallel <= 0 {
		opts.Parallel = runtime.GOMAXPROCS(0)
	}
	if opts.Goal.WaitTolerance == (WaitTolerance{}) {
		opts.Goal.WaitTolerance = DefaultWaitTolerance
	}
	if opts.Goal.RejectTolerance == (RejectTolerance{}) {
		opts.Goal.RejectTolerance = DefaultRejectTolerance
	}
	recorded := engine.NewConfig(in.FlowSchemas, in.PriorityLevels)
	// the census: the clients, in the replay of the recorded configuration
	baseRes, obs, err := rp.Replay(ctx, recorded, func() simulate.Observer { return newCensusObserver(recorded) })
	if err != nil {
		return nil, err
	}
	co := obs.(*censusObserver)
	cen := co.c
	before := co.t.figures(len(cen.clients))
	rep := &Report{Goal: opts.Goal, Budget: opts.Budget, Baseline: rp.Baseline()}
	prot := protectedSet(cen, before, opts.Goal)
	if len(opts.Goal.Protect) > 0 && len(prot) == 0 {
		return nil, fmt.Errorf("--protect %s names no client of the workload", joinTargets(opts.Goal.Protect))
	}
	ignored, err := ignoredSet(cen, opts.Goal, prot)
	if err != nil {
		return nil, err
	}
	w := newWorld(in, recorded, baseRes, cen, before, prot)
	ck := newChecker(w, in.Release, opts.Keep)
	w.fixed = ck.fixed
	rep.Clients = describeClients(cen, before, prot)
	if len(prot) == 0 {
		rep.Verdict = "nothing to tune: no client was answered 429 in the recorded incident, nor in its replay"
		return rep, nil
	}
	rep.Starved = w.starved
	cands, refused := w.candidates(ck, opts)
	rep.Refused = refused
	if len(cands) > opts.MaxCandidates {
		rep.Dropped = len(cands) - opts.MaxCandidates
		cands = cands[:opts.MaxCandidates]
	}
	rep.Written = len(cands)
	sc := &scorer{goal: opts.Goal, before: before, prot: prot, ignored: ignored, cen: cen, fit: fitQuality(rp.Baseline()), scl: w.scl, seats: map[string]int{}}
	for n, l := range w.limits {
		sc.seats[n] = l.NominalCL
	}
	if err := replayAll(ctx, rp, cands, sc, opts, rep); err != nil {
		return nil, err
	}
	rank(rep.Candidates)
	if err := checkSlower(ctx, rp, rep.Candidates, sc, opts); err != nil {
		return nil, err
	}
	rep.Verdict, rep.Why = verdict(rep, w, rp.Baseline(), sc)
	return rep, nil
}

// SlowerServer is how a candidate that meets the goal does on a server
// Margin slower than the recorded one: a recording fixes the server's
// speed on its own day, and two runs of one server differ about so
// (simulate.Params.RangeMargin). A candidate that meets the goal there
// too has that much room; one that misses it met the goal only at the
// recorded speed.
type SlowerServer struct {
	Margin  float64 `json:"margin"`
	GoalMet bool    `json:"goalMet"`
	// Shortfall, WaitShortfallSeconds, Added429 and AddedWaitSeconds are
	// the candidate's figures of the same names on that server.
	Shortfall            int64   `json:"shortfall"`
	WaitShortfallSeconds float64 `json:"waitShortfallSeconds"`
	Added429             int64   `json:"added429"`
	AddedWaitSeconds     float64 `json:"addedWaitSeconds"`
	// ProtectedRejected is the protected clients' 429s there.
	ProtectedRejected int64 `json:"protectedRejected"`
}

// checkSlower replays each of the first opts.Show ranked candidates that
// meet the goal on a server simulate's RangeMargin slower, and says how it
// does there (Candidate.Slower).
func checkSlower(ctx context.Context, rp Replayer, ranked []*Candidate, sc *scorer, opts Options) error {
	margin := simulate.DefaultParams().RangeMargin
	for _, c := range ranked[:min(opts.Show, len(ranked))] {
		if !c.GoalMet {
			continue
		}
		res, obs, err := rp.ReplayAt(ctx, c.config, 1/(1+margin), func() simulate.Observer { return newTally(sc.cen) })
		if err != nil {
			return fmt.Errorf("candidate %d on a slower server: %w", c.ID, err)
		}
		there := &Candidate{config: c.config, touched: c.touched}
		sc.score(there, res, obs.(*tally))
		c.Slower = &SlowerServer{Margin: margin, GoalMet: there.GoalMet, Shortfall: there.Shortfall, WaitShortfallSeconds: there.WaitShortfallSeconds,
			Added429: there.Added429, AddedWaitSeconds: there.AddedWaitSeconds, ProtectedRejected: there.Protected.RejectedAfter}
	}
	return nil
}

func joinTargets(ts []Target) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.String())
	}
	return strings.Join(s, ", ")
}

// protectedSet returns the indexes of the protected clients: those the
// targets name or, without targets, those the server answered 429 (or,
// when the workload records no status, those its replay rejected).
func protectedSet(cen *census, before []figures, g Goal) map[int]bool {
	out := map[int]bool{}
	for i, c := range cen.clients {
		switch {
		case len(g.Protect) > 0:
			if slices.ContainsFunc(g.Protect, c.matches) {
				out[i] = true
			}
		case cen.anyStatus:
			if c.Recorded429 > 0 {
				out[i] = true
			}
		default:
			if before[i].Rejected > 0 {
				out[i] = true
			}
		}
	}
	return out
}

// ignoredSet returns the indexes of the clients --ignore names; it is an
// error when a target names no client of the workload, or only protected
// ones.
func ignoredSet(cen *census, g Goal, prot map[int]bool) (map[int]bool, error) {
	out := map[int]bool{}
	for _, t := range g.Ignore {
		found, other := false, false
		for i, c := range cen.clients {
			if c.matches(t) {
				found = true
				if !prot[i] {
					other = true
					out[i] = true
				}
			}
		}
		switch {
		case !found:
			return nil, fmt.Errorf("--ignore %s names no client of the workload", t)
		case !other:
			return nil, fmt.Errorf("--ignore %s names only protected clients", t)
		}
	}
	return out, nil
}

// newWorld finds the starved levels and the clients that held their seats.
func newWorld(in Input, recorded *engine.Config, base *simulate.Result, cen *census, before []figures, prot map[int]bool) *world {
	w := &world{fs: in.FlowSchemas, pl: in.PriorityLevels, cfg: recorded, scl: in.ServerConcurrency, limits: map[string]engine.LevelLimits{},
		peak: map[string]int{}, rejected: map[string]int64{}, noisy: map[string][]*client{}, clients: cen.clients}
	if w.scl == 0 {
		w.scl = engine.DefaultServerConcurrencyLimit
	}
	for _, l := range recorded.Limits(w.scl) {
		w.limits[l.Name] = l
	}
	levels := base.Levels
	if base.After != nil {
		levels = base.After.Levels
	}
	for _, l := range levels {
		w.peak[l.Name] = l.PeakSeatsInUse
		w.rejected[l.Name] = total(l.Rejected)
	}
	hurt := map[string]int64{}
	for i := range prot {
		c := cen.clients[i]
		hurt[c.Level] += before[i].Rejected + c.Recorded429 + 1
	}
	w.starved = slices.Collect(maps.Keys(hurt))
	sort.Slice(w.starved, func(a, b int) bool {
		if hurt[w.starved[a]] != hurt[w.starved[b]] {
			return hurt[w.starved[a]] > hurt[w.starved[b]]
		}
		return w.starved[a] < w.starved[b]
	})
	if len(w.starved) > 2 {
		w.starved = w.starved[:2]
	}
	for _, level := range w.starved {
		for _, i := range sortedClients(cen.clients, func(c *client) bool { return c.Level == level && c.User != "" }) {
			if !prot[i] || len(prot) > 1 {
				// with several protected clients on the level, the
				// heaviest of them may be the one to route away
				w.noisy[level] = append(w.noisy[level], cen.clients[i])
			}
		}
	}
	return w
}

func total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// candidates writes the single remedies and their pairs, checks them and
// orders them by what they cost before any replay: the seats they move,
// then the objects they change, then the order written.
func (w *world) candidates(ck *checker, opts Options) ([]*Candidate, map[string]int) {
	singles := w.remedies()
	var combos [][]edit
	for _, e := range singles {
		combos = append(combos, []edit{e})
	}
	for i := range singles {
		for j := i + 1; j < len(singles); j++ {
			if compatible(singles[i], singles[j]) {
				combos = append(combos, []edit{singles[i], singles[j]})
			}
		}
	}
	refused := map[string]int{}
	seen := map[string]bool{}
	var out []*Candidate
	for _, es := range combos {
		d := newDraft(w)
		failed := false
		for _, e := range es {
			if err := e.apply(d); err != nil {
				failed = true
				break
			}
		}
		if failed {
			refused["conflicting remedies"]++
			continue
		}
		why, objs := ck.check(d)
		if why != "" {
			refused[refusalKind(why)]++
			continue
		}
		c := &Candidate{config: engine.NewConfig(d.fs, d.pl), objects: objs}
		for _, e := range es {
			c.Changes = append(c.Changes, e.words)
			c.Families = append(c.Families, e.family)
			c.steps = append(c.steps, e.steps)
		}
		key := c.yamlKey()
		if seen[key] {
			refused["the same objects as another candidate"]++
			continue
		}
		seen[key] = true
		c.SeatsMoved, c.SharesMoved = w.moved(c.config)
		if float64(c.SharesMoved) > opts.Budget*float64(w.totalShares()) {
			refused["beyond --budget"]++
			continue
		}
		c.ObjectsChanged = len(objs)
		for _, o := range objs {
			c.Objects = append(c.Objects, objectKey(o))
		}
		c.touched = w.touched(d, c.config)
		out = append(out, c)
	}
	sort.SliceStable(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.SeatsMoved != y.SeatsMoved {
			return x.SeatsMoved < y.SeatsMoved
		}
		return x.ObjectsChanged < y.ObjectsChanged
	})
	for i, c := range out {
		c.ID = i + 1
	}
	return out, refused
}

func refusalKind(why string) string {
	switch {
	case strings.HasPrefix(why, "lint: "):
		return "a new lint finding (" + strings.Fields(strings.TrimPrefix(why, "lint: "))[0] + ")"
	case strings.HasPrefix(why, "changes "):
		_, reason, _ := strings.Cut(why, "(")
		return "changes an object it may not (" + reason
	}
	return why
}

// yamlKey is the candidate's objects as text, to tell two alike.
func (c *Candidate) yamlKey() string {
	var b strings.Builder
	for _, o := range c.objects {
		y, _ := yaml.Marshal(o)
		b.Write(y)
	}
	return b.String()
}

// moved returns the seats a configuration gives levels, nominal or to
// lend, over the recorded one, and the shares it moves.
func (w *world) moved(c *engine.Config) (seats int, shares int64) {
	for _, l := range c.Limits(w.scl) {
		if l.Exempt {
			continue
		}
		o := w.limits[l.Name]
		seats += max(0, l.NominalCL-o.NominalCL) + max(0, l.LendableCL-o.LendableCL)
		shares += int64(max(0, l.Shares-o.Shares))
	}
	return seats, shares
}

// touched are the levels a candidate changes or sends other traffic to.
func (w *world) touched(d *draft, c *engine.Config) []string {
	set := map[string]bool{}
	for k := range d.changed {
		switch k.Kind {
		case KindPriorityLevel:
			set[k.Name] = true
		case KindFlowSchema:
			for _, fs := range d.fs {
				if fs.Name == k.Name {
					set[fs.Spec.PriorityLevelConfiguration.Name] = true
				}
			}
			for _, fs := range w.fs {
				if fs.Name == k.Name {
					set[fs.Spec.PriorityLevelConfiguration.Name] = true
				}
			}
		}
	}
	for _, s := range w.starved {
		set[s] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// replayAll replays the candidates, Wave at a time, at most opts.Parallel
// at once, pruning before each wave those that cannot enter the first
// opts.Show. Without pruning there is nothing to decide between two
// waves: every candidate is one wave, so that no replay waits for the
// slowest of its wave before the next starts.
func replayAll(ctx context.Context, rp Replayer, cands []*Candidate, sc *scorer, opts Options, rep *Report) error {
	done := 0
	step := Wave
	if opts.NoPrune {
		step = max(len(cands), 1)
	}
	for start := 0; start < len(cands); start += step {
		wave := cands[start:min(start+step, len(cands))]
		var todo []*Candidate
		for _, c := range wave {
			if !opts.NoPrune && cannotWin(c, rep.Candidates, opts.Show) {
				rep.Pruned++
				done++
				continue
			}
			todo = append(todo, c)
		}
		sem := make(chan struct{}, opts.Parallel)
		errs := make([]error, len(todo))
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i, c := range todo {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				res, obs, err := rp.Replay(ctx, c.config, func() simulate.Observer { return newTally(sc.cen) })
				if err != nil {
					errs[i] = fmt.Errorf("candidate %d: %w", c.ID, err)
					return
				}
				sc.score(c, res, obs.(*tally))
				mu.Lock()
				done++
				if opts.Progress != nil {
					opts.Progress(done, len(cands))
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rep.Candidates = append(rep.Candidates, todo...)
		rank(rep.Candidates)
		rep.Replayed += len(todo)
	}
	if opts.Progress != nil {
		opts.Progress(len(cands), len(cands))
	}
	return nil
}

// cannotWin says whether c, whatever its replay, would rank below the
// first show of ranked: at best it meets the goal, verified, and adds
// nothing to the others, and it moves the seats and changes the objects
// it does; the first show already do at least as well.
func cannotWin(c *Candidate, ranked []*Candidate, show int) bool {
	// candidates that buy nothing rank last: a slot one of them holds is
	// open
	if len(ranked) < show || ranked[show-1].buysNothing() {
		return false
	}
	best := &Candidate{ID: c.ID, GoalMet: true, Verified: true, SeatsMoved: c.SeatsMoved, ObjectsChanged: c.ObjectsChanged}
	return less(ranked[show-1], best)
}

// the levels' replayed totals, for the table's level lines
func levelTotals(ls []fairqueue.LevelResult) map[string]fairqueue.LevelResult {
	m := map[string]fairqueue.LevelResult{}
	for _, l := range ls {
		m[l.Name] = l
	}
	return m
}
