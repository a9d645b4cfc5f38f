package main

import (
	"context"
	"os"
	"slices"

	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain/fromlog"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

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

// explainRecorded compares the recorded request with the replay in ex and
// reconstructs its moment from the log's files or the store the request
// was read from (fromlog.Explain).
func (o *ExplainRequestOptions) explainRecorded(ctx context.Context, st *state.State, ex *explain.Explanation) error {
	rec := o.recorded
	rec.HTTPLog = o.FromLog != ""
	// rec.VLogs, when set, is the store the request was read from
	// (recordedFromVLogs)
	if paths := o.pastFiles(); rec.VLogs == nil && len(paths) > 0 {
		spec, err := o.Instances.spec(paths)
		if err != nil {
			return err
		}
		rec.Files = spec
	}
	c, done := logConfig(st, o.Server.RequestTimeout, o.ErrOut)
	defer done()
	if !o.Window.IsZero() {
		// the window resolved: absolute, so not read again to resolve it
		c.Window = absoluteWindow(o.from, o.to)
	}
	return fromlog.Explain(ctx, ex, rec, c, o.identity)
}
