package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// teamConfig is a level "team" of 5 shares (4 queues of 2, no lending or
// borrowing) that a noisy user (FlowSchema team-batch) and a controller's
// service account (FlowSchema team) share.
const teamConfig = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: team
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse:
      type: Queue
      queuing: {queues: 4, handSize: 2, queueLengthLimit: 2}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: team
spec:
  priorityLevelConfiguration: {name: team}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects:
    - kind: ServiceAccount
      serviceAccount: {namespace: team, name: ctrl}
    resourceRules:
    - verbs: ["*"]
      apiGroups: ["*"]
      resources: ["*"]
      namespaces: ["*"]
      clusterScope: true
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: team-batch
spec:
  priorityLevelConfiguration: {name: team}
  matchingPrecedence: 600
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects:
    - kind: User
      user: {name: noisy}
    resourceRules:
    - verbs: ["*"]
      apiGroups: ["*"]
      resources: ["*"]
      namespaces: ["*"]
      clusterScope: true
`

// teamWorkload has noisy LIST the team's ConfigMaps in bursts of 12, each
// taking 300ms, every second for 10s, while the controller GETs one every
// 100ms.
func teamWorkload() string {
	var lines []string
	for s := 0; s < 10; s++ {
		for i := 0; i < 12; i++ {
			lines = append(lines, fmt.Sprintf(`{"offset":"%ds","user":"noisy","groups":["system:authenticated"],"verb":"list","path":"/api/v1/namespaces/team/configmaps","serviceTime":"300ms"}`, s))
		}
		for i := 0; i < 10; i++ {
			lines = append(lines, fmt.Sprintf(`{"offset":"%dms","user":"system:serviceaccount:team:ctrl","groups":["system:serviceaccounts","system:serviceaccounts:team","system:authenticated"],"verb":"get","path":"/api/v1/namespaces/team/configmaps/c%d","serviceTime":"20ms"}`, s*1000+i*100+5, i))
		}
	}
	slices.SortStableFunc(lines, func(a, b string) int { return 0 })
	return strings.Join(lines, "\n") + "\n"
}

type team struct {
	st  *state.State
	p   *simulate.Prepared
	dir string
}

// defaultsWith is the state of --defaults with the -f files applied, on
// a server of 40 seats.
func defaultsWith(t testing.TB, files ...string) *state.State {
	t.Helper()
	o := load.NewOptions(nil, load.Config)
	o.Defaults, o.Files = true, files
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	st, err := o.Load(context.Background(), load.Request{ServerConcurrency: 40})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func openTeam(t testing.TB) *team {
	t.Helper()
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "team.yaml")
	wl := filepath.Join(dir, "workload.jsonl")
	if err := os.WriteFile(cfgFile, []byte(teamConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wl, []byte(sortedByOffset(teamWorkload())), 0o644); err != nil {
		t.Fatal(err)
	}
	st := defaultsWith(t, cfgFile)
	p, err := simulate.Prepare(context.Background(), st, simulate.Config{Logs: input.Logs{}, Workloads: []string{wl}, RequestTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return &team{st: st, p: p, dir: dir}
}

// sortedByOffset orders JSONL lines by their offset, as a log is.
func sortedByOffset(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	at := func(l string) time.Duration {
		var v struct{ Offset string }
		_ = json.Unmarshal([]byte(l), &v)
		d, _ := time.ParseDuration(v.Offset)
		return d
	}
	slices.SortStableFunc(lines, func(a, b string) int { return int(at(a) - at(b)) })
	return strings.Join(lines, "\n") + "\n"
}

func (tm *team) input() Input {
	return Input{FlowSchemas: tm.st.FlowSchemas, PriorityLevels: tm.st.PriorityLevels, Release: tm.st.Release, ServerConcurrency: tm.st.ServerConcurrency}
}

func (tm *team) search(t testing.TB, opts Options) *Report {
	t.Helper()
	rep, err := Search(context.Background(), tm.p, tm.input(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

var protectCtrl = Goal{Protect: []Target{{TargetServiceAccount, "team/ctrl"}}}

// TestEveryCandidateIsValid holds every replayed candidate to the
// apiserver's validation (after a round trip through YAML, as kubectl
// apply reads it), to the linter (no error or warning the recorded
// configuration lacks, but the reminder on an opted-out suggested object),
// to the mandatory objects, and to the opt-out of suggested ones.
func TestEveryCandidateIsValid(t *testing.T) {
	tm := openTeam(t)
	rep := tm.search(t, Options{Goal: protectCtrl, NoPrune: true})
	if len(rep.Candidates) < 20 {
		t.Fatalf("only %d candidates replayed", len(rep.Candidates))
	}
	ref := config.ReferenceFor(tm.st.Release)
	suggested := map[string]bool{}
	for _, fs := range ref.SuggestedFlowSchemas {
		suggested["FlowSchema/"+fs.Name] = true
	}
	for _, pl := range ref.SuggestedPriorityLevels {
		suggested["PriorityLevelConfiguration/"+pl.Name] = true
	}
	lintKeys := func(fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration, onlyBad bool) map[string]bool {
		m := map[string]bool{}
		for _, f := range lint.Lint(lint.Input{FlowSchemas: fss, PriorityLevels: pls, Reference: ref, Release: tm.st.Release, ServerConcurrency: tm.st.ServerConcurrency}, lint.DefaultOptions()) {
			if onlyBad && f.Severity == lint.SeverityInfo {
				continue
			}
			if onlyBad && f.Rule == lint.RuleSuggestedDiffers && strings.Contains(f.Message, "=false and differs") {
				continue
			}
			m[fmt.Sprint(f.Rule, f.Objects)] = true
		}
		return m
	}
	base := lintKeys(tm.st.FlowSchemas, tm.st.PriorityLevels, false)
	families := map[string]bool{}
	for _, c := range rep.Candidates {
		for _, f := range c.Families {
			families[f] = true
		}
		var docs []string
		for _, o := range c.RuntimeObjects() {
			b, err := yaml.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(b))
		}
		objs, err := config.ParseObjects([]byte(strings.Join(docs, "---\n")), "candidate")
		if err != nil {
			t.Fatalf("candidate %d: its YAML does not read back: %v", c.ID, err)
		}
		for _, fs := range objs.FlowSchemas {
			if errs := config.ValidateFlowSchema(fs); len(errs) > 0 {
				t.Errorf("candidate %d: %s: %v", c.ID, fs.Name, errs)
			}
			if fs.Name == "exempt" || fs.Name == "catch-all" {
				t.Errorf("candidate %d changes the mandatory FlowSchema %s", c.ID, fs.Name)
			}
			if suggested["FlowSchema/"+fs.Name] && fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "false" {
				t.Errorf("candidate %d changes the suggested FlowSchema %s without autoupdate-spec false", c.ID, fs.Name)
			}
		}
		for _, pl := range objs.PriorityLevels {
			if errs := config.ValidatePriorityLevel(pl, "nominalConcurrencyShares"); len(errs) > 0 {
				t.Errorf("candidate %d: %s: %v", c.ID, pl.Name, errs)
			}
			if pl.Name == "exempt" || pl.Name == "catch-all" {
				t.Errorf("candidate %d changes the mandatory level %s", c.ID, pl.Name)
			}
			if suggested["PriorityLevelConfiguration/"+pl.Name] && pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "false" {
				t.Errorf("candidate %d changes the suggested level %s without autoupdate-spec false", c.ID, pl.Name)
			}
		}
		fss, pls := config.Overlay(tm.st.FlowSchemas, tm.st.PriorityLevels, objs)
		ec := engine.NewConfig(fss, pls)
		if len(ec.Broken)+len(ec.Dangling) > 0 {
			t.Errorf("candidate %d: the apiserver would ignore part of it: %v %v", c.ID, ec.Broken, ec.Dangling)
		}
		for k := range lintKeys(fss, pls, true) {
			if !base[k] {
				t.Errorf("candidate %d (%s): a new lint finding %s", c.ID, strings.Join(c.Changes, "; "), k)
			}
		}
		// the objects are what the candidate replayed
		if !equality.Semantic.DeepEqual(limitsOf(engine.NewConfig(fss, pls), tm.st.ServerConcurrency), limitsOf(c.Config(), tm.st.ServerConcurrency)) {
			t.Errorf("candidate %d: its objects overlaid on the recorded configuration are not the configuration it replayed", c.ID)
		}
	}
	for _, f := range []string{FamilyShares, FamilyBorrowing, FamilyLending, FamilyIsolate, FamilyMove, FamilyQueues} {
		if !families[f] {
			t.Errorf("no candidate of the remedy %s", f)
		}
	}
}

func limitsOf(c *engine.Config, scl int) []engine.LevelLimits { return c.Limits(scl) }

// TestSearchIsDeterministic runs the search twice, one replay at a time
// and four at once: the same report.
func TestSearchIsDeterministic(t *testing.T) {
	tm := openTeam(t)
	enc := func(r *Report) string {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a := enc(tm.search(t, Options{Goal: protectCtrl, Parallel: 1}))
	b := enc(tm.search(t, Options{Goal: protectCtrl, Parallel: 4}))
	if a != b {
		t.Fatal("two searches of the same input differ")
	}
}

// TestPruningKeepsTheTop: the search with pruning shows the same first
// candidates, in the same order and with the same figures, as the search
// that replays every candidate; and the latter, which replays all its
// candidates at once rather than wave by wave, gives the same report one
// replay at a time and four at once.
func TestPruningKeepsTheTop(t *testing.T) {
	tm := openTeam(t)
	pruned := tm.search(t, Options{Goal: protectCtrl})
	all := tm.search(t, Options{Goal: protectCtrl, NoPrune: true, Parallel: 4})
	if pruned.Pruned == 0 {
		t.Fatal("nothing was pruned: the test does not test pruning")
	}
	if all.Pruned != 0 || all.Replayed != all.Written {
		t.Fatalf("without pruning, %d of %d candidates replayed and %d pruned", all.Replayed, all.Written, all.Pruned)
	}
	if len(pruned.Candidates) < DefaultShow {
		t.Fatalf("only %d candidates replayed with pruning", len(pruned.Candidates))
	}
	for i := range DefaultShow {
		a, b := pruned.Candidates[i], all.Candidates[i]
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("rank %d: candidate %d with pruning, %d without, or their figures differ", i+1, a.ID, b.ID)
		}
	}
	one := tm.search(t, Options{Goal: protectCtrl, NoPrune: true, Parallel: 1})
	ja, _ := json.Marshal(all)
	jb, _ := json.Marshal(one)
	if string(ja) != string(jb) {
		t.Error("the search without pruning differs between four replays at once and one")
	}
}

// TestKeepAndBudget: no candidate changes a kept object, and none moves
// more shares than the budget allows, counted from the objects.
func TestKeepAndBudget(t *testing.T) {
	tm := openTeam(t)
	var total int64
	for _, pl := range tm.st.PriorityLevels {
		if pl.Spec.Limited != nil && pl.Spec.Limited.NominalConcurrencyShares != nil {
			total += int64(*pl.Spec.Limited.NominalConcurrencyShares)
		}
	}
	was := map[string]int32{}
	for _, pl := range tm.st.PriorityLevels {
		if pl.Spec.Limited != nil && pl.Spec.Limited.NominalConcurrencyShares != nil {
			was[pl.Name] = *pl.Spec.Limited.NominalConcurrencyShares
		}
	}
	const budget = 0.05
	rep := tm.search(t, Options{Goal: protectCtrl, NoPrune: true, Budget: budget, Keep: []ObjectKey{{KindPriorityLevel, "global-default"}, {KindFlowSchema, "team"}}})
	if len(rep.Candidates) == 0 {
		t.Fatal("no candidate")
	}
	for _, c := range rep.Candidates {
		var moved int64
		for _, o := range c.RuntimeObjects() {
			switch x := o.(type) {
			case *flowcontrolv1.PriorityLevelConfiguration:
				if x.Name == "global-default" {
					t.Errorf("candidate %d changes the kept level global-default", c.ID)
				}
				if x.Spec.Limited != nil && x.Spec.Limited.NominalConcurrencyShares != nil {
					moved += max(0, int64(*x.Spec.Limited.NominalConcurrencyShares-was[x.Name]))
				}
			case *flowcontrolv1.FlowSchema:
				if x.Name == "team" {
					t.Errorf("candidate %d changes the kept FlowSchema team", c.ID)
				}
			}
		}
		if float64(moved) > budget*float64(total) {
			t.Errorf("candidate %d moves %d of %d shares, beyond the budget %g", c.ID, moved, total, budget)
		}
	}
	if rep.Refused["beyond --budget"] == 0 {
		t.Error("the budget refused nothing: the test does not test it")
	}
}

// TestProtectedControllerGetsItsSeats: the controller that shares a level
// with a noisy user is served by the first candidate, which adds nothing
// to the others, and routing the noisy user away is among the candidates.
func TestProtectedControllerGetsItsSeats(t *testing.T) {
	tm := openTeam(t)
	rep := tm.search(t, Options{Goal: protectCtrl})
	if len(rep.Candidates) == 0 || !rep.Candidates[0].GoalMet || !rep.Candidates[0].Verified {
		t.Fatalf("no verified candidate meets the goal: %s %v", rep.Verdict, rep.Why)
	}
	var ctrl int = -1
	for i, c := range rep.Clients {
		if c.Name == "system:serviceaccount:team:ctrl" {
			ctrl = i
			if !c.Protected || c.Rejected == 0 {
				t.Fatalf("the controller: protected %v, %d 429s in the replay of the recorded configuration", c.Protected, c.Rejected)
			}
		}
	}
	first := rep.Candidates[0]
	if first.ClientsAfter[ctrl].Rejected != 0 {
		t.Errorf("the first candidate leaves the controller %d 429s", first.ClientsAfter[ctrl].Rejected)
	}
	found := false
	for _, c := range rep.Candidates {
		for _, ch := range c.Changes {
			if strings.HasPrefix(ch, "route noisy ") {
				found = true
			}
		}
	}
	if !found {
		t.Error("no candidate routes the noisy user away")
	}
}

// TestRankPutsWhatBuysNothingLast: a candidate that holds another's
// changes and more without doing better, or that changes nothing the
// ranking reads, ranks after every candidate that buys something, however
// its figures compare; one that does better with more changes does not.
func TestRankPutsWhatBuysNothingLast(t *testing.T) {
	w := func(v float64) *float64 { return &v }
	cand := func(id int, verified, goal bool, shortfall, before, after int64, changes ...string) *Candidate {
		return &Candidate{ID: id, Verified: verified, GoalMet: goal, Shortfall: shortfall, Changes: changes, ObjectsChanged: len(changes),
			Protected: Summary{RejectedBefore: before, RejectedAfter: after, WorstP99Before: w(0.2), WorstP99After: w(0.3)},
			Others:    Summary{RejectedBefore: 0, RejectedAfter: 0, WorstP99Before: w(0), WorstP99After: w(0)}}
	}
	a := cand(1, true, false, 50, 100, 50, "x")
	b := cand(2, true, false, 50, 100, 50, "x", "y") // a's change and y, no better
	c := cand(3, true, false, 100, 100, 100, "y")    // nothing moves
	c.Protected.WorstP99After = w(0.2)
	d := cand(4, true, false, 10, 100, 10, "x", "z") // better than a with more
	e := cand(5, false, true, 0, 100, 0, "w")        // unverified, meets the goal
	f := cand(6, false, true, 0, 100, 0, "w", "y")   // e's and y, no better
	g := cand(7, true, false, 50, 100, 50, "y", "x") // b's changes in another order
	cs := []*Candidate{b, c, a, g, f, e, d}
	rank(cs)
	var order []int
	for _, x := range cs {
		order = append(order, x.ID)
	}
	if want := []int{4, 1, 5, 2, 7, 3, 6}; !slices.Equal(order, want) {
		t.Errorf("ranked %v, want %v", order, want)
	}
	for _, tc := range []struct {
		c        *Candidate
		of       int
		noEffect bool
	}{{a, 0, false}, {b, 1, false}, {c, 0, true}, {d, 0, false}, {e, 0, false}, {f, 5, false}, {g, 1, false}} {
		if tc.c.RedundantOf != tc.of || tc.c.NoEffect != tc.noEffect {
			t.Errorf("candidate %d: redundant of %d, no effect %v; want %d, %v", tc.c.ID, tc.c.RedundantOf, tc.c.NoEffect, tc.of, tc.noEffect)
		}
	}
	// pruning's bound: a candidate that moves more than the first ones,
	// which meet the goal verified, cannot enter them; a slot held by a
	// candidate that buys nothing is open to it
	met := []*Candidate{cand(10, true, true, 0, 100, 0, "p"), cand(11, true, true, 0, 100, 0, "q"), cand(12, true, true, 0, 100, 0, "p", "r")}
	rank(met)
	if met[2].RedundantOf != 10 {
		t.Fatalf("candidate 12 redundant of %d, want 10", met[2].RedundantOf)
	}
	heavy := &Candidate{ID: 20, SeatsMoved: 5, ObjectsChanged: 3}
	if !cannotWin(heavy, met, 2) {
		t.Error("did not prune a candidate that cannot enter the first two")
	}
	if cannotWin(heavy, met, 3) {
		t.Error("pruned a candidate whose best could take the place of one that buys nothing")
	}
}

// TestSearchRanksWhatBuysNothingLast: on a recorded incident, every
// candidate marked redundant has its better among the candidates, with
// some of its changes and figures no worse, and no candidate that buys
// nothing ranks above one that buys something.
func TestSearchRanksWhatBuysNothingLast(t *testing.T) {
	tm := openTeam(t)
	rep := tm.search(t, Options{Goal: protectCtrl, NoPrune: true, Parallel: 4})
	byID := map[int]*Candidate{}
	for _, c := range rep.Candidates {
		byID[c.ID] = c
	}
	last, marked := false, 0
	for _, c := range rep.Candidates {
		if c.buysNothing() {
			last = true
			marked++
		} else if last {
			t.Errorf("candidate %d buys something and ranks %d, after one that buys nothing", c.ID, c.Rank)
		}
		if c.RedundantOf == 0 {
			continue
		}
		d := byID[c.RedundantOf]
		if d == nil {
			t.Errorf("candidate %d is redundant of %d, which is not among the candidates", c.ID, c.RedundantOf)
			continue
		}
		if !changesLess(d.Changes, c.Changes) {
			t.Errorf("candidate %d (%q) is redundant of %d (%q), which does not change less", c.ID, c.Changes, d.ID, d.Changes)
		}
		if c.Protected.RejectedAfter < d.Protected.RejectedAfter || c.Others.RejectedAfter < d.Others.RejectedAfter || less(c, d) && tier(c) < tier(d) {
			t.Errorf("candidate %d does better than %d, of which it is marked redundant", c.ID, d.ID)
		}
	}
	if marked == 0 {
		t.Error("no candidate buys nothing on this incident: the test shows nothing")
	}
	t.Logf("%d of %d candidates buy nothing", marked, len(rep.Candidates))
}

// TestPrepareRefusesAMissingWorkload: a workload file that is not there
// is an error of Prepare (tune's first step), not a panic in its clean-up
// (it once closed the nil Prepared it returned).
func TestPrepareRefusesAMissingWorkload(t *testing.T) {
	st := defaultsWith(t)
	missing := filepath.Join(t.TempDir(), "audit.log")
	p, err := simulate.Prepare(context.Background(), st, simulate.Config{Logs: input.Logs{}, Workloads: []string{missing}, RequestTimeout: time.Minute})
	if err == nil || p != nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Prepare of a missing workload: %v, %v; want an error naming the file", p, err)
	}
}

// changesLess reads the changes' words: each of d is one of c, or the same
// knobs moved from the same values no further ("team: queues 4→8" of
// "team: queues 4→16"), and d has fewer changes or a shorter move.
func changesLess(d, c []string) bool {
	moves := regexp.MustCompile(`(\d+)→(\d+)`)
	shape := func(s string) string { return moves.ReplaceAllString(s, "$1→") }
	shorter := func(a, b string) bool { // a moves no further than b, both of one shape
		ma, mb := moves.FindAllStringSubmatch(a, -1), moves.FindAllStringSubmatch(b, -1)
		for i := range ma {
			fa, _ := strconv.Atoi(ma[i][1])
			ta, _ := strconv.Atoi(ma[i][2])
			tb, _ := strconv.Atoi(mb[i][2])
			if (ta-fa > 0) != (tb-fa > 0) || max(ta-fa, fa-ta) > max(tb-fa, fa-tb) {
				return false
			}
		}
		return true
	}
	if len(d) > len(c) {
		return false
	}
	less := len(d) < len(c)
	used := make([]bool, len(c))
	for _, x := range d {
		found := false
		for j, y := range c {
			if used[j] {
				continue
			}
			if x == y || !strings.Contains(x, "shares") && shape(x) == shape(y) && shorter(x, y) {
				used[j], found, less = true, true, less || x != y
				break
			}
		}
		if !found {
			return false
		}
	}
	return less
}

// TestSmallerStepDoesAsWell: a candidate whose numbers move further than
// another's of the same knobs, with no better figures, is redundant of it
// (borrowingLimitPercent 0→400 beside 0→200); one that does better is not,
// nor one that moves a knob the other way or from another value.
func TestSmallerStepDoesAsWell(t *testing.T) {
	cand := func(id int, after int64, words string, s step) *Candidate {
		return &Candidate{ID: id, Verified: true, Shortfall: after, Changes: []string{words}, steps: [][]step{{s}}, ObjectsChanged: 1,
			Protected: Summary{RejectedBefore: 100, RejectedAfter: after}}
	}
	b200 := cand(1, 40, "w: borrowingLimitPercent 0→200", step{"w.borrowingLimitPercent", 0, 200})
	b400 := cand(2, 40, "w: borrowingLimitPercent 0→400", step{"w.borrowingLimitPercent", 0, 400})
	q16 := cand(3, 30, "w: queues 4→16", step{"w.queues", 4, 16})
	q8 := cand(4, 35, "w: queues 4→8", step{"w.queues", 4, 8}) // does worse than 16: not redundant
	q2 := cand(5, 50, "w: queues 4→2", step{"w.queues", 4, 2}) // the other way
	l50 := cand(6, 40, "v: borrowingLimitPercent 10→50", step{"v.borrowingLimitPercent", 10, 50})
	l400 := cand(7, 40, "v: borrowingLimitPercent 0→400", step{"v.borrowingLimitPercent", 0, 400}) // from another value than 6
	cs := []*Candidate{b400, q16, b200, q8, q2, l50, l400}
	rank(cs)
	for _, c := range []struct {
		c  *Candidate
		of int
	}{{b200, 0}, {b400, 1}, {q16, 0}, {q8, 0}, {q2, 0}, {l50, 0}, {l400, 0}} {
		if c.c.RedundantOf != c.of {
			t.Errorf("candidate %d (%s): redundant of %d, want %d", c.c.ID, c.c.Changes[0], c.c.RedundantOf, c.of)
		}
	}
}
