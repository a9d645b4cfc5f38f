package simulate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// openWorkload opens the workload files. A lone "-" reads cfg.Stdin, when
// given, rather than the process's standard input that workload.OpenFiles
// reads.
func openWorkload(cfg Config) (*workload.Files, error) {
	if cfg.Open != nil {
		return cfg.Open()
	}
	opts := workload.Options{Lenient: !cfg.Strict, Instances: cfg.Instances}
	if len(cfg.Workloads) != 1 || cfg.Workloads[0] != "-" || cfg.Stdin == nil {
		return workload.OpenFiles(cfg.Workloads, opts)
	}
	st := &workload.Stats{}
	r, f, err := workload.NewReader(cfg.Stdin, "stdin", opts, st)
	if err != nil {
		return nil, err
	}
	return &workload.Files{Reader: r, Stats: map[string]*workload.Stats{"stdin": st}, Formats: map[string]workload.Format{"stdin": f}}, nil
}

// cancellableReader stops a replay when the context is cancelled (SIGINT):
// the replay itself takes no context, and a workload of millions of
// requests takes seconds to read.
type cancellableReader struct {
	ctx context.Context
	r   workload.Reader
	n   int
}

func (c *cancellableReader) Next(r *workload.Request) error {
	// checking the context costs a lock; every 4096 records is often enough
	if c.n++; c.n&4095 == 0 {
		if err := c.ctx.Err(); err != nil {
			return fmt.Errorf("interrupted: %w", err)
		}
	}
	return c.r.Next(r)
}

// workloadNotes say what of the workload could not be used as recorded.
func workloadNotes(rep *fairqueue.Report, files *workload.Files) []string {
	var notes []string
	ws := rep.Workload
	names := slices.Sorted(maps.Keys(files.Stats))
	for _, name := range names {
		if st := files.Stats[name]; st.Malformed > 0 {
			notes = append(notes, fmt.Sprintf("note: %s: skipped %d %s that could not be read as a request (%s; --strict refuses them): %s",
				name, st.Malformed, plural(st.Malformed, "line", "lines"), strings.Join(st.MalformedReasons(), ", "), strings.Join(st.FirstMalformed, "; ")))
		}
	}
	for _, name := range names {
		if st := files.Stats[name]; st.Clamped > 0 {
			notes = append(notes, fmt.Sprintf("note: %s: %d long-running %s arrived before the re-ordering window and %s replayed at its edge", name, st.Clamped, plural(st.Clamped, "request", "requests"), plural(st.Clamped, "was", "were")))
		}
	}
	if j := files.Join; j != nil && j.AuditOnly > 0 {
		notes = append(notes, fmt.Sprintf("note: %d audit %s had no httplog line with %s audit ID and %s not replayed (the httplog is the record of what the server served)",
			j.AuditOnly, plural(j.AuditOnly, "event", "events"), plural(j.AuditOnly, "its", "their"), plural(j.AuditOnly, "was", "were")))
	}
	if ws.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("note: %d %s could not be replayed; the first: %s", ws.Skipped, plural(ws.Skipped, "record", "records"), ws.FirstSkip))
	}
	if ws.UnknownIdentity > 0 {
		hint := "give the audit log alongside the httplog to join them by audit ID"
		if j := files.Join; j != nil {
			hint = fmt.Sprintf("%d httplog lines found no audit event", j.Unmatched)
		}
		notes = append(notes, fmt.Sprintf("note: %d %s without a user kept their recorded FlowSchema (%s)", ws.UnknownIdentity, plural(ws.UnknownIdentity, "request", "requests"), hint))
	}
	return notes
}

// emptyWorkloadReason says why a workload yielded no request: when lines
// were skipped, why, counted by reason over the files.
func emptyWorkloadReason(files *workload.Files) string {
	var lines, malformed int64
	all := workload.Stats{}
	for _, st := range files.Stats {
		lines += st.Lines
		malformed += st.Malformed
		for r, n := range st.MalformedBy {
			if all.MalformedBy == nil {
				all.MalformedBy = map[workload.Reason]int64{}
			}
			all.MalformedBy[r] += n
		}
	}
	switch {
	case files.Join != nil && files.Join.AuditOnly > 0:
		return fmt.Sprintf("its %d audit %s found no httplog line with the same audit ID", files.Join.AuditOnly, plural(files.Join.AuditOnly, "event", "events"))
	case lines == 0:
		return "it is empty"
	case malformed == lines:
		return fmt.Sprintf("none of its %d %s could be read as a request: %s", lines, plural(lines, "line", "lines"), strings.Join(all.MalformedReasons(), ", "))
	case malformed > 0:
		return fmt.Sprintf("of its %d %s, %d could not be read as requests (%s) and the others are not requests", lines, plural(lines, "line", "lines"), malformed, strings.Join(all.MalformedReasons(), ", "))
	}
	return fmt.Sprintf("none of its %d %s is an httplog \"HTTP\" line, a ResponseComplete audit event or a JSONL record", lines, plural(lines, "line", "lines"))
}
