package main

import (
	"context"
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
)

// explainState is the configuration and live state the explain commands
// work on.
type explainState struct {
	fss   []*flowcontrolv1.FlowSchema
	pls   []*flowcontrolv1.PriorityLevelConfiguration
	lives []*explain.Live
	// snaps are the snapshots read (nil with --defaults).
	snaps []*dump.Snapshot
	// inferredSCL is the server concurrency limit inferred from the
	// metrics of the first snapshot, 0 when unknown.
	inferredSCL int
	notes       []string
	// release is the Kubernetes release replayed, releaseFrom where it
	// came from (resolveRelease).
	release     engine.Release
	releaseFrom string
}

// loadExplainState reads the configuration (and the live state unless
// configOnly) from src, or takes the upstream defaults; a failure to read
// the live state falls back to the configuration alone with a note, since
// the classification needs only the objects.
func loadExplainState(ctx context.Context, src dump.Source, defaults bool, kubeVersion string, opts dump.CaptureOptions) (*explainState, error) {
	st := &explainState{}
	if defaults {
		rel, from, _, err := resolveRelease(kubeVersion, nil)
		if err != nil {
			return nil, err
		}
		st.release, st.releaseFrom = rel, from
		st.fss, st.pls = lint.DefaultsFor(rel)
		return st, nil
	}
	capture, err := src.Capture(ctx, opts)
	if err != nil && opts.Parts != dump.PartObjects|dump.PartVersion {
		st.notes = append(st.notes, fmt.Sprintf("note: live state unavailable (%v); explaining from the configuration alone", err))
		capture, err = src.Capture(ctx, dump.CaptureOptions{Parts: dump.PartObjects | dump.PartVersion})
	}
	if err != nil {
		return nil, fmt.Errorf("reading the configuration from %s: %w", src.Describe(), err)
	}
	if len(capture.Snapshots) == 0 {
		msg := "no apiserver answered"
		if len(capture.Failures) > 0 {
			msg = capture.Failures[0].Error()
		}
		return nil, fmt.Errorf("reading the configuration from %s: %s", src.Describe(), msg)
	}
	for _, f := range capture.Failures {
		st.notes = append(st.notes, "note: "+f.Error())
	}
	st.snaps = capture.Snapshots
	rel, from, note, err := resolveRelease(kubeVersion, st.snaps)
	if err != nil {
		return nil, err
	}
	st.release, st.releaseFrom = rel, from
	if note != "" {
		st.notes = append(st.notes, note)
	}
	snap := capture.Snapshots[0]
	for i := range snap.FlowSchemas {
		st.fss = append(st.fss, &snap.FlowSchemas[i])
	}
	for i := range snap.PriorityLevels {
		st.pls = append(st.pls, &snap.PriorityLevels[i])
	}
	for _, s := range capture.Snapshots {
		if s.PriorityLevelDump != nil || s.Metrics != nil {
			st.lives = append(st.lives, liveFromSnapshot(s))
		}
	}
	if _, cur := snap.LatestMetrics(); cur != nil {
		// Only a level without borrowingLimitPercent reveals the limit
		// (upper - nominal); exempt never has one (engine.InferServerConcurrencyLimit).
		nominal := cur.SumBy("apiserver_flowcontrol_nominal_limit_seats", "priority_level")
		upper := cur.SumBy("apiserver_flowcontrol_upper_limit_seats", "priority_level")
		n, ok1 := nominal[flowcontrolv1.PriorityLevelConfigurationNameExempt]
		u, ok2 := upper[flowcontrolv1.PriorityLevelConfigurationNameExempt]
		if ok1 && ok2 {
			if v, err := engine.InferServerConcurrencyLimit(n, u); err == nil {
				st.inferredSCL = v
			}
		}
	}
	return st, nil
}

// liveFromSnapshot converts package dump's snapshot into the plain state
// package explain reads (explain stays free of client libraries, which
// package dump needs).
func liveFromSnapshot(s *dump.Snapshot) *explain.Live {
	l := &explain.Live{Instance: s.Instance, At: s.CapturedAt}
	if s.PriorityLevelDump != nil {
		l.Levels = map[string]explain.LevelRow{}
		for _, r := range s.PriorityLevelDump {
			if r.Placeholder {
				continue
			}
			l.Levels[r.Name] = explain.LevelRow{Name: r.Name, ActiveQueues: r.ActiveQueues, WaitingRequests: r.WaitingRequests,
				ExecutingRequests: r.ExecutingRequests, DispatchedRequests: r.DispatchedRequests, RejectedRequests: r.RejectedRequests,
				TimedoutRequests: r.TimedoutRequests, CancelledRequests: r.CancelledRequests}
		}
	}
	for _, q := range s.QueueDump {
		if q.Placeholder {
			continue
		}
		l.Queues = append(l.Queues, explain.QueueRow{PriorityLevel: q.PriorityLevel, Index: q.Index, PendingRequests: q.PendingRequests,
			ExecutingRequests: q.ExecutingRequests, SeatsInUse: q.SeatsInUse, MaxSeatsSum: q.MaxSeatsSum, TotalWorkSum: q.TotalWorkSum})
	}
	for _, r := range s.RequestDump {
		l.Requests = append(l.Requests, explain.RequestRow{PriorityLevel: r.PriorityLevel, FlowSchema: r.FlowSchema, QueueIndex: r.QueueIndex,
			IndexInQueue: r.IndexInQueue, FlowDistinguisher: r.FlowDistinguisher, ArriveTime: r.ArriveTime, InitialSeats: r.InitialSeats,
			FinalSeats: r.FinalSeats, UserName: r.UserName, Verb: r.Verb, Path: r.APIPath})
	}
	l.Prev, l.Cur = s.LatestMetrics()
	return l
}

// namesByUID maps the UIDs of the configuration objects to their names.
func namesByUID(fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration) map[string]string {
	m := map[string]string{}
	for _, fs := range fss {
		if fs.UID != "" {
			m[string(fs.UID)] = fs.Name
		}
	}
	for _, pl := range pls {
		if pl.UID != "" {
			m[string(pl.UID)] = pl.Name
		}
	}
	return m
}
