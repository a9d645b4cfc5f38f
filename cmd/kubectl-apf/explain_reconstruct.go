package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// reconstructFiles reconstructs what APF did over the workload files
// (httplog, audit, both joined) under the loaded configuration, each
// apiserver instance on its own (inst and the inputs say which served each
// request); the files are read once (reconstruct.RunInstances). Progress
// goes to errOut when it is a terminal.
func reconstructFiles(ctx context.Context, paths []string, inst *instanceFlags, st *state.State, requestTimeout time.Duration, opts reconstruct.Options, errOut io.Writer) (*reconstruct.Result, *workload.Files, error) {
	iopts, err := inst.options(paths)
	if err != nil {
		return nil, nil, err
	}
	// the year of klog's text headers, when a file tells it
	year, _ := logs.Year(paths)
	files, err := workload.OpenFiles(paths, workload.Options{Lenient: true, Year: year, Instances: iopts})
	if err != nil {
		return nil, nil, err
	}
	defer files.Close()
	opts.Config, opts.ServerConcurrencyLimit, opts.RequestTimeout, opts.Release = st.Config(), st.ServerConcurrency, requestTimeout, st.Release
	opts.Counts = objectCounts(st)
	if f, ok := errOut.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		opts.Progress = func(stage string, n int64) { fmt.Fprintf(errOut, "\r%s: %d requests read", stage, n) }
		defer fmt.Fprint(errOut, "\r\033[K")
	}
	res, err := reconstruct.RunInstances(files, opts, reconstruct.InstanceOptions{Resolve: files.Resolve},
		func(r workload.Reader) workload.Reader { return logs.Cancellable(ctx, r) })
	if err != nil {
		return nil, nil, err
	}
	return res, files, nil
}

// workloadNotesOf says what reading the workload skipped.
func workloadNotesOf(files *workload.Files, res *reconstruct.Result) []string {
	notes := splitNotes(files, res)
	notes = append(notes, logs.MalformedNotes(files, "")...)
	if res.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("note: %d request(s) could not be reconstructed (first: %s)", res.Skipped, res.FirstSkip))
	}
	if res.EstimatedWaits > 0 {
		notes = append(notes, fmt.Sprintf("note: %d request(s) record no wait (audit events faster than 500 ms without their httplog line): their dispatch is the reconstruction's, marked estimated", res.EstimatedWaits))
	}
	return notes
}

// objectCounts are the object counts of the state's latest metrics (LISTs
// whose log records no seats are sized from them); nil when there are none.
func objectCounts(st *state.State) engine.ObjectCounts {
	c, _ := logs.ObjectCounts(st, "")
	return c
}
