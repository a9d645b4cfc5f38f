package simulate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// openWorkload opens the workload files (cfg.Logs), or cfg.Open's. klog's
// headers carry no year: where the files tell none (an httplog alone), the
// year of an absolute --since/--until, else the year the state's metrics
// were read, stands in (logs.FallbackYear), so that the window and the
// metrics' scrapes (the CPU evidence, the object counts) line up with the
// log's times, and the note says so. With neither, a store (--prometheus)
// cannot be read for the log's times: that is an error.
func openWorkload(ctx context.Context, st *state.State, cfg Config) (*workload.Files, string, error) {
	if cfg.Open != nil {
		files, err := cfg.Open()
		return files, "", err
	}
	if cfg.Logs == nil {
		return nil, "", errors.New("simulate: no opener of the workload files (Config.Logs)")
	}
	year := logs.FallbackYear(cfg.Window, st)
	w, err := cfg.Logs.Open(ctx, logs.Spec{Paths: cfg.Workloads, Stdin: cfg.Stdin, Instances: cfg.Instances, Strict: cfg.Strict, FindYear: true, Year: year})
	if err != nil {
		return nil, "", err
	}
	formats := slices.Collect(maps.Values(w.Files.Formats))
	// an audit log read through a pipe gave its year when it was opened
	audit := slices.ContainsFunc(formats, func(f workload.Format) bool { return f == workload.FormatAudit || workload.Wrapped(f) })
	if w.YearKnown || audit || !slices.Contains(formats, workload.FormatHTTPLog) {
		return w.Files, "", nil
	}
	if year == 0 {
		if cfg.Store != nil {
			// the store's samples are found by their time, the year
			// included
			w.Close()
			return nil, "", fmt.Errorf("--prometheus: the log's klog headers carry no year, so its times cannot be matched with the store's samples: give --since/--until with a date (RFC 3339), the audit log beside the log, or a bundle (--from) captured with it")
		}
		return w.Files, "", nil
	}
	why := "the year its metrics were read"
	if cfg.Window.Year() > 0 {
		why = "the year of --since/--until"
	}
	return w.Files, fmt.Sprintf("note: the log's klog headers carry no year: its times are taken to be of %d, %s", year, why), nil
}

// clampedNotes say, per file, how many long-running requests arrived
// before the re-ordering window and were replayed at its edge. Joined
// files (an httplog and its audit log) each record the same requests: the
// files of one count are named in one note, which counts them once (the
// demo cluster's two notes of 43 read as 86 requests).
func clampedNotes(files *workload.Files) []string {
	byCount := map[int64][]string{}
	for _, name := range slices.Sorted(maps.Keys(files.Stats)) {
		if n := files.Stats[name].Clamped; n > 0 {
			byCount[n] = append(byCount[n], name)
		}
	}
	var notes []string
	for _, n := range slices.Sorted(maps.Keys(byCount)) {
		names := byCount[n]
		if files.Join == nil || len(names) == 1 {
			for _, name := range names {
				notes = append(notes, fmt.Sprintf("note: %s: %d long-running %s arrived before the re-ordering window and %s replayed at its edge", name, n, textfmt.Plural(n, "request", "requests"), textfmt.Plural(n, "was", "were")))
			}
			continue
		}
		notes = append(notes, fmt.Sprintf("note: %s: %d long-running %s (each file's record of %s, joined) arrived before the re-ordering window and %s replayed at its edge",
			strings.Join(names, ", "), n, textfmt.Plural(n, "request", "requests"), textfmt.Plural(n, "it", "them"), textfmt.Plural(n, "was", "were")))
	}
	return notes
}

// workloadNotes say what of the workload could not be used as recorded.
func workloadNotes(rep *fairqueue.Report, files *workload.Files) []string {
	ws := rep.Workload
	notes := logs.MalformedNotes(files, "--strict")
	notes = append(notes, clampedNotes(files)...)
	if j := files.Join; j != nil && j.AuditOnly > 0 {
		notes = append(notes, fmt.Sprintf("note: %d audit %s had no httplog line with %s audit ID and %s not replayed (the httplog is the record of what the server served)",
			j.AuditOnly, textfmt.Plural(j.AuditOnly, "event", "events"), textfmt.Plural(j.AuditOnly, "its", "their"), textfmt.Plural(j.AuditOnly, "was", "were")))
	}
	if j := files.Join; j != nil && j.Clamped > 0 {
		notes = append(notes, fmt.Sprintf("note: %d joined %s arrived, by %s audit %s, before requests already read (more than 65,536 requests in the join's 10 s) and %s replayed with them",
			j.Clamped, textfmt.Plural(j.Clamped, "request", "requests"), textfmt.Plural(j.Clamped, "its", "their"), textfmt.Plural(j.Clamped, "event", "events"), textfmt.Plural(j.Clamped, "was", "were")))
	}
	if ws.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("note: %d %s could not be replayed; the first: %s", ws.Skipped, textfmt.Plural(ws.Skipped, "record", "records"), ws.FirstSkip))
	}
	if ws.UnknownIdentity > 0 {
		hint := "give the audit log alongside the httplog to join them by audit ID"
		if j := files.Join; j != nil {
			hint = fmt.Sprintf("%d httplog lines found no audit event", j.Unmatched)
		}
		notes = append(notes, fmt.Sprintf("note: %d %s without a user kept their recorded FlowSchema (%s)", ws.UnknownIdentity, textfmt.Plural(ws.UnknownIdentity, "request", "requests"), hint))
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
		return fmt.Sprintf("its %d audit %s found no httplog line with the same audit ID", files.Join.AuditOnly, textfmt.Plural(files.Join.AuditOnly, "event", "events"))
	case lines == 0:
		return "it is empty"
	case malformed == lines:
		return fmt.Sprintf("none of its %d %s could be read as a request: %s", lines, textfmt.Plural(lines, "line", "lines"), strings.Join(all.MalformedReasons(), ", "))
	case malformed > 0:
		return fmt.Sprintf("of its %d %s, %d could not be read as requests (%s) and the others are not requests", lines, textfmt.Plural(lines, "line", "lines"), malformed, strings.Join(all.MalformedReasons(), ", "))
	}
	return fmt.Sprintf("none of its %d %s is an httplog \"HTTP\" line, a ResponseComplete audit event or a JSONL record", lines, textfmt.Plural(lines, "line", "lines"))
}
