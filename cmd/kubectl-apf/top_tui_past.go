package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui/record"
)

// This file reads the store for the live view: its recent past behind the
// live refreshes (recentPast), and a window of it to step through
// (storeRecording).

// pastWindow is how far back the live view's history from a store goes.
const pastWindow = 30 * time.Minute

// recentPast reads the store's last pastWindow for the live view: the
// level table one frame per step, and a line about the last incident.
func (o *TopTUIOptions) recentPast(ctx context.Context) (*tui.Past, error) {
	h := o.Store
	w, err := history.WindowOptions{Since: pastWindow, Step: h.Step, ScrapeInterval: h.ScrapeInterval}.Resolve(o.ClockOrReal().Now())
	if err != nil {
		return nil, err
	}
	rec, err := storeRecording(ctx, h, w)
	if err != nil {
		return nil, err
	}
	rep, err := history.FindIncidents(ctx, h.Querier, history.IncidentOptions{Query: h.Query, Window: w, ScrapeInterval: h.ScrapeInterval})
	if err != nil {
		return nil, err
	}
	return &tui.Past{Recording: rec, Incident: lastIncident(rep)}, nil
}

// lastIncident is one line about the incident of rep that ended last
// (among the detailed ones), "" when there is none.
func lastIncident(rep *history.Report) string {
	if len(rep.Incidents) == 0 {
		return ""
	}
	last := rep.Incidents[0]
	for _, inc := range rep.Incidents[1:] {
		if inc.End.After(last.End) {
			last = inc
		}
	}
	line := fmt.Sprintf("%s %s–%s, %.0f rejected", last.Level, last.Start.UTC().Format("15:04:05"), last.End.UTC().Format("15:04:05Z"), last.Rejected)
	if len(last.FlowSchemas) > 0 {
		line += fmt.Sprintf(" (%s, FlowSchema %s)", last.FlowSchemas[0].Reason, last.FlowSchemas[0].FlowSchema)
	}
	if last.Diagnosis.Kind != "" {
		line += ": " + last.Diagnosis.Kind
	}
	if rep.Undetailed > 0 {
		line += fmt.Sprintf(" (of the %d largest of %d)", len(rep.Incidents), len(rep.Incidents)+rep.Undetailed)
	}
	return line
}

// storeRecording reads window w from the store as a recording, one frame per
// step, for the view to step through.
func storeRecording(ctx context.Context, h *load.StoreOptions, w history.Window) (*record.Recording, error) {
	times, caps, err := h.Capture(ctx, w.Start, w.End, w.Step)
	if err != nil {
		return nil, err
	}
	if len(caps) == 0 {
		return nil, history.NoSeriesError(ctx, h.Querier, h.Describe(), w)
	}
	rec := &record.Recording{Header: record.Header{Source: h.Describe(), Started: w.Start.UTC(), Interval: w.Step}}
	for i, c := range caps {
		f, err := record.NewFrame(times[i], -1, c, nil)
		if err != nil {
			return nil, err
		}
		rec.Frames = append(rec.Frames, f)
	}
	return rec, nil
}

// playWatch sets the view to play --from back when it is a watch's bundle
// (watchRecording), and says whether it is.
func (o *TopTUIOptions) playWatch(opts *tui.Options) (bool, error) {
	rec, err := o.watchRecording()
	if err != nil || rec == nil {
		return false, err
	}
	opts.Replay, opts.Cluster = rec, "the watch of "+o.From
	if !o.intervalSet {
		opts.Interval = time.Second
	}
	return true, nil
}

// watchRecording plays a watch's bundle (dump bundle --watch) back: a frame
// per scrape, its rates those since the scrape before (dump.WatchFrames);
// nil for any other source.
func (o *TopTUIOptions) watchRecording() (*record.Recording, error) {
	b, ok := o.Source.(*dump.BundleSource)
	if !ok || o.Record != "" {
		return nil, nil
	}
	frames, note, err := b.WatchFrames()
	if err != nil || len(frames) == 0 {
		return nil, err
	}
	if note != "" {
		fmt.Fprintln(o.ErrOut, sanitize.Line(note))
	}
	rec := &record.Recording{Header: record.Header{Source: b.Describe(), Started: frames[0].At.UTC(), Interval: frames[len(frames)-1].At.Sub(frames[0].At) / time.Duration(max(len(frames)-1, 1))}}
	for _, f := range frames {
		rec.Frames = append(rec.Frames, &record.Frame{At: f.At, Requests: -1, Files: f.Files})
	}
	return rec, nil
}
