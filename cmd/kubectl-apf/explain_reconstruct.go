package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
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
	year, _ := logYear(paths)
	files, err := workload.OpenFiles(paths, workload.Options{Lenient: true, Year: year, Instances: iopts})
	if err != nil {
		return nil, nil, err
	}
	defer files.Close()
	opts.Config, opts.ServerConcurrencyLimit, opts.RequestTimeout, opts.Release = st.Config(), st.ServerConcurrency, requestTimeout, st.Release
	opts.Counts = snapshotCounts(st)
	if f, ok := errOut.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		opts.Progress = func(stage string, n int64) { fmt.Fprintf(errOut, "\r%s: %d requests read", stage, n) }
		defer fmt.Fprint(errOut, "\r\033[K")
	}
	res, err := reconstruct.RunInstances(files, opts, reconstruct.InstanceOptions{Resolve: files.Resolve},
		func(r workload.Reader) workload.Reader { return &contextReader{ctx: ctx, r: r} })
	if err != nil {
		return nil, nil, err
	}
	return res, files, nil
}

// snapshotCounts are the object counts of the first snapshot's latest
// metrics (LISTs whose log records no seats are sized from them); nil when
// there are none.
func snapshotCounts(st *state.State) engine.ObjectCounts {
	if len(st.Snapshots) == 0 {
		return nil
	}
	_, cur := st.Snapshots[0].LatestMetrics()
	oc := metrics.ObjectCounts(cur)
	if oc == nil {
		return nil
	}
	out := engine.ObjectCounts{}
	for k, c := range oc {
		out[k] = engine.ObjectStats{Count: int64(c.Count), AvgSize: c.AverageSize()}
	}
	return out
}

// malformedLines says what reading name skipped as unreadable (s has
// Malformed lines).
//
// It says how much of the input was used: the requests read of its lines,
// and the lines skipped for each reason (unreadable ones, and those that
// are no request: audit events of other stages, a wrapper's other
// records).
func malformedLines(name string, s *workload.Stats) string {
	reasons := append(s.MalformedReasons(), s.SkippedReasons()...)
	return fmt.Sprintf("%s: %d %s could not be read as requests (first: %s); of its %d %s, %d gave requests, skipped: %s", name, s.Malformed, plural(int(s.Malformed), "line", "lines"), s.FirstMalformed[0],
		s.Lines, plural(int(s.Lines), "line", "lines"), s.Records, strings.Join(reasons, ", "))
}

// workloadNotesOf says what reading the workload skipped.
func workloadNotesOf(files *workload.Files, res *reconstruct.Result) []string {
	notes := splitNotes(files, res)
	for name, s := range files.Stats {
		if s.Malformed > 0 {
			notes = append(notes, "note: "+malformedLines(name, s))
		}
	}
	if res.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("note: %d request(s) could not be reconstructed (first: %s)", res.Skipped, res.FirstSkip))
	}
	if res.EstimatedWaits > 0 {
		notes = append(notes, fmt.Sprintf("note: %d request(s) record no wait (audit events faster than 500 ms without their httplog line): their dispatch is the reconstruction's, marked estimated", res.EstimatedWaits))
	}
	return notes
}

// contextReader stops reading when the command's context is cancelled
// (SIGINT): a log of millions of requests takes seconds to read.
type contextReader struct {
	ctx context.Context
	r   workload.Reader
	n   int
}

func (c *contextReader) Next(r *workload.Request) error {
	// checking the context costs a lock; every 4096 records is often enough
	if c.n++; c.n&4095 == 0 {
		if err := c.ctx.Err(); err != nil {
			return fmt.Errorf("interrupted: %w", err)
		}
	}
	return c.r.Next(r)
}
