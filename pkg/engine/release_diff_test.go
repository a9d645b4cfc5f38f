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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	Method   string              `json:"method"`
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

// The work-estimate grid. Every LIST and WATCH URL meets every object count
// and average size, every other request every watcher count, in every level
// of estimateGridLevels and in a level the controller does not know (whose
// cap is the estimator's global one).
var (
	estimateGridURLs = []struct{ method, url string }{
		// LISTs: consistent reads, resourceVersion "0", legacy exact match,
		// continuations, resourceVersionMatch, selectors, a named object,
		// a group's resource, queries the apiserver cannot read
		{"GET", "/api/v1/namespaces/ns/configmaps"},
		{"GET", "/api/v1/configmaps"},
		{"GET", "/api/v1/namespaces/ns/configmaps?resourceVersion=0"},
		{"GET", "/api/v1/namespaces/ns/configmaps?limit=500"},
		{"GET", "/api/v1/namespaces/ns/configmaps?limit=500&resourceVersion=0"},
		{"GET", "/api/v1/namespaces/ns/configmaps?limit=50&resourceVersion=12345"},
		{"GET", "/api/v1/namespaces/ns/configmaps?limit=500&continue=abc"},
		{"GET", "/api/v1/namespaces/ns/configmaps?resourceVersion=12345&resourceVersionMatch=Exact"},
		{"GET", "/api/v1/namespaces/ns/configmaps?resourceVersion=12345&resourceVersionMatch=NotOlderThan"},
		{"GET", "/api/v1/namespaces/ns/configmaps?limit=500&resourceVersion=12345&resourceVersionMatch=NotOlderThan"},
		{"GET", "/api/v1/namespaces/ns/configmaps?continue=abc&resourceVersionMatch=NotOlderThan"},
		{"GET", "/api/v1/namespaces/ns/configmaps?resourceVersionMatch=Other&resourceVersion=1"},
		{"GET", "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dx"},
		{"GET", "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dx&limit=500"},
		{"GET", "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dx&resourceVersion=12345&resourceVersionMatch=Exact"},
		{"GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.namespace%3Dns&limit=100&continue=abc"},
		{"GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dx"},
		{"GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dx&limit=abc"},
		{"GET", "/apis/apps/v1/deployments?limit=7&resourceVersion=0"},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments?limit=7"},
		{"GET", "/api/v1/namespaces/ns/configmaps?limit=abc"},
		{"GET", "/api/v1/namespaces/ns/configmaps?limit=-5&timeoutSeconds=30"},
		{"GET", "/api/v1/namespaces/ns/configmaps?timeoutSeconds=x"},
		// WATCHes: legacy ones (resourceVersion "" or "0"), from a
		// resourceVersion, with initial events (also spelled 1 or empty, which
		// the apiserver reads as true), a named one, the legacy /watch/ path
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=0"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=12345"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true&sendInitialEvents=true&resourceVersion=12345&resourceVersionMatch=NotOlderThan"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=1&sendInitialEvents=1&resourceVersionMatch=NotOlderThan"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true&sendInitialEvents=&resourceVersion=7"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true&sendInitialEvents=false&resourceVersion=0"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true&labelSelector=app%3Dx&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true&fieldSelector=metadata.name%3Dx&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"},
		{"GET", "/api/v1/watch/namespaces/ns/configmaps"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true&limit=abc&resourceVersion=5"},
		// writes, and requests the estimator gives 1 seat
		{"PUT", "/api/v1/namespaces/ns/configmaps/x"},
		{"POST", "/api/v1/namespaces/ns/configmaps"},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/x/status"},
		{"DELETE", "/api/v1/namespaces/ns/configmaps/x"},
		{"POST", "/api/v1/namespaces/ns/serviceaccounts/default/token"},
		{"DELETE", "/api/v1/namespaces/ns/configmaps"},
		{"GET", "/api/v1/namespaces/ns/configmaps/x"},
	}
	// object counts: unknown, stale, empty, one, around 50, 100, 200, 500
	// and 1000 (the 1.29-1.33 divisor is 100 objects, a LIST from etcd
	// without a selector costs twice its ?limit) and large
	estimateGridObjects = []int64{-1, objectsStale, 0, 1, 49, 50, 51, 99, 100, 101, 199, 200, 201, 499, 500, 501, 999, 1000, 1001, 5000, 100_000, 1_000_000_000}
	// average object sizes, for 1.34 on (100kB a seat, a cached LIST counts
	// at most 1MB): unknown, tiny, around 1000 (so object counts around 100
	// cross seat boundaries), 33kB, 100kB, 1MB, the 1.5MB upstream assumes
	// for an unknown size, and larger
	estimateGridSizes = []int64{0, 1, 999, 1000, 1001, 33_000, 100_000, 1_000_000, 1_500_000, 2_000_000}
	// watchers of a written object: up to and around 10 a seat, and many
	estimateGridWatchers = []int{0, 1, 9, 10, 11, 19, 20, 21, 33, 99, 100, 101, 1000, 1_000_000}
)

// objectsStale is the oracle's Objects of a stale count (ObjectsStale in
// hack/apf-oracle/main.go).
const objectsStale = -2

// estimateGridLevels is a configuration whose levels' max seats are 1, 5,
// 10, 45, 90 and 300 (at a server limit of 3000, nominal = shares):
// max(1, min(ceil(15% of nominal), nominal / hand size)); ComputeLimits adds
// the mandatory exempt level, as the controller does.
func estimateGridLevels() ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration, int) {
	var pls []*flowcontrolv1.PriorityLevelConfiguration
	var fss []*flowcontrolv1.FlowSchema
	for i, l := range []struct {
		name                 string
		shares, queues, hand int32
	}{{"one", 2, 1, 1}, {"five", 40, 64, 8}, {"ten", 64, 64, 6}, {"wide", 300, 16, 1}, {"catch-all", 594, 64, 6}, {"huge", 2000, 1, 1}} {
		pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: l.name, UID: types.UID("uid-" + l.name)}}
		pl.Spec.Type = flowcontrolv1.PriorityLevelEnablementLimited
		pl.Spec.Limited = &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: i32(l.shares),
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
				Queuing: &flowcontrolv1.QueuingConfiguration{Queues: l.queues, HandSize: l.hand, QueueLengthLimit: 50}},
		}
		pls = append(pls, pl)
		fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "to-" + l.name, UID: types.UID("uid-to-" + l.name)}}
		fs.Spec.MatchingPrecedence = int32(100 + i)
		fs.Spec.PriorityLevelConfiguration.Name = l.name
		fss = append(fss, fs)
	}
	return fss, pls, 3000
}

// genEstimates is the grid of work estimates in the given levels plus one
// the controller does not know; with r, a sample of n of them instead.
func genEstimates(levels []string, r *rand.Rand, n int) []oracleEstimate {
	levels = append(slices.Clone(levels), "absent")
	var out []oracleEstimate
	infos := map[string]request.RequestInfo{}
	add := func(method, u, level string, objects, size int64, watchers int) {
		info, ok := infos[method+" "+u]
		if !ok {
			req, err := ParseRequest(method, u, NewUserIdentity("oracle"))
			if err != nil {
				panic(fmt.Sprintf("%s %s: %v", method, u, err))
			}
			info = req.Info
			infos[method+" "+u] = info
		}
		out = append(out, oracleEstimate{Method: method, URL: u, Info: info, Level: level, Objects: objects, AvgSize: size, Watchers: watchers})
	}
	if r != nil {
		for len(out) < n {
			g := pick(r, estimateGridURLs)
			add(g.method, g.url, pick(r, levels), pick(r, estimateGridObjects), pick(r, estimateGridSizes), pick(r, estimateGridWatchers))
		}
		return out
	}
	for _, level := range levels {
		for _, g := range estimateGridURLs {
			if g.method == "GET" && !strings.Contains(g.url, "/configmaps/x") {
				for _, objects := range estimateGridObjects {
					for _, size := range estimateGridSizes {
						add(g.method, g.url, level, objects, size, 0)
					}
				}
				continue
			}
			for _, w := range estimateGridWatchers {
				add(g.method, g.url, level, 100, 1000, w)
			}
		}
	}
	return out
}

// engineEstimate is what the engine replaying rel estimates for e in a level
// with the given max seats (0: none).
func engineEstimate(rel Release, e oracleEstimate, maxSeats uint64) WorkEstimate {
	key := e.Info.Resource
	if e.Info.APIGroup != "" {
		key += "." + e.Info.APIGroup
	}
	counts := ObjectCounts{}
	switch {
	case e.Objects == objectsStale:
		counts[key] = ObjectStats{Count: -1}
	case e.Objects >= 0:
		counts[key] = ObjectStats{Count: e.Objects, AvgSize: e.AvgSize}
	}
	w, ok := EstimateWork(rel, Request{Method: e.Method, URL: e.URL, Info: e.Info}, counts, e.Watchers, maxSeats)
	if !ok {
		// no count for the resource: upstream's tracker does not know it,
		// and the estimator gives it 1 seat
		w = WorkEstimate{InitialSeats: 1}
	}
	return w
}

// TestReleaseDifferential runs generated configurations, requests and work
// estimates through the real APF code of each selected k8s.io/apiserver
// release (hack/apf-oracle, built against the release) and through the
// engine replaying that release, and requires the same FlowSchema, level,
// UIDs, distinguisher, hash and hand, the same nominal, lower, upper and
// current limits, max seats and seat_fair_frac, and the same work estimate
// (EstimateWork: initial and final seats, additional latency) for the
// estimate grid (estimateGridURLs × object counts × sizes or watchers, in
// levels of max seats 1 to 300 and without one) and a sample of it in every
// generated configuration. The oracle's estimator is the release's own
// (request.NewWorkEstimator with its DefaultWorkEstimatorConfig and the
// release's default feature gates), fed the case's count by its object-count
// (v0.29-v0.33) or storage-stats (v0.34 on) getter, with etcd reporting
// progress notify support as a real server's does.
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
	classified, levels, estimates, listSeats, wideLists, wideWrites := 0, 0, 0, 0, 0, 0
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
			want := engineEstimate(rel, e, maxSeats[e.Level])
			g := oc.Estimates[i]
			if g.Initial != want.InitialSeats || g.Final != want.FinalSeats || g.AdditionalNs != int64(want.AdditionalLatency) {
				t.Fatalf("config %d, level %s (max seats %d), %s %s with %d objects of %d bytes, %d watchers: upstream %d initial, %d final seats, %dns; the engine replaying %s says %d, %d, %dns",
					c, e.Level, maxSeats[e.Level], e.Method, e.URL, e.Objects, e.AvgSize, e.Watchers, g.Initial, g.Final, g.AdditionalNs, rel,
					want.InitialSeats, want.FinalSeats, int64(want.AdditionalLatency))
			}
			estimates++
			if e.Info.Verb == "list" || e.Info.Verb == "watch" {
				listSeats++
				if g.Initial > 1 {
					wideLists++
				}
			} else if g.Final > 0 {
				wideWrites++
			}
		}
	}
	t.Logf("k8s.io/apiserver v0.%d: %d classifications, %d levels' limits (borrowing branches %v) and %d work estimates (%d of LISTs and WATCHes from object counts, %d of them above 1 seat; %d writes with final seats) identical to the engine replaying %s",
		rel.Minor, classified, levels, branches, estimates, listSeats, wideLists, wideWrites, rel)
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
			w, g := engineEstimate(rel, e, maxSeats[e.Level]), oc.Estimates[i]
			if g.Initial != w.InitialSeats || g.Final != w.FinalSeats || g.AdditionalNs != int64(w.AdditionalLatency) {
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
		var names []string
		for _, pl := range pls {
			names = append(names, pl.Name)
		}
		oc.Estimates = genEstimates(names, r, 40)
		in.Configs = append(in.Configs, oc)
		reqs = append(reqs, rs)
	}
	// the whole grid in levels of known max seats
	fss, pls, serverCL := estimateGridLevels()
	var names []string
	for _, pl := range pls {
		names = append(names, pl.Name)
	}
	in.Configs = append(in.Configs, oracleConfig{FlowSchemas: fss, PriorityLevels: pls, ServerCL: serverCL, Estimates: genEstimates(names, nil, 0)})
	reqs = append(reqs, nil)
	return in, reqs
}

// TestEstimateGridLevels checks that the levels of the estimate grid have
// the max seats its comment promises, so that the grid meets caps of 1, of
// fewer than 10, of 10 (the 1.29-1.33 cap), between 10 and 100 (the LIST cap
// from 1.34), and above 100.
func TestEstimateGridLevels(t *testing.T) {
	_, pls, serverCL := estimateGridLevels()
	got := map[string]uint64{}
	for _, l := range ComputeLimits(pls, serverCL) {
		got[l.Name] = l.MaxSeats
	}
	want := map[string]uint64{"exempt": 0, "one": 1, "five": 5, "ten": 10, "wide": 45, "catch-all": 90, "huge": 300}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("max seats %v, want %v", got, want)
	}
}
