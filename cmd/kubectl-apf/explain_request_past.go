package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// noteCaptureTime is said when a logged request's fate is the state read
// now's, not its own moment's.
const noteCaptureTime = "the fate shown is that of the state read now, not of the logged request's moment: give the log as a file (--from-log FILE, --from-audit FILE, or --workload FILE...) to reconstruct it"

// pastFiles are the files the logged request's moment is reconstructed
// from: --from-log and --from-audit when they name files, and --workload.
func (o *ExplainRequestOptions) pastFiles() []string {
	var paths []string
	for _, p := range []string{o.FromLog, o.FromAudit} {
		if p == "" || p == "-" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			paths = append(paths, p)
		}
	}
	for _, p := range o.Workloads {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	return paths
}

// skippedNotes says what reading the recorded request skipped, for the
// values the reconstruction did not read again (it says so for those).
func (o *ExplainRequestOptions) skippedNotes() []string {
	past := o.pastFiles()
	var notes []string
	for value, n := range o.recordSkipped {
		if !slices.Contains(past, value) {
			notes = append(notes, "note: "+n)
		}
	}
	slices.Sort(notes)
	return notes
}

// explainPast reconstructs the logged request's moment from the log and
// makes it the verdict. It reports false when there is no log file to
// reconstruct from, or the request is not found in it (true, with a note,
// when the server answered it ahead of APF).
func (o *ExplainRequestOptions) explainPast(ctx context.Context, st *state.State, ex *explain.Explanation) (bool, error) {
	if o.VLogs.enabled() && o.recorded != nil {
		return o.explainPastVLogs(ctx, st, ex)
	}
	paths := o.pastFiles()
	if len(paths) == 0 || o.recorded == nil {
		return false, nil
	}
	rec := o.recorded
	var found *reconstruct.Fate
	match := func(w *workload.Request) bool {
		if rec.AuditID != "" {
			return w.AuditID == rec.AuditID
		}
		return w.Arrival.Equal(rec.Arrival) && w.URI == rec.URI
	}
	identify := o.identifyLike(rec, match)
	_, yearKnown := logs.Year(paths)
	var instance string
	res, files, err := reconstructFiles(ctx, paths, &o.Instances, st, o.Server.RequestTimeout, reconstruct.Options{
		Focus:    match,
		Identify: identify,
		OnFate: func(f *reconstruct.Fate) {
			if found == nil && f.Snapshot != nil {
				instance = f.Record.Instance
				g := *f
				g.Record = nil
				found = &g
			}
		},
	}, o.ErrOut)
	if err != nil {
		return false, err
	}
	ex.Notes = append(ex.Notes, workloadNotesOf(files, res)...)
	if found == nil {
		if reconstruct.AnsweredBeforeAPF(rec) {
			ex.Notes = append(ex.Notes, fmt.Sprintf("the server answered %d ahead of APF (authentication, or a refused impersonation), which never saw this request", rec.Status))
			return true, nil
		}
		return false, nil
	}
	if len(res.InstancesRead) > 1 {
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
		p.Wait, p.WaitFrom = &w, f.WaitFrom
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
// (which match finds): explain's (the flags', or its audit event's), so
// that its flow and hand are the ones explain shows; so are the other
// requests of its client (user agent and address) whose log names no
// user, which the reconstruction would otherwise put in a flow of that
// client, apart from it. nil when explain has no identity.
func (o *ExplainRequestOptions) identifyLike(rec *workload.Request, match func(*workload.Request) bool) func(*workload.Request) (engine.Identity, bool) {
	id := o.identity
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
