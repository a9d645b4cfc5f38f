package vlogs

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
)

// ReconstructOptions tune Reconstruct.
type ReconstructOptions struct {
	// Gap joins bursts of 429s less than this apart (the incident gap).
	Gap time.Duration
	// Margin is pulled before and after each burst.
	Margin time.Duration
	// Reconstruct are the reconstruction's options (configuration, limits).
	Reconstruct reconstruct.Options
	// Wrap wraps the reader (to stop on a cancelled context); nil for none.
	Wrap func(workload.Reader) workload.Reader
}

// Pull says what Reconstruct read from the store.
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
	n := fmt.Sprintf("note: %s counted %d 429s of %d audit events in the store; pulled the %d events of %d window(s) around them (%d bytes in %d queries)",
		p.Where, p.Totals.Rejected, p.Totals.Events, p.Pulled.Events, len(p.Windows), p.Bytes, p.Queries)
	notes = append(notes, n)
	if p.Levels != nil {
		notes = append(notes, p.Levels.Notes()...)
	}
	if p.Pulled.Bad > 0 {
		notes = append(notes, fmt.Sprintf("note: %d row(s) of the store could not be made audit events (first: %s)", p.Pulled.Bad, p.Pulled.FirstBad))
	}
	if p.Stats.Malformed > 0 {
		notes = append(notes, "note: "+p.Stats.MalformedNote("the pull from "+p.Where, "event", ""))
	}
	return notes
}

// Reconstruct counts the window's events and 429s in the store, pulls the
// events around the bursts of 429s and reconstructs them. A window without
// any audit event is an error; one without 429s gives a Result without
// incidents.
func Reconstruct(ctx context.Context, s *Source, o ReconstructOptions) (*reconstruct.Result, *Pull, error) {
	p := &Pull{Where: s.Client.Describe()}
	defer func() {
		p.Bytes, p.Queries, p.Partial = s.Client.Bytes.Load(), s.Client.Queries.Load(), s.Client.Partial.Load()
		if c, ok := s.Client.PartialCause.Load().(string); ok {
			p.PartialCause = c
		}
	}()
	var err error
	if p.Totals, err = s.Totals(ctx); err != nil {
		return nil, p, err
	}
	if p.Totals.Events == 0 {
		what := ""
		if s.Filter != "" {
			what = " matching --victorialogs-query"
		}
		return nil, p, fmt.Errorf("%s holds no audit event%s from %s to %s: check --since/--until, --victorialogs-query and --victorialogs-prefix (the events' fields are %sstage, %sverb, ...)",
			s.Client.Describe(), what, s.Start.UTC().Format(time.RFC3339), s.End.UTC().Format(time.RFC3339), s.Mapping.Prefix, s.Mapping.Prefix)
	}
	if p.Totals.Rejected == 0 {
		return &reconstruct.Result{Start: s.Start, End: s.End}, p, nil
	}
	if p.Levels, err = s.LevelTotals(ctx, o.Reconstruct.Config); err != nil {
		return nil, p, err
	}
	if p.Windows, err = s.Windows(ctx, o.Gap, o.Margin); err != nil {
		return nil, p, err
	}
	rd := s.Reader(ctx, p.Windows, "VictoriaLogs", workload.Options{Lenient: true}, &p.Stats, &p.Pulled)
	res, err := reconstruct.RunInstances(rd, o.Reconstruct, reconstruct.InstanceOptions{}, o.Wrap)
	if err != nil {
		return nil, p, err
	}
	return res, p, nil
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
	if err := workload.NewAuditReader(bytes.NewReader(line), "VictoriaLogs", workload.Options{}, nil).Next(&r); err != nil {
		return nil, "", fmt.Errorf("%s: the event of audit ID %s: %w", s.Client.Describe(), auditID, err)
	}
	r.Instance = inst
	return &r, inst, nil
}

// ReconstructAround pulls the events within o.Margin of one request (of
// its instance when the instance is known) and reconstructs them.
func ReconstructAround(ctx context.Context, s *Source, r *workload.Request, o ReconstructOptions) (*reconstruct.Result, *Pull, error) {
	p := &Pull{Where: s.Client.Describe()}
	w := Window{Start: r.Arrival.Add(-o.Margin), End: r.Arrival.Add(r.Latency + o.Margin)}
	if s.Mapping.Instance != "" && r.Instance != "" {
		w.Instances = []string{r.Instance}
	}
	p.Windows = []Window{w}
	rd := s.Reader(ctx, p.Windows, "VictoriaLogs", workload.Options{Lenient: true}, &p.Stats, &p.Pulled)
	res, err := reconstruct.RunInstances(rd, o.Reconstruct, reconstruct.InstanceOptions{}, o.Wrap)
	p.Bytes, p.Queries = s.Client.Bytes.Load(), s.Client.Queries.Load()
	p.Partial = s.Client.Partial.Load()
	if c, ok := s.Client.PartialCause.Load().(string); ok {
		p.PartialCause = c
	}
	if err != nil {
		return nil, p, err
	}
	return res, p, nil
}
