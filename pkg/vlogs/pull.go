package vlogs

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// Pull says what PullIncidents or PullAround read from the store.
type Pull struct {
	Where   string
	Totals  Totals
	Windows []Window
	Pulled  Pulled
	Stats   workload.Stats
	// Bytes are the bytes of every answer.
	Bytes        int64
	Queries      int64
	Partial      bool
	PartialCause string
	// Levels are the window's totals by level (nil when no event was
	// answered 429).
	Levels *LevelTotals
}

// Notes say what was pulled, and what is missing.
func (p *Pull) Notes() []string {
	var notes []string
	if p.Partial {
		notes = append(notes, fmt.Sprintf("partial: a storage node of %s did not answer (%s): the events it holds are missing from the counts and the reconstruction", p.Where, p.PartialCause))
	}
	if p.Totals.Rejected == 0 {
		notes = append(notes, fmt.Sprintf("note: none of the %d audit events of the window was answered 429", p.Totals.Events))
		return notes
	}
	n := fmt.Sprintf("note: %s counted %d 429s of %d audit events in the store; pulled the %d events of %s around them (%d bytes in %s)",
		p.Where, p.Totals.Rejected, p.Totals.Events, p.Pulled.Events, textfmt.Count(len(p.Windows), "window", "windows"), p.Bytes, textfmt.Count(p.Queries, "query", "queries"))
	notes = append(notes, n)
	if p.Levels != nil {
		notes = append(notes, p.Levels.Notes()...)
	}
	if p.Pulled.Bad > 0 {
		notes = append(notes, fmt.Sprintf("note: %s of the store could not be made audit events (first: %s)", textfmt.Count(p.Pulled.Bad, "row", "rows"), p.Pulled.FirstBad))
	}
	if p.Stats.Malformed > 0 {
		notes = append(notes, "note: "+p.Stats.MalformedNote("the pull from "+p.Where, "event", ""))
	}
	return notes
}

// PullIncidents counts the window's events and 429s in the store and
// returns a reader of the events around the bursts of 429s (bursts less
// than gap apart joined, margin either side), the levels' totals read with
// classify. The reader is nil when the window holds no 429. A window without
// any audit event is an error. The Pull's counters are final once the
// reader is drained: the store client pulls rows, it reconstructs nothing
// (package explain/fromlog does).
func (s *Source) PullIncidents(ctx context.Context, gap, margin time.Duration, classify Classify) (workload.Reader, *Pull, error) {
	p := &Pull{Where: s.Client.Describe()}
	var err error
	if p.Totals, err = s.Totals(ctx); err != nil {
		s.settle(p)
		return nil, p, err
	}
	if p.Totals.Events == 0 {
		s.settle(p)
		what := ""
		if s.Filter != "" {
			what = " matching --victorialogs-query"
		}
		return nil, p, fmt.Errorf("%s holds no audit event%s from %s to %s: check --since/--until, --victorialogs-query and --victorialogs-prefix (the events' fields are %sstage, %sverb, ...)",
			s.Client.Describe(), what, s.Start.UTC().Format(time.RFC3339), s.End.UTC().Format(time.RFC3339), s.Mapping.Prefix, s.Mapping.Prefix)
	}
	if p.Totals.Rejected == 0 {
		s.settle(p)
		return nil, p, nil
	}
	if p.Levels, err = s.LevelTotals(ctx, classify); err != nil {
		s.settle(p)
		return nil, p, err
	}
	if p.Windows, err = s.Windows(ctx, gap, margin); err != nil {
		s.settle(p)
		return nil, p, err
	}
	return s.settling(p, s.Reader(ctx, p.Windows, "VictoriaLogs", input.Options{Lenient: true}, &p.Stats, &p.Pulled)), p, nil
}

// Span is the window the source reads.
func (s *Source) Span() (start, end time.Time) { return s.Start, s.End }

// settle copies the client's counters into p.
func (s *Source) settle(p *Pull) {
	p.Bytes, p.Queries, p.Partial = s.Client.Bytes.Load(), s.Client.Queries.Load(), s.Client.Partial.Load()
	if c, ok := s.Client.PartialCause.Load().(string); ok {
		p.PartialCause = c
	}
}

// settling is rd, settling p at its end.
func (s *Source) settling(p *Pull, rd workload.Reader) workload.Reader {
	return &settlingReader{src: rd, settle: func() { s.settle(p) }}
}

type settlingReader struct {
	src    workload.Reader
	settle func()
}

func (r *settlingReader) Next(w *workload.Request) error {
	err := r.src.Next(w)
	if err != nil {
		r.settle()
	}
	return err
}

// Event finds the completed request of one audit ID in the window.
func (s *Source) Event(ctx context.Context, auditID string) (*workload.Request, string, error) {
	q := s.base(s.Start, s.End) + " " + quote(s.Mapping.f("auditID")) + ":=" + quote(auditID) + " | fields " + s.Mapping.fieldList() + " | limit 1"
	var line []byte
	var inst string
	err := s.Client.Query(ctx, q, func(row []byte) error {
		ev, in, err := s.Mapping.Event(row, nil)
		if err != nil {
			return fmt.Errorf("%s: the event of audit ID %s: %w", s.Client.Describe(), auditID, err)
		}
		line, inst = ev, in
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	if line == nil {
		return nil, "", fmt.Errorf("%s holds no completed request of audit ID %s from %s to %s: widen the window, or check --victorialogs-query and --victorialogs-prefix",
			s.Client.Describe(), auditID, s.Start.UTC().Format(time.RFC3339), s.End.UTC().Format(time.RFC3339))
	}
	var r workload.Request
	if err := input.NewAuditReader(bytes.NewReader(line), "VictoriaLogs", input.Options{}, nil).Next(&r); err != nil {
		return nil, "", fmt.Errorf("%s: the event of audit ID %s: %w", s.Client.Describe(), auditID, err)
	}
	r.Instance = inst
	return &r, inst, nil
}

// PullAround returns a reader of the events within margin of one request
// (of its instance when the instance is known). The Pull's counters are
// final once the reader is drained.
func (s *Source) PullAround(ctx context.Context, r *workload.Request, margin time.Duration) (workload.Reader, *Pull) {
	p := &Pull{Where: s.Client.Describe()}
	w := Window{Start: r.Arrival.Add(-margin), End: r.Arrival.Add(r.Latency + margin)}
	if s.Mapping.Instance != "" && r.Instance != "" {
		w.Instances = []string{r.Instance}
	}
	p.Windows = []Window{w}
	return s.settling(p, s.Reader(ctx, p.Windows, "VictoriaLogs", input.Options{Lenient: true}, &p.Stats, &p.Pulled)), p
}

// AroundNotes say what PullAround read: the events within margin of the
// request, and what is missing.
func (p *Pull) AroundNotes(margin time.Duration) []string {
	var notes []string
	if p.Partial {
		notes = append(notes, fmt.Sprintf("partial: a storage node of %s did not answer (%s): the events it holds are missing from the reconstruction", p.Where, p.PartialCause))
	}
	return append(notes, fmt.Sprintf("note: %s: pulled the %d events within %s of the request (%d bytes)", p.Where, p.Pulled.Events, margin, p.Bytes))
}
