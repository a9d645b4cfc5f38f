package logs

import (
	"context"
	"fmt"
	"io"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// Spec says which workload to open and how.
type Spec struct {
	// Paths are the workload's files (directories and gzipped files
	// included); a lone "-" reads Stdin, when given.
	Paths []string
	// Stdin is what a lone "-" reads (nil: the process's standard input,
	// as package input's OpenFiles reads it).
	Stdin io.Reader
	// Instances say which apiserver instance served each file's requests.
	Instances workload.InstanceOptions
	// Strict fails on the first line that cannot be read as a request;
	// otherwise such lines are skipped and counted (Notes).
	Strict bool
	// FindYear completes klog's text headers with the year the files tell
	// (Year), when one does; otherwise Year, or the readers' default year
	// where it is 0, stands in.
	FindYear bool
	// Year is, with FindYear, the year of the times of klog's headers when
	// the files tell none (an httplog alone): the year the metrics given
	// with the log were read (MetricsYear), so that the log's times line
	// up with theirs. A log from before a New Year read with metrics from
	// after it is placed a year late.
	Year int
}

// Opener opens the recorded logs a Spec names: package input's Logs,
// which the commands hand to the compute packages (simulate.Config.Logs,
// fromlog.Config.Logs); they open nothing themselves.
type Opener interface {
	Open(ctx context.Context, spec Spec) (*Workload, error)
}

// NewWorkload is the workload of files, opened by an Opener; reading it
// stops with an error once ctx is cancelled.
func NewWorkload(ctx context.Context, files *workload.Files, yearKnown bool) *Workload {
	return &Workload{Files: files, YearKnown: yearKnown, ctx: ctx}
}

// Workload is an opened workload: its files, read through Reader.
type Workload struct {
	*workload.Files
	// YearKnown says whether the files told the year of their times (with
	// Spec.FindYear).
	YearKnown bool
	ctx       context.Context
}

// Cancellable is the workload's reader, stopping when the context is
// cancelled.
func (w *Workload) Cancellable() workload.Reader {
	return Cancellable(w.ctx, w.Files.Reader)
}

// Wrap makes r stop when the workload's context is cancelled.
func (w *Workload) Wrap(r workload.Reader) workload.Reader {
	return Cancellable(w.ctx, r)
}

// Notes say which lines of the workload could not be read as requests,
// file by file in the order of their names (MalformedNotes; no flag makes
// the reading strict).
func (w *Workload) Notes() []string {
	return MalformedNotes(w.Files, "")
}

// Cancellable stops reading r when ctx is cancelled (SIGINT): a replay or
// a reconstruction takes no context, and a log of millions of requests
// takes seconds to read.
func Cancellable(ctx context.Context, r workload.Reader) workload.Reader {
	return &cancellable{ctx: ctx, r: r}
}

type cancellable struct {
	ctx context.Context
	r   workload.Reader
	n   int
}

func (c *cancellable) Next(r *workload.Request) error {
	// checking the context costs a lock; every 4096 records is often enough
	if c.n++; c.n&4095 == 0 {
		if err := c.ctx.Err(); err != nil {
			return fmt.Errorf("interrupted: %w", err)
		}
	}
	return c.r.Next(r)
}
