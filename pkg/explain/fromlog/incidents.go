package fromlog

import (
	"context"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
	"github.com/kubectl-apf/kubectl-apf/pkg/vlogs"
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

// IncidentsVLogs reconstructs the audit events of src's window, pulled
// around each burst of 429s (margin either side), and returns their
// incidents, as Incidents does for files.
func IncidentsVLogs(ctx context.Context, c Config, src *vlogs.Source, gap, margin time.Duration) (*rejections.Report, error) {
	res, pull, err := vlogs.Reconstruct(ctx, src, vlogs.ReconstructOptions{Gap: gap, Margin: margin,
		Reconstruct: c.options(reconstruct.Options{IncidentGap: gap}),
		Wrap:        func(r workload.Reader) workload.Reader { return logs.Cancellable(ctx, r) }})
	if err != nil {
		return nil, err
	}
	rep := res.Report("VictoriaLogs " + src.Client.Describe())
	rep.Release, rep.ReleaseFrom = c.State.Release.String(), c.State.ReleaseFrom
	rep.Notes = append(rep.Notes, pull.Notes()...)
	rep.Notes = append(rep.Notes, resultNotes(res)...)
	rep.Notes = append(rep.Notes, agreementNotes(res)...)
	return rep, nil
}
