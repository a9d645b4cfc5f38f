package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// jsonlRecord is one line of the project's JSONL format (see the package
// documentation).
type jsonlRecord struct {
	Arrival           *time.Time `json:"arrival"`
	Offset            *duration  `json:"offset"`
	User              *string    `json:"user"`
	Groups            []string   `json:"groups"`
	Verb              string     `json:"verb"`
	Path              string     `json:"path"`
	ServiceTime       *duration  `json:"serviceTime"`
	InitialSeats      *uint64    `json:"initialSeats"`
	FinalSeats        *uint64    `json:"finalSeats"`
	AdditionalLatency *duration  `json:"additionalLatency"`
	FlowSchema        string     `json:"flowSchema"`
	PriorityLevel     string     `json:"priorityLevel"`
	Status            int        `json:"status"`
	AuditID           string     `json:"auditID"`
}

// duration accepts a Go duration string or a number of seconds.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		s, err := strconv.Unquote(string(b))
		if err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = duration(v)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration %s is neither a string like \"20ms\" nor a number of seconds", b)
	}
	if f > float64(1<<62)/1e9 || f < -float64(1<<62)/1e9 {
		return fmt.Errorf("duration %s seconds is out of range", b)
	}
	*d = duration(time.Duration(f * 1e9))
	return nil
}

// Epoch is the time the JSONL "offset" field counts from.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

type jsonlReader struct {
	ls      *lineScanner
	stats   *workload.Stats
	last    time.Time
	lenient bool
}

// NewJSONLReader reads the project's JSONL workload format from r. Records
// must be in arrival order (offsets count from Epoch).
func NewJSONLReader(r io.Reader, name string, opts Options, stats *workload.Stats) workload.Reader {
	opts.defaults()
	if stats == nil {
		stats = &workload.Stats{}
	}
	return &jsonlReader{ls: newLineScanner(r, name, opts.MaxLineBytes), stats: stats, lenient: opts.Lenient}
}

func (j *jsonlReader) Next(r *workload.Request) error {
	for {
		line, err := j.ls.next()
		if err != nil {
			return err
		}
		j.stats.Lines++
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			j.stats.Skipped++
			continue
		}
		if err := j.parse(line, r); err != nil {
			if err := malformed(j.stats, j.lenient, workload.Reason{Noun: jsonlNoun, Problem: "that could not be read"}, fmt.Errorf("%s: %w", j.ls.where(), err)); err != nil {
				return err
			}
			continue
		}
		j.stats.Records++
		return nil
	}
}

// jsonlNoun is the noun of the Reasons of JSONL records.
const jsonlNoun = "JSONL record"

func (j *jsonlReader) parse(line []byte, r *workload.Request) error {
	var rec jsonlRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return because("line", "that could not be decoded as a JSONL record", fmt.Errorf("decoding workload record: %w", err))
	}
	*r = workload.Request{Source: j.ls.where(), Verb: rec.Verb, URI: rec.Path, Groups: rec.Groups,
		FlowSchema: rec.FlowSchema, PriorityLevel: rec.PriorityLevel, Status: rec.Status, AuditID: rec.AuditID}
	switch {
	case rec.Arrival != nil && rec.Offset != nil:
		return because(jsonlNoun, "with both arrival and offset", errors.New("give either arrival or offset, not both"))
	case rec.Arrival != nil:
		r.Arrival = *rec.Arrival
	case rec.Offset != nil:
		if *rec.Offset < 0 {
			return fmt.Errorf("negative offset %v", time.Duration(*rec.Offset))
		}
		r.Arrival = Epoch.Add(time.Duration(*rec.Offset))
	default:
		return because(jsonlNoun, "without a timestamp", errors.New("missing arrival (RFC 3339 time) or offset (duration since the start)"))
	}
	if !j.last.IsZero() && r.Arrival.Before(j.last) {
		return because(jsonlNoun, "out of arrival order", fmt.Errorf("arrival %v is before the previous record's %v: sort the file by arrival", r.Arrival, j.last))
	}
	j.last = r.Arrival
	if rec.User != nil {
		r.User, r.UserKnown = *rec.User, true
	}
	r.Method = methodOf(rec.Verb)
	if r.Method == "" {
		return because(jsonlNoun, "with an unknown verb", fmt.Errorf("unknown verb %q: use a Kubernetes verb (get, list, watch, create, update, patch, delete, deletecollection) or an HTTP method", rec.Verb))
	}
	if r.URI == "" || r.URI[0] != '/' {
		return because(jsonlNoun, "with a path not starting with /", fmt.Errorf("path %q must start with /", r.URI))
	}
	if rec.ServiceTime != nil {
		if *rec.ServiceTime < 0 {
			return fmt.Errorf("negative serviceTime %v", time.Duration(*rec.ServiceTime))
		}
		r.ServiceTime, r.HasServiceTime = time.Duration(*rec.ServiceTime), true
	}
	if rec.InitialSeats != nil || rec.FinalSeats != nil || rec.AdditionalLatency != nil {
		r.HasSeats = true
		r.InitialSeats = 1
		if rec.InitialSeats != nil {
			r.InitialSeats = *rec.InitialSeats
		}
		if rec.FinalSeats != nil {
			r.FinalSeats = *rec.FinalSeats
		}
		if rec.AdditionalLatency != nil {
			if *rec.AdditionalLatency < 0 {
				return fmt.Errorf("negative additionalLatency %v", time.Duration(*rec.AdditionalLatency))
			}
			r.AdditionalLatency = time.Duration(*rec.AdditionalLatency)
		}
		if r.InitialSeats > 1<<20 || r.FinalSeats > 1<<20 {
			return fmt.Errorf("seats %d/%d are implausibly many", r.InitialSeats, r.FinalSeats)
		}
	}
	return nil
}
