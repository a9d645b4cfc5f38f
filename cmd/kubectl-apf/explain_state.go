package main

import (
	"context"
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
)

// explainState is the configuration and live state the explain commands
// work on.
type explainState struct {
	fss []*flowcontrolv1.FlowSchema
	pls []*flowcontrolv1.PriorityLevelConfiguration
	// lives are the snapshots with live state (dumps or metrics).
	lives []*dump.Snapshot
	// snaps are the snapshots read (nil with --defaults).
	snaps []*dump.Snapshot
	// inferredSCL is the server concurrency limit inferred from the
	// metrics of the first snapshot, 0 when unknown.
	inferredSCL int
	notes       []string
}

// loadExplainState reads the configuration (and the live state unless
// configOnly) from src, or takes the upstream defaults; a failure to read
// the live state falls back to the configuration alone with a note, since
// the classification needs only the objects.
func loadExplainState(ctx context.Context, src dump.Source, defaults bool, opts dump.CaptureOptions) (*explainState, error) {
	st := &explainState{}
	if defaults {
		st.fss, st.pls = lint.UpstreamDefaults()
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
	snap := capture.Snapshots[0]
	for i := range snap.FlowSchemas {
		st.fss = append(st.fss, &snap.FlowSchemas[i])
	}
	for i := range snap.PriorityLevels {
		st.pls = append(st.pls, &snap.PriorityLevels[i])
	}
	for _, s := range capture.Snapshots {
		if s.PriorityLevelDump != nil || s.Metrics != nil {
			st.lives = append(st.lives, s)
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
