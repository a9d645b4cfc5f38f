package fromlog

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
)

// minLead is how long before a request a log must start for its moment to
// be reconstructed without a note, at least: a level's requests wait up to
// its wait limit (15 s by default) and run after it.
const minLead = 15 * time.Second

// noteCaptureTime is said when a logged request's fate is the state read
// now's, not its own moment's.
const noteCaptureTime = "the fate shown is that of the state read now, not of the logged request's moment: give the log as a file (--from-log FILE, --from-audit FILE, or --workload FILE...) to reconstruct it"

// Recorded is a request read from a log (ReadRecorded), and where its
// moment is reconstructed from.
type Recorded struct {
	Request *workload.Request
	// HTTPLog says the request is an httplog line's (joined to its audit
	// event or not), whose classification, seats and times are compared
	// with the replay's; otherwise it is an audit event's.
	HTTPLog bool
	// Skipped says, per value of --from-log and --from-audit, the lines
	// skipped finding the request (ReadRecorded).
	Skipped map[string]string
	// Files are the files the request's moment is reconstructed from, with
	// their instances (none: the moment is not reconstructed). VLogs, when
	// set, is the store whose events within Margin of the request are
	// reconstructed instead.
	Files  logs.Spec
	VLogs  Store
	Margin time.Duration
}

// Explain compares the recorded request rec with the replay in ex and
// makes its reconstructed moment the verdict, with c's configuration; id
// is explain's identity of the request (nil: none). Without a moment to
// reconstruct, or when the request is not found in the log, a note says
// that the fate shown is the state's read now.
func Explain(ctx context.Context, ex *explain.Explanation, rec Recorded, c Config, id *engine.Identity) error {
	r := rec.Request
	if rec.HTTPLog {
		ex.CompareNames("httplog", r.FlowSchema, r.PriorityLevel, r.Status)
		if r.HasFlowDistinguisher {
			ex.CompareDistinguisher(r.FlowDistinguisher)
		}
		ex.CompareWork(explain.RecordedWork{HasSeats: r.HasSeats, InitialSeats: r.InitialSeats, FinalSeats: r.FinalSeats, AdditionalLatency: r.AdditionalLatency,
			HasExecution: r.HasServiceTime, ExecutionTime: r.ServiceTime, Latency: r.Latency})
	} else {
		ex.Recorded = &explain.Recorded{Source: "audit", Status: r.Status,
			Detail: "audit events do not record the classification; use --probe to compare with the server"}
	}
	past, err := explainPast(ctx, ex, rec, c, id)
	if err != nil {
		return err
	}
	if past {
		ex.CompareFate(r.Status)
	} else {
		ex.Notes = append(ex.Notes, noteCaptureTime)
	}
	ex.Notes = append(ex.Notes, skippedNotes(rec)...)
	if r.TimeUnknown {
		ex.Notes = append(ex.Notes, "the log line has no klog header (Lmmdd hh:mm:ss.uuuuuu ...), as it was published: when the request was logged is unknown")
	}
	return nil
}

// skippedNotes says what reading the recorded request skipped, for the
// values the reconstruction did not read again (it says so for those).
func skippedNotes(rec Recorded) []string {
	var notes []string
	for value, n := range rec.Skipped {
		if !slices.Contains(rec.Files.Paths, value) {
			notes = append(notes, "note: "+n)
		}
	}
	slices.Sort(notes)
	return notes
}

// explainPast reconstructs the recorded request's moment and makes it the
// verdict. It reports false when there is nothing to reconstruct from, or
// the request is not found there (true, with a note, when the server
// answered it ahead of APF).
func explainPast(ctx context.Context, ex *explain.Explanation, rec Recorded, c Config, id *engine.Identity) (bool, error) {
	r := rec.Request
	match := func(w *workload.Request) bool {
		if r.AuditID != "" {
			return w.AuditID == r.AuditID
		}
		// by its moment of the year: a log whose klog headers tell no
		// year is read in the one its metrics give (reconstructFiles),
		// the request found before they were loaded in the readers'
		return sameMomentOfYear(w.Arrival, r.Arrival) && w.URI == r.URI
	}
	// the request's fate in each instance that holds it: one, unless a
	// file given twice over holds it too (one event pasted into a file
	// beside the log it came from, each file read as an instance)
	type seen struct {
		fate     *reconstruct.Fate
		instance string
	}
	var fates []seen
	opts := reconstruct.Options{Focus: match, Identify: identifyLike(id, r, match),
		OnFate: func(f *reconstruct.Fate) {
			if f.Snapshot != nil && !slices.ContainsFunc(fates, func(s seen) bool { return s.instance == f.Record.Instance }) {
				g := *f
				g.Record, g.Hand = nil, slices.Clone(f.Hand)
				fates = append(fates, seen{&g, f.Record.Instance})
			}
		}}
	var res *reconstruct.Result
	// audit events carry the year
	yearKnown := true
	switch {
	case rec.VLogs != nil:
		rd, pull := rec.VLogs.Around(ctx, r, rec.Margin)
		var err error
		if res, err = reconstruct.RunInstances(rd, c.options(opts), reconstruct.InstanceOptions{}, func(rd workload.Reader) workload.Reader { return logs.Cancellable(ctx, rd) }); err != nil {
			return false, err
		}
		ex.Notes = append(ex.Notes, pull.AroundNotes(rec.Margin)...)
		ex.Notes = append(ex.Notes, resultNotes(res)...)
	case len(rec.Files.Paths) > 0:
		var notes []string
		var err error
		res, notes, yearKnown, _, err = reconstructFiles(ctx, c, rec.Files, opts)
		if err != nil {
			return false, err
		}
		ex.Notes = append(ex.Notes, notes...)
	default:
		return false, nil
	}
	// of several, the instance whose log starts longest before the request
	var found *reconstruct.Fate
	var instance string
	var start time.Time
	for _, s := range fates {
		st := res.Start
		for _, ir := range res.Instances {
			if ir.Name == s.instance && ir.Result != nil {
				st = ir.Start
			}
		}
		if found == nil || s.fate.At.Sub(st) > found.At.Sub(start) {
			found, instance, start = s.fate, s.instance, st
		}
	}
	if found == nil {
		if reconstruct.AnsweredBeforeAPF(r) {
			ex.Notes = append(ex.Notes, fmt.Sprintf("the server answered %d ahead of APF (authentication, or a refused impersonation), which never saw this request", r.Status))
			return true, nil
		}
		return false, nil
	}
	// the requests ahead of it in the level arrived before it: a log that
	// holds none (one audit event pasted from a search) cannot say what it
	// met. A reconstruction of the level empty that disagrees with the
	// server's answer (a 429 "with room for it", on make demo's
	// apf-load-reject) is that blindness, not a finding: no moment then
	lead := found.At.Sub(start)
	switch first := found.Index == 0 || lead <= 0; {
	case first && !found.Agrees:
		ex.Notes = append(ex.Notes, fmt.Sprintf("the log holds no request that arrived before this one (at %s): the requests it met are not in it, so its moment is not reconstructed and the fate shown is that of the state read now; give the log of the minutes before it (--workload FILE)", found.At.UTC().Format("15:04:05.000")))
		return true, nil
	case first:
		ex.Notes = append(ex.Notes, "the log holds no request that arrived before this one: its moment is reconstructed from the log alone, which starts with it (requests that arrived earlier and still waited or ran then are not in it)")
	case lead < max(found.WaitLimit, minLead):
		ex.Notes = append(ex.Notes, fmt.Sprintf("the log starts %v before this request: requests that arrived earlier and still waited or ran then are not in it, so its level may have been fuller than reconstructed", lead.Round(time.Millisecond)))
	}
	if rec.VLogs == nil && len(res.InstancesRead) > 1 {
		ex.Notes = append(ex.Notes, fmt.Sprintf("note: apiserver instance %s served the request: its moment is reconstructed from that instance's requests alone, with its own calibration and limit (the log holds %d instances)", instance, len(res.InstancesRead)))
	}
	ex.SetPast(pastOf(found, yearKnown))
	return true, nil
}

// recordClient is a record's client as the reconstruction tells the requests
// of a log without users apart: its user agent and address without the
// port ("" when the record names neither).
func recordClient(w *workload.Request) string {
	if w.UserAgent == "" && w.SourceIP == "" {
		return ""
	}
	host := w.SourceIP
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return w.UserAgent + "@" + host
}

// pastOf turns a reconstructed fate into explain's view of it; yearKnown
// says whether the log told the year of its time.
func pastOf(f *reconstruct.Fate, yearKnown bool) *explain.Past {
	p := &explain.Past{At: explain.LogTime{Time: f.At, YearKnown: yearKnown}, YearUnknown: !yearKnown, Level: f.Level, Reason: f.Reason, SeatsInUse: f.SeatsInUse, Limit: f.Limit, Waiting: f.Waiting,
		NominalLimit: f.NominalLimit, LimitFromLog: f.LimitFromLog,
		WaitLimit: explain.Duration(f.WaitLimit), Holders: []explain.PastFlow{}}
	p.Reconstructed = explain.VerdictRuns
	if f.Rejected {
		p.Reconstructed = explain.VerdictRejected
	}
	// the verdict is what the log says happened (429 or served), with the
	// reconstructed state around it; where the reconstruction decides
	// otherwise, Disagreement says how
	switch {
	case f.Status == 429 || f.Status == 0 && f.Rejected:
		p.Fate = explain.VerdictRejected
	case f.Wait > 0:
		p.Fate = explain.VerdictQueued
		w := explain.Duration(f.Wait)
		p.Wait, p.WaitFrom = &w, string(f.WaitFrom)
	default:
		p.Fate = explain.VerdictRuns
	}
	if p.Fate != explain.VerdictRejected && !f.Rejected {
		p.Reason = ""
	}
	if !f.Agrees {
		p.Disagreement = f.Class
	}
	if f.Queue >= 0 {
		q := f.Queue
		p.Queue = &q
	}
	if sn := f.Snapshot; sn != nil {
		p.QueueLengthLimit = sn.QueueLengthLimit
		for _, q := range sn.Queues {
			pq := explain.PastQueue{Index: q.Index, Length: q.Length, Chosen: q.Chosen}
			for _, fc := range q.Flows {
				pq.Flows = append(pq.Flows, explain.PastFlow(fc))
			}
			p.Queues = append(p.Queues, pq)
		}
		for _, fc := range sn.Holders {
			p.Holders = append(p.Holders, explain.PastFlow(fc))
		}
	}
	return p
}

// identifyLike is the reconstruction's identity of the recorded request rec
// (which match finds): explain's, id (the flags', or its audit event's), so
// that its flow and hand are the ones explain shows; so are the other
// requests of its client (user agent and address) whose log names no
// user, which the reconstruction would otherwise put in a flow of that
// client, apart from it. nil when explain has no identity.
func identifyLike(id *engine.Identity, rec *workload.Request, match func(*workload.Request) bool) func(*workload.Request) (engine.Identity, bool) {
	if id == nil {
		return nil
	}
	client := recordClient(rec)
	return func(w *workload.Request) (engine.Identity, bool) {
		if match(w) || !w.UserKnown && client != "" && recordClient(w) == client {
			return *id, true
		}
		return engine.Identity{}, false
	}
}

// sameMomentOfYear says whether a and b are the same moment of their years
// (the same month, day and time of day, in UTC).
func sameMomentOfYear(a, b time.Time) bool {
	a, b = a.UTC(), b.UTC()
	_, am, ad := a.Date()
	_, bm, bd := b.Date()
	ah, amin, as := a.Clock()
	bh, bmin, bs := b.Clock()
	return am == bm && ad == bd && ah == bh && amin == bmin && as == bs && a.Nanosecond() == b.Nanosecond()
}
