package engine

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// -releases selects the k8s.io/apiserver releases TestReleaseDifferential
// runs (comma-separated minors such as "29,31"; "all" for every module file
// in hack/apf-oracle/releases). Empty skips the test: building an oracle
// compiles a release's k8s.io/apiserver and client-go, so make test-versions
// runs it (hack/test-versions.sh), not make test.
var releasesFlag = flag.String("releases", os.Getenv("APF_ORACLE_RELEASES"), "k8s.io/apiserver releases to run the differential test against (e.g. 29,31 or all)")

// The oracle's JSON, as hack/apf-oracle/main.go defines it.
type oracleInput struct {
	Configs []oracleConfig `json:"configs"`
}

type oracleConfig struct {
	FlowSchemas    []*flowcontrolv1.FlowSchema                 `json:"flowSchemas"`
	PriorityLevels []*flowcontrolv1.PriorityLevelConfiguration `json:"priorityLevels"`
	ServerCL       int                                         `json:"serverCL"`
	Requests       []oracleRequest                             `json:"requests"`
	Estimates      []oracleEstimate                            `json:"estimates"`
}

type oracleRequest struct {
	Info   request.RequestInfo `json:"info"`
	User   string              `json:"user"`
	Groups []string            `json:"groups"`
}

type oracleEstimate struct {
	URL      string              `json:"url"`
	Info     request.RequestInfo `json:"info"`
	Level    string              `json:"level"`
	Objects  int64               `json:"objects"`
	AvgSize  int64               `json:"avgSize"`
	Watchers int                 `json:"watchers"`
}

type oracleOutput struct {
	Configs []struct {
		Classify []struct {
			FS, PL, FSUID, PLUID, Distinguisher string
			Hash                                uint64
			Queues, HandSize                    int
		} `json:"classify"`
		Gauges    map[string]map[string]float64 `json:"gauges"`
		MaxSeats  map[string]uint64             `json:"maxSeats"`
		Estimates []struct {
			Initial, Final uint64
			AdditionalNs   int64
		} `json:"estimates"`
	} `json:"configs"`
}

// estimateKind says what the engine's Release predicts for an estimate case.
type estimateKind int

const (
	estListStorage     estimateKind = iota // a large LIST from etcd: the LIST cap
	estListEmpty                           // a LIST of an empty resource: 1 seat
	estWatchLegacy                         // a large WATCH with resourceVersion ""
	estWatchInitial                        // a large WATCH with sendInitialEvents=true
	estWatchFromRV                         // a WATCH from a resourceVersion: 1 seat
	estMutatingWatched                     // a write with a million watchers
	estGet                                 // a GET: 1 seat
)

var estimateURLs = map[estimateKind]struct{ method, url string }{
	estListStorage:     {"GET", "/api/v1/namespaces/ns/configmaps?limit=500&continue=abc"},
	estListEmpty:       {"GET", "/api/v1/namespaces/ns/configmaps?limit=500&continue=abc"},
	estWatchLegacy:     {"GET", "/api/v1/namespaces/ns/configmaps?watch=true"},
	estWatchInitial:    {"GET", "/api/v1/namespaces/ns/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"},
	estWatchFromRV:     {"GET", "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=12345"},
	estMutatingWatched: {"PUT", "/api/v1/namespaces/ns/configmaps/x"},
	estGet:             {"GET", "/api/v1/namespaces/ns/configmaps/x"},
}

// wantSeats is what the engine's Release says the estimator gives for kind
// in a level with the given max seats (0: none).
func wantSeats(rel Release, kind estimateKind, levelMax uint64) (initial, final uint64) {
	capTo := func(limit uint64) uint64 {
		if levelMax == 0 || levelMax > limit {
			return limit
		}
		return levelMax
	}
	switch kind {
	case estListStorage:
		return capTo(rel.MaxListSeats()), 0
	case estWatchLegacy:
		if rel.WatchEstimatedAsList() && rel.LegacyWatchEstimatedAsList() {
			return capTo(rel.MaxCachedListSeats()), 0
		}
	case estWatchInitial:
		if rel.WatchEstimatedAsList() {
			return capTo(rel.MaxCachedListSeats()), 0
		}
	case estMutatingWatched:
		return 1, capTo(rel.MaxMutatingSeats())
	}
	return 1, 0
}

// TestReleaseDifferential runs generated configurations, requests and work
// estimates through the real APF code of each selected k8s.io/apiserver
// release (hack/apf-oracle, built against the release) and through the
// engine replaying that release, and requires the same FlowSchema, level,
// UIDs, distinguisher, hash and hand, the same nominal, lower, upper and
// current limits, max seats and seat_fair_frac, and the estimator's seats for
// large LISTs and WATCHes and for writes with many watchers.
func TestReleaseDifferential(t *testing.T) {
	if testing.Short() || *releasesFlag == "" {
		t.Skip("set -releases (or APF_ORACLE_RELEASES) to 29,31,... or all; make test-versions does")
	}
	mods, _ := filepath.Glob("../../hack/apf-oracle/releases/v0.*.mod")
	var minors []int
	for _, m := range mods {
		var minor int
		if _, err := fmt.Sscanf(filepath.Base(m), "v0.%d.mod", &minor); err == nil {
			if *releasesFlag == "all" || slices.Contains(strings.Split(*releasesFlag, ","), fmt.Sprint(minor)) {
				minors = append(minors, minor)
			}
		}
	}
	sort.Ints(minors)
	if len(minors) == 0 {
		t.Fatalf("no module file in hack/apf-oracle/releases matches -releases %q", *releasesFlag)
	}
	in, reqs := genOracleInput()
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, minor := range minors {
		rel := Release{Minor: minor}
		t.Run(rel.String(), func(t *testing.T) {
			build := exec.Command("bash", "../../hack/apf-oracle/build.sh", fmt.Sprintf("v0.%d", minor))
			build.Stderr = os.Stderr
			bin, err := build.Output()
			if err != nil {
				t.Fatalf("building the oracle: %v", err)
			}
			run := exec.Command(strings.TrimSpace(string(bin)))
			run.Stdin = bytes.NewReader(body)
			var stderr bytes.Buffer
			run.Stderr = &stderr
			outb, err := run.Output()
			if err != nil {
				t.Fatalf("running the oracle: %v\n%s", err, stderr.String())
			}
			var out oracleOutput
			if err := json.Unmarshal(outb, &out); err != nil {
				t.Fatal(err)
			}
			compareRelease(t, rel, in, reqs, out)
			// The same answers against another release's behaviour, to show
			// where the releases part (and that the comparison can fail).
			other := OldestRelease
			if rel.Minor <= 33 {
				other = NewestRelease
			}
			t.Logf("the engine replaying %s instead would disagree with v0.%d on %s", other, minor, countDisagreements(other, in, out))
		})
	}
}

func compareRelease(t *testing.T, rel Release, in oracleInput, reqs [][]Request, out oracleOutput) {
	t.Helper()
	if len(out.Configs) != len(in.Configs) {
		t.Fatalf("the oracle answered %d configurations of %d", len(out.Configs), len(in.Configs))
	}
	classified, levels, estimates := 0, 0, 0
	branches := map[string]int{}
	for c, ic := range in.Configs {
		oc := out.Configs[c]
		cfg := NewConfig(ic.FlowSchemas, ic.PriorityLevels)
		for i, req := range reqs[c] {
			got := cfg.Classify(req)
			w := oc.Classify[i]
			g := fmt.Sprint(got.FlowSchema.Name, got.PriorityLevel.Name, got.FlowSchema.UID, got.PriorityLevel.UID, got.Flow.Distinguisher, got.Flow.Hash)
			want := fmt.Sprint(w.FS, w.PL, w.FSUID, w.PLUID, w.Distinguisher, w.Hash)
			if g != want {
				t.Fatalf("config %d, request %+v as %+v: engine %s, upstream %s\nFlowSchemas: %s\nPriorityLevels: %s", c, req.Info, req.Identity, g, want, dumpFSs(ic.FlowSchemas), dumpPLs(ic.PriorityLevels))
			}
			if w.Queues > 0 {
				d, err := NewDealer(w.Queues, w.HandSize)
				if err != nil {
					t.Fatalf("config %d: upstream level %s has queues %d hand %d: %v", c, w.PL, w.Queues, w.HandSize, err)
				}
				if hand := d.DealIntoHand(w.Hash, nil); !slices.Equal(got.Hand, hand) {
					t.Fatalf("config %d, request %d: hand %v, upstream %v", c, i, got.Hand, hand)
				}
			}
			classified++
		}
		lims := ComputeLimits(ic.PriorityLevels, ic.ServerCL)
		cur := AllocateCurrentLimitsFor(rel, lims, nil, nil, ic.ServerCL)
		branches[cur.Branch]++
		maxSeats := map[string]uint64{}
		for _, l := range lims {
			maxSeats[l.Name] = l.MaxSeats
			for metric, v := range map[string]int{"nominal_limit_seats": l.NominalCL, "lower_limit_seats": l.LowerCL, "upper_limit_seats": l.UpperCL, "current_limit_seats": cur.CurrentCL[l.Name]} {
				pub, ok := oc.Gauges["apiserver_flowcontrol_"+metric][l.Name]
				if !ok || pub != float64(v) {
					t.Fatalf("config %d (serverCL %d), level %s: %s engine %d, upstream %v (published %v)\nlevels: %s", c, ic.ServerCL, l.Name, metric, v, pub, ok, dumpPLs(ic.PriorityLevels))
				}
			}
			if ms := oc.MaxSeats[l.Name]; ms != l.MaxSeats {
				t.Fatalf("config %d, level %s: max seats engine %d, upstream %d", c, l.Name, l.MaxSeats, ms)
			}
			levels++
		}
		if ff := oc.Gauges["apiserver_flowcontrol_seat_fair_frac"][""]; math.Abs(ff-cur.FairFrac) > 1e-12*math.Max(1, math.Abs(ff)) {
			t.Fatalf("config %d: seat_fair_frac engine %v, upstream %v", c, cur.FairFrac, ff)
		}
		for i, e := range ic.Estimates {
			kind := estimateKind(i % len(estimateURLs))
			wi, wf := wantSeats(rel, kind, maxSeats[e.Level])
			if g := oc.Estimates[i]; g.Initial != wi || g.Final != wf {
				t.Fatalf("config %d, level %s (max seats %d), %s %s with %d objects, %d watchers: upstream %d initial, %d final seats; the engine's release %s says %d, %d",
					c, e.Level, maxSeats[e.Level], estimateURLs[kind].method, e.URL, e.Objects, e.Watchers, g.Initial, g.Final, rel, wi, wf)
			}
			estimates++
		}
	}
	t.Logf("k8s.io/apiserver v0.%d: %d classifications, %d levels' limits (borrowing branches %v) and %d work estimates identical to the engine replaying %s",
		rel.Minor, classified, levels, branches, estimates, rel)
}

// countDisagreements counts the current limits and estimates where the
// engine replaying rel differs from the oracle's answers.
func countDisagreements(rel Release, in oracleInput, out oracleOutput) string {
	limits, estimates := 0, 0
	for c, ic := range in.Configs {
		oc := out.Configs[c]
		lims := ComputeLimits(ic.PriorityLevels, ic.ServerCL)
		cur := AllocateCurrentLimitsFor(rel, lims, nil, nil, ic.ServerCL)
		maxSeats := map[string]uint64{}
		for _, l := range lims {
			maxSeats[l.Name] = l.MaxSeats
			if oc.Gauges["apiserver_flowcontrol_current_limit_seats"][l.Name] != float64(cur.CurrentCL[l.Name]) {
				limits++
			}
		}
		for i, e := range ic.Estimates {
			wi, wf := wantSeats(rel, estimateKind(i%len(estimateURLs)), maxSeats[e.Level])
			if g := oc.Estimates[i]; g.Initial != wi || g.Final != wf {
				estimates++
			}
		}
	}
	return fmt.Sprintf("%d current limits and %d work estimates", limits, estimates)
}

// genOracleInput draws the cases once for every release, and the engine's
// requests alongside.
func genOracleInput() (oracleInput, [][]Request) {
	r := rand.New(rand.NewPCG(29, 37))
	var in oracleInput
	var reqs [][]Request
	for c := 0; c < 60; c++ {
		pls := genLimitLevels(r)
		fss := genFlowSchemas(r, pls)
		oc := oracleConfig{FlowSchemas: fss, PriorityLevels: pls, ServerCL: pick(r, []int{1, 7, 50, 600, 600, 3000})}
		var rs []Request
		for len(rs) < 150 {
			method, path := genRequest(r)
			req, err := ParseRequest(method, path, genIdentity(r))
			if err != nil {
				continue
			}
			req.Bypass = ""
			rs = append(rs, req)
			oc.Requests = append(oc.Requests, oracleRequest{Info: req.Info, User: req.Identity.User, Groups: req.Identity.Groups})
		}
		for i := 0; i < 3*len(estimateURLs); i++ {
			kind := estimateKind(i % len(estimateURLs))
			u := estimateURLs[kind]
			req, err := ParseRequest(u.method, u.url, NewUserIdentity("oracle"))
			if err != nil {
				panic(err)
			}
			level := "absent" // a level the controller does not know: the global caps apply
			if len(pls) > 0 && r.IntN(8) > 0 {
				level = pick(r, pls).Name
			}
			e := oracleEstimate{URL: u.url, Info: req.Info, Level: level, Objects: 1_000_000, AvgSize: 1_000_000, Watchers: 1_000_000}
			if kind == estListEmpty {
				e.Objects = 0
			}
			oc.Estimates = append(oc.Estimates, e)
		}
		in.Configs = append(in.Configs, oc)
		reqs = append(reqs, rs)
	}
	return in, reqs
}
