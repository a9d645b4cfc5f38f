package vlogs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// LevelTotal is what a priority level served and rejected over the whole
// window: the requests counted in the store by the fields classification
// reads, each distinct key classified here.
type LevelTotal struct {
	Level string
	// Requests went through APF at the level; Rejected were answered 429.
	Requests, Rejected int64
	// Seconds is the time from arrival to answer of the requests, summed
	// in the store (seat-seconds at one seat a request).
	Seconds float64
	// Rejects are the users answered 429 most, with their counts.
	Rejects []UserCount
}

// UserCount is a user's count.
type UserCount struct {
	User  string
	Count int64
}

// Totals over the window's keys.
type LevelTotals struct {
	// Keys are the distinct keys the store returned.
	Keys   int
	Levels []LevelTotal
	// Skipped are keys that could not be classified, the first in
	// FirstSkip.
	Skipped   int64
	FirstSkip string
}

// keyFields are the fields classification reads (and the answer's code),
// as VictoriaLogs flattens them; _path and _named are made in the store.
var keyFields = []string{
	"user.username", "user.groups", "impersonatedUser.username", "impersonatedUser.groups",
	"verb", "objectRef.apiGroup", "objectRef.apiVersion", "objectRef.resource", "objectRef.subresource", "objectRef.namespace",
	"responseStatus.code", "userAgent",
}

// Classify gives the priority level of a request of the store's counts,
// or skip when APF never saw it (answered before APF, or exempt from it by
// the request's kind): the reconstruction's classification, which the
// caller (explain/fromlog.LevelOf) supplies, since a store client
// classifies nothing itself.
type Classify func(w *workload.Request) (level string, skip bool, err error)

// LevelTotals counts the window's requests in the store by the fields
// that classification reads (a non-resource request's path, whether a
// resource request names an object) and classifies each distinct key
// with classify, as the reconstruction classifies a request. There are
// few keys even where there are billions of events.
func (s *Source) LevelTotals(ctx context.Context, classify Classify) (*LevelTotals, error) {
	m := s.Mapping
	var by []string
	for _, f := range keyFields {
		by = append(by, quote(m.f(f)))
	}
	if m.Instance != "" {
		by = append(by, quote(m.Instance))
	}
	by = append(by, "_path", "_named")
	q := s.base(s.Start, s.End) +
		" | format if (" + quote(m.f("objectRef.resource")) + `:"") "<` + m.f("requestURI") + `>" as _path` +
		" | format if (" + quote(m.f("objectRef.name")) + `:*) "1" as _named` +
		" | math (_time - " + quote(m.f("requestReceivedTimestamp")) + ") / 1e9 as _held" +
		" | stats by (" + strings.Join(by, ", ") + ") count() _requests, sum(_held) _seconds"
	type key struct {
		requests int64
		seconds  float64
	}
	var keys []key
	var lines []byte
	base := time.Unix(0, 0).UTC()
	err := s.Client.Query(ctx, q, func(line []byte) error {
		var row map[string]string
		if err := json.Unmarshal(line, &row); err != nil {
			return fmt.Errorf("%s: a count is not a JSON object of strings: %w", s.Client.Describe(), err)
		}
		n, err := strconv.ParseInt(row["_requests"], 10, 64)
		if err != nil {
			return fmt.Errorf("%s: a count %q is not a number", s.Client.Describe(), row["_requests"])
		}
		sec, _ := strconv.ParseFloat(row["_seconds"], 64)
		// the key as one event: its own arrival, so that the reader keeps
		// the keys' order
		at := base.Add(time.Duration(len(keys)) * time.Microsecond)
		row[m.f("auditID")] = "key-" + strconv.Itoa(len(keys))
		row[m.f("stage")] = "ResponseComplete"
		row[m.f("requestReceivedTimestamp")] = at.Format(time.RFC3339Nano)
		row["_time"] = at.Format(time.RFC3339Nano)
		if p := row["_path"]; p != "" {
			row[m.f("requestURI")] = p
		}
		if row["_named"] != "" {
			row[m.f("objectRef.name")] = "-"
		}
		b, err := json.Marshal(row)
		if err != nil {
			return err
		}
		if lines, _, err = m.Event(b, lines); err != nil {
			return err
		}
		keys = append(keys, key{n, sec})
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := &LevelTotals{Keys: len(keys)}
	levels := map[string]*LevelTotal{}
	rejects := map[string]map[string]int64{}
	stats := &workload.Stats{}
	rd := input.NewAuditReader(bytes.NewReader(lines), "the store's counts", input.Options{Lenient: true}, stats)
	for {
		var w workload.Request
		err := rd.Next(&w)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		i, _ := strconv.Atoi(strings.TrimPrefix(w.AuditID, "key-"))
		k := keys[i]
		level, skip, err := classify(&w)
		if skip {
			continue
		}
		if err != nil {
			out.Skipped += k.requests
			if out.FirstSkip == "" {
				out.FirstSkip = err.Error()
			}
			continue
		}
		l := levels[level]
		if l == nil {
			l = &LevelTotal{Level: level}
			levels[level] = l
			rejects[level] = map[string]int64{}
		}
		l.Requests += k.requests
		l.Seconds += k.seconds
		if w.Status == 429 {
			l.Rejected += k.requests
			rejects[level][w.User] += k.requests
		}
	}
	if stats.Malformed > 0 {
		out.Skipped += stats.Malformed
		if out.FirstSkip == "" {
			out.FirstSkip = stats.FirstMalformed[0]
		}
	}
	for name, l := range levels {
		for u, n := range rejects[name] {
			l.Rejects = append(l.Rejects, UserCount{u, n})
		}
		sort.Slice(l.Rejects, func(i, j int) bool {
			if l.Rejects[i].Count != l.Rejects[j].Count {
				return l.Rejects[i].Count > l.Rejects[j].Count
			}
			return l.Rejects[i].User < l.Rejects[j].User
		})
		out.Levels = append(out.Levels, *l)
	}
	sort.Slice(out.Levels, func(i, j int) bool {
		a, b := out.Levels[i], out.Levels[j]
		if a.Rejected != b.Rejected {
			return a.Rejected > b.Rejected
		}
		return a.Level < b.Level
	})
	return out, nil
}

// Notes say the window's totals by level, the levels that rejected.
func (t *LevelTotals) Notes() []string {
	var notes []string
	for _, l := range t.Levels {
		if l.Rejected == 0 {
			continue
		}
		var who []string
		for i, u := range l.Rejects {
			if i == 3 {
				who = append(who, fmt.Sprintf("and %d more", len(l.Rejects)-3))
				break
			}
			who = append(who, fmt.Sprintf("%s %d", u.User, u.Count))
		}
		notes = append(notes, fmt.Sprintf("note: over the window, %s answered 429 to %d of %d requests (%s), which took %.1f request-seconds (counted in the store by %d keys of the fields classification reads, classified here)",
			l.Level, l.Rejected, l.Requests, strings.Join(who, ", "), l.Seconds, t.Keys))
	}
	if t.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("note: %s counted in the store could not be classified (first: %s)", textfmt.Count(t.Skipped, "request", "requests"), t.FirstSkip))
	}
	return notes
}
