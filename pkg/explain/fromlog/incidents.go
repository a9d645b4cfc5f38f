package fromlog

import (
	"context"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// Incidents reconstructs the log's files (an incident ends gap after its
// last 429) and returns their incidents, with the notes of what was
// skipped and of how far the reconstruction agrees with the log, and the
// time of the log's last request (which the window of --since and --until
// counts back from).
func Incidents(ctx context.Context, c Config, spec logs.Spec, gap time.Duration) (*rejections.Report, time.Time, error) {
	res, notes, _, cut, err := reconstructFiles(ctx, c, spec, reconstruct.Options{IncidentGap: gap})
	if err != nil {
		return nil, time.Time{}, err
	}
	rep := res.Report(strings.Join(spec.Paths, ","))
	if cut != nil {
		// the window read, its open bounds the requests' own
		from, to := cut.From, cut.To
		if from.IsZero() {
			from = res.Start
		}
		if to.IsZero() {
			to = res.End
		}
		rep.Window = rejections.Window{Start: &from, End: &to}
	}
	rep.Release, rep.ReleaseFrom = c.State.Release.String(), c.State.ReleaseFrom
	rep.Notes = append(rep.Notes, notes...)
	rep.Notes = append(rep.Notes, agreementNotes(res)...)
	return rep, res.End, nil
}

// JoinIncidents reconstructs the log's files once and gives each of the
// store's incidents in rep the log's clients over its window, moved back
// by lead (the store sees a burst at the first scrape after its first
// 429).
func JoinIncidents(ctx context.Context, c Config, spec logs.Spec, gap, lead time.Duration, rep *rejections.Report) error {
	stories := reconstruct.NewStories(rep.Incidents, lead)
	res, notes, _, _, err := reconstructFiles(ctx, c, spec, reconstruct.Options{IncidentGap: gap, OnFate: stories.Add})
	if err != nil {
		return err
	}
	rep.Release, rep.ReleaseFrom = c.State.Release.String(), c.State.ReleaseFrom
	rep.Notes = append(rep.Notes, stories.Attach(rep.Incidents, res.Start, res.End)...)
	rep.Notes = append(rep.Notes, notes...)
	rep.Notes = append(rep.Notes, agreementNotes(res)...)
	return nil
}

// Store is a store of audit events (package vlogs' Source): it pulls the
// events a reconstruction needs, and this package reconstructs them. A
// Pull's notes are final once its reader is drained.
type Store interface {
	Describe() string
	// Span is the window the store is asked about.
	Span() (start, end time.Time)
	// Incidents returns a reader of the events around the window's bursts
	// of 429s (bursts less than gap apart joined, margin either side),
	// nil when the window holds no 429.
	// The levels' totals are counted with classify (LevelOf).
	Incidents(ctx context.Context, gap, margin time.Duration, classify func(*workload.Request) (level string, skip bool, err error)) (workload.Reader, Pull, error)
	// Around returns a reader of the events within margin of r.
	Around(ctx context.Context, r *workload.Request, margin time.Duration) (workload.Reader, Pull)
}

// Pull is what a store says of what it pulled.
type Pull = logs.Pull

// IncidentsStore reconstructs the audit events of the store's window,
// pulled around each burst of 429s (margin either side), and returns their
// incidents, as Incidents does for files.
func IncidentsStore(ctx context.Context, c Config, src Store, gap, margin time.Duration) (*rejections.Report, error) {
	o := c.options(reconstruct.Options{IncidentGap: gap})
	rd, pull, err := src.Incidents(ctx, gap, margin, LevelOf(o.Config))
	if err != nil {
		return nil, err
	}
	res := &reconstruct.Result{}
	res.Start, res.End = src.Span()
	if rd != nil {
		if res, err = reconstruct.RunInstances(rd, o, reconstruct.InstanceOptions{}, func(r workload.Reader) workload.Reader { return logs.Cancellable(ctx, r) }); err != nil {
			return nil, err
		}
	}
	rep := res.Report("VictoriaLogs " + src.Describe())
	rep.Release, rep.ReleaseFrom = c.State.Release.String(), c.State.ReleaseFrom
	rep.Notes = append(rep.Notes, pull.Notes()...)
	rep.Notes = append(rep.Notes, resultNotes(res)...)
	rep.Notes = append(rep.Notes, agreementNotes(res)...)
	return rep, nil
}

// LevelOf is the reconstruction's classification under cfg, for a store
// that counts requests by the fields classification reads (vlogs.Classify):
// the level a request goes to, or skip when APF never saw it (answered
// before APF, or exempt from it by its kind).
func LevelOf(cfg *engine.Config) func(w *workload.Request) (level string, skip bool, err error) {
	var cache engine.RequestCache
	return func(w *workload.Request) (string, bool, error) {
		if reconstruct.AnsweredBeforeAPF(w) {
			return "", true, nil
		}
		er, err := cache.Parse(w.Method, w.URI, reconstruct.IdentityOf(w))
		if err == nil && er.Bypass != "" {
			return "", true, nil
		}
		if err != nil {
			return "", false, err
		}
		rf, err := fairqueue.ClassifyRecorded(cfg, w, &er)
		if err != nil {
			return "", false, err
		}
		return rf.PriorityLevel, false, nil
	}
}
