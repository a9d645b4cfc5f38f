package reconstruct_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	testfixture "github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// fateOf is what a test compares of a fate.
type fateOf struct {
	Index                            int64
	Level, FlowSchema, Distinguisher string
	At                               time.Time
	Rejected                         bool
	Reason                           string
	Status                           int
	Agrees                           bool
	Class                            string
	Wait                             time.Duration
	WaitFrom                         string
	Seats, Queue                     int
	SeatsInUse, Limit, Waiting       int
}

func keepFate(f *reconstruct.Fate) fateOf {
	return fateOf{f.Index, f.Level, f.FlowSchema, f.Distinguisher, f.At, f.Rejected, f.Reason, f.Status, f.Agrees, f.Class, f.Wait, string(f.WaitFrom),
		f.Seats, f.Queue, f.SeatsInUse, f.Limit, f.Waiting}
}

// alone reconstructs one recording's files by themselves: its result and
// its fates.
func alone(t *testing.T, f fixture, paths ...string) (*reconstruct.Result, []fateOf) {
	t.Helper()
	var fates []fateOf
	res := reconstructFiles(t, f, reconstruct.Options{OnFate: func(x *reconstruct.Fate) { fates = append(fates, keepFate(x)) }}, paths...)
	return res, fates
}

// together reconstructs the files of several recordings as the instances
// they are split into, each instance with the fixture tune names: the
// result and the fates by instance.
func together(t *testing.T, tune func(string) fixture, paths ...string) (*reconstruct.Result, *workload.Files, map[string][]fateOf) {
	t.Helper()
	files, err := input.OpenFiles(paths, input.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	fates := map[string][]fateOf{}
	res, err := reconstruct.RunInstances(files, reconstruct.Options{OnFate: func(x *reconstruct.Fate) {
		fates[x.Record.Instance] = append(fates[x.Record.Instance], keepFate(x))
	}}, reconstruct.InstanceOptions{Resolve: files.Resolve, Tune: func(name string, o *reconstruct.Options) {
		f := tune(name)
		o.Config, o.ServerConcurrencyLimit, o.Counts = f.config, f.scl, f.counts
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res, files, fates
}

// unzipped writes a recording's httplog and audit log to dir/<recording>.
func unzipped(t *testing.T, f fixture, dir string) (httplog, audit string) {
	d := filepath.Join(dir, f.name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return testfixture.Gunzip(t, filepath.Join(f.dir, recording.HTTPLogFile), d), testfixture.Gunzip(t, filepath.Join(f.dir, recording.AuditLogFile), d)
}

// withoutInstances is an incident without its instance counts (which a
// reconstruction alone does not name).
func withoutInstances(in []rejections.Incident) []rejections.Incident {
	out := slices.Clone(in)
	for i := range out {
		out[i].Instances = nil
	}
	return out
}

// TestInstancesEachAsAlone gives two recordings' logs as two apiserver
// instances (httplog + audit of each, and their audit logs alone): each
// instance must be reconstructed exactly as its recording alone (every
// fate, the agreements by level, the incidents with their rejected
// clients, counts and seat holders), with its own limit; the httplog files
// go to the instance of the audit log they were joined to; and the report
// has one entry per instance, with the merged incidents' clients the sum of
// the instances'.
func TestInstancesEachAsAlone(t *testing.T) {
	fa, fb := loadFixture(t, filepath.Join(recordings, "quiet")), loadFixture(t, filepath.Join(recordings, "lists"))
	if fa.scl == fb.scl {
		t.Fatalf("the two recordings have the same server concurrency limit %d: the test would not tell limits apart", fa.scl)
	}
	dir := t.TempDir()
	ha, aa := unzipped(t, fa, dir)
	hb, ab := unzipped(t, fb, dir)
	byName := map[string]fixture{"quiet/audit.log": fa, "lists/audit.log": fb}
	tune := func(name string) fixture {
		f, ok := byName[name]
		if !ok {
			t.Fatalf("unexpected instance %q", name)
		}
		return f
	}
	for _, in := range []struct {
		name  string
		a, b  []string
		paths []string
	}{
		{"httplog+audit", []string{ha, aa}, []string{hb, ab}, []string{ha, aa, hb, ab}},
		{"audit", []string{aa}, []string{ab}, []string{ab, aa}},
	} {
		t.Run(in.name, func(t *testing.T) {
			wantA, fatesA := alone(t, fa, in.a...)
			wantB, fatesB := alone(t, fb, in.b...)
			got, files, fates := together(t, tune, in.paths...)
			if len(got.Instances) != 2 {
				t.Fatalf("%d instances, want 2: %v", len(got.Instances), got.Instances)
			}
			for i, want := range []struct {
				name  string
				f     fixture
				res   *reconstruct.Result
				fates []fateOf
			}{{"lists/audit.log", fb, wantB, fatesB}, {"quiet/audit.log", fa, wantA, fatesA}} {
				g := got.Instances[i]
				if g.Name != want.name {
					t.Fatalf("instance %d is %q, want %q", i, g.Name, want.name)
				}
				if g.ServerConcurrencyLimit != want.f.scl {
					t.Errorf("%s: server concurrency limit %d, want its own %d", g.Name, g.ServerConcurrencyLimit, want.f.scl)
				}
				if len(fates[g.Name]) != len(want.fates) || len(want.fates) == 0 {
					t.Fatalf("%s: %d fates, alone %d", g.Name, len(fates[g.Name]), len(want.fates))
				}
				for j := range want.fates {
					if fates[g.Name][j] != want.fates[j] {
						t.Fatalf("%s: fate %d:\n got %+v\nwant %+v", g.Name, j, fates[g.Name][j], want.fates[j])
					}
				}
				if !reflect.DeepEqual(g.Levels, want.res.Levels) {
					t.Errorf("%s: levels\n got %+v\nwant %+v", g.Name, g.Levels, want.res.Levels)
				}
				if len(want.res.Incidents) == 0 {
					t.Errorf("%s: no incident alone: nothing to compare", g.Name)
				}
				if !reflect.DeepEqual(g.Incidents, want.res.Incidents) {
					t.Errorf("%s: incidents differ from the recording alone\n got %+v\nwant %+v", g.Name, g.Incidents, want.res.Incidents)
				}
				if g.Records != want.res.Records || g.Threshold != want.res.Threshold {
					t.Errorf("%s: %d records, τ %v; alone %d, %v", g.Name, g.Records, g.Threshold, want.res.Records, want.res.Threshold)
				}
			}
			if s, a, b := got.Sum(), wantA.Sum(), wantB.Sum(); s.Agreeing() != a.Agreeing()+b.Agreeing() || s.Total() != a.Total()+b.Total() {
				t.Errorf("summed agreement %d/%d, the instances' %d/%d", s.Agreeing(), s.Total(), a.Agreeing()+b.Agreeing(), a.Total()+b.Total())
			}
			rep := got.Report("x")
			if len(rep.Instances) != 2 || rep.Instances[0].Fates == nil {
				t.Fatalf("report instances %+v", rep.Instances)
			}
			for i, ri := range rep.Instances {
				want := []*reconstruct.Result{wantB, wantA}[i]
				aloneRep := want.Report("alone")
				if !reflect.DeepEqual(withoutInstances(ri.Incidents), withoutInstances(aloneRep.Incidents)) {
					t.Errorf("%s: the report's incidents differ from the recording's alone", ri.Name)
				}
				if s := want.Sum(); ri.Fates.Agreeing != s.Agreeing() || ri.Fates.Total != s.Total() {
					t.Errorf("%s: fates %+v, alone %d/%d", ri.Name, *ri.Fates, s.Agreeing(), s.Total())
				}
			}
			checkSummedClients(t, rep, wantA.Report("a"), wantB.Report("b"))
			split := strings.Join(files.Split([]string{"lists/audit.log", "quiet/audit.log"}), "\n")
			if in.name == "httplog+audit" && (!strings.Contains(split, "httplog apiserver.log joined to it by audit ID") || strings.Count(split, "joined") != 2) {
				t.Errorf("the split does not say the httplog files were joined to their audit logs:\n%s", split)
			}
			t.Logf("split:\n%s", split)
		})
	}
}

// checkSummedClients: the rejected and seat-holding clients of the merged
// report's incidents, summed by level and client, are the sums of the
// reports alone.
func checkSummedClients(t *testing.T, merged *rejections.Report, alone ...*rejections.Report) {
	t.Helper()
	type key struct {
		level string
		c     rejections.ClientShare
	}
	sum := func(reps ...*rejections.Report) (rej, held map[key]float64) {
		rej, held = map[key]float64{}, map[key]float64{}
		for _, r := range reps {
			for _, in := range r.Incidents {
				for _, c := range in.Clients.Rejected {
					k := key{in.Level, rejections.ClientShare{User: c.User, ServiceAccount: c.ServiceAccount, UserAgent: c.UserAgent, FlowSchema: c.FlowSchema, Distinguisher: c.Distinguisher}}
					rej[k] += c.Count
				}
				for _, c := range in.Clients.HeldSeats {
					k := key{in.Level, rejections.ClientShare{User: c.User, ServiceAccount: c.ServiceAccount, UserAgent: c.UserAgent, FlowSchema: c.FlowSchema, Distinguisher: c.Distinguisher}}
					held[k] += *c.SeatSeconds
				}
			}
		}
		return rej, held
	}
	gr, gh := sum(merged)
	wr, wh := sum(alone...)
	if len(wr) == 0 {
		t.Fatal("no rejected client in the reports alone: nothing to compare")
	}
	if !reflect.DeepEqual(gr, wr) {
		t.Errorf("merged rejected clients\n got %v\nwant %v", gr, wr)
	}
	if len(gh) != len(wh) {
		t.Errorf("merged seat holders: %d, the reports alone %d", len(gh), len(wh))
	}
	for k, v := range wh {
		if d := gh[k] - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("%v held %.6f seat-seconds merged, %.6f alone", k, gh[k], v)
		}
	}
	var total float64
	for _, in := range merged.Incidents {
		total += in.Rejected
		var n float64
		for _, ic := range in.Instances {
			n += ic.Count
		}
		if n != in.Rejected {
			t.Errorf("%s incident: %v rejected, its instances' counts sum to %v", in.Level, in.Rejected, n)
		}
	}
	var want float64
	for _, r := range alone {
		for _, in := range r.Incidents {
			want += in.Rejected
		}
	}
	if total != want {
		t.Errorf("merged report: %v rejected, the reports alone %v", total, want)
	}
}

// TestInstancesMergeOverlapping gives one recording's audit log twice, as
// two instances (two directories): the incidents overlap exactly, so the
// merged report has the incidents of one, each with every client's
// rejections and seat-seconds doubled and both instances counted.
func TestInstancesMergeOverlapping(t *testing.T) {
	f := loadFixture(t, filepath.Join(recordings, "quiet"))
	dir := t.TempDir()
	_, audit := unzipped(t, f, dir)
	other := filepath.Join(dir, "again")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, audit, filepath.Join(other, "audit.log"))
	want, _ := alone(t, f, audit)
	got, _, _ := together(t, func(string) fixture { return f }, audit, filepath.Join(other, "audit.log"))
	if len(got.Instances) != 2 {
		t.Fatalf("%d instances, want 2", len(got.Instances))
	}
	wantRep, gotRep := want.Report("a"), got.Report("b")
	if len(gotRep.Incidents) != len(wantRep.Incidents) || len(wantRep.Incidents) == 0 {
		t.Fatalf("%d merged incidents, one instance alone %d", len(gotRep.Incidents), len(wantRep.Incidents))
	}
	checkSummedClients(t, gotRep, wantRep, wantRep)
	for _, in := range gotRep.Incidents {
		if len(in.Instances) != 2 || in.Instances[0].Count != in.Instances[1].Count {
			t.Errorf("%s: instances %+v, want both with the same count", in.Level, in.Instances)
		}
	}
}

// TestRotatedSeriesIsOneInstance cuts a recording's audit log in two, the
// way kube-apiserver's rotation names the older part
// (audit-<time>.log): the two files are one instance, reconstructed as the
// whole log.
func TestRotatedSeriesIsOneInstance(t *testing.T) {
	f := loadFixture(t, filepath.Join(recordings, "quiet"))
	dir := t.TempDir()
	_, audit := unzipped(t, f, dir)
	lines := readLines(t, audit)
	rot := filepath.Join(dir, "rot")
	if err := os.MkdirAll(rot, 0o755); err != nil {
		t.Fatal(err)
	}
	older, current := filepath.Join(rot, "audit-2026-11-27T10-00-00.000.log"), filepath.Join(rot, "audit.log")
	writeLines(t, older, lines[:len(lines)/2])
	writeLines(t, current, lines[len(lines)/2:])
	want, wantFates := alone(t, f, audit)
	got, files, fates := together(t, func(string) fixture { return f }, current, older)
	if len(got.Instances) != 1 || got.Instances[0].Name != "audit.log" {
		t.Fatalf("instances %+v, want one, audit.log", got.Instances)
	}
	if !reflect.DeepEqual(fates["audit.log"], wantFates) {
		t.Errorf("the rotated series' fates differ from the whole log's")
	}
	if !reflect.DeepEqual(got.Incidents, want.Incidents) || !reflect.DeepEqual(got.Levels, want.Levels) {
		t.Errorf("the rotated series' incidents or levels differ from the whole log's")
	}
	if split := files.Split([]string{"audit.log"}); len(split) != 1 || !strings.Contains(split[0], workload.WhyRotated) {
		t.Errorf("split %q does not say it is a rotated series", split)
	}
}

func readLines(t *testing.T, path string) []string {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func writeLines(t *testing.T, path string, lines []string) {
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInstanceKeepsTheOrderOfTies: an instance whose requests come from two
// inputs (an audit log, and the httplog lines that joined none of its
// events) is reconstructed in the order the workload gave them, ties of
// arrival included: who of a burst arriving at one instant finds the seat
// and the queue taken depends on it.
func TestInstanceKeepsTheOrderOfTies(t *testing.T) {
	var reqs, onlyA []workload.Request
	for i, u := range []string{"alice", "bob", "alice", "bob", "alice", "bob"} {
		r := logged(fmt.Sprintf("a%d", i), u, 0, 10, 10, 200)
		r.Instance = "a.log"
		if u == "bob" {
			r.Instance = "a-httplog.log" // joined to no audit event
		}
		reqs = append(reqs, r)
		onlyA = append(onlyA, r)
		b := logged(fmt.Sprintf("b%d", i), "carol", 0, 1, 1, 200)
		b.Instance = "b.log"
		reqs = append(reqs, b)
	}
	order := func(run func(opts reconstruct.Options) error) []string {
		var ids []string
		if err := run(reconstruct.Options{Config: tinyConfig(), ServerConcurrencyLimit: 7, NoBorrowing: true, OnFate: func(f *reconstruct.Fate) {
			if !strings.HasPrefix(f.Record.AuditID, "b") {
				ids = append(ids, fmt.Sprintf("%s:%v:%s", f.Record.AuditID, f.Rejected, f.Reason))
			}
		}}); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	want := order(func(o reconstruct.Options) error {
		_, err := reconstruct.RunReader(&sliceReader{reqs: onlyA}, o, nil)
		return err
	})
	got := order(func(o reconstruct.Options) error {
		_, err := reconstruct.RunInstances(&sliceReader{reqs: reqs}, o, reconstruct.InstanceOptions{Resolve: func(s string) string {
			if s == "a-httplog.log" {
				return "a.log"
			}
			return s
		}}, nil)
		return err
	})
	if !slices.Equal(got, want) {
		t.Errorf("fates of instance a.log\n got %v\nwant %v (alone, in the workload's order)", got, want)
	}
}
