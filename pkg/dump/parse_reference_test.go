package dump

// The parser as it was before it streamed the rows of a dump (one pass,
// column indices resolved once, no per-row allocation), kept as the
// reference of the differential fuzz targets (FuzzParseMatchesReference)
// and of BenchmarkParseDumps. It shares the unchanged helpers (splitAligned,
// headerOffsets, splitCommas, placeholder, quoteLine, isColumnName).

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// refTable is a table with all its rows, split before any is read.
type refTable struct {
	table
	rows []tableRow
}

func refSplitCells(line string, width int) []string {
	cells := make([]string, 0, width)
	start := 0
	for i := 0; i < len(line); i++ {
		if line[i] != ',' {
			continue
		}
		if i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
			continue
		}
		cells = append(cells, strings.TrimSpace(line[start:i]))
		j := i + 1
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		start = j
		i = j - 1
	}
	cells = append(cells, strings.TrimSpace(line[start:]))
	return cells
}

func refParseTableCut(endpoint string, body []byte, first string, cuttable map[string]bool) (*refTable, error) {
	t := &refTable{table: table{endpoint: endpoint, index: map[string]int{}}}
	minCells := -1
	// One string for the whole body: every line and cell is a substring of it,
	// so a row costs no copy of its text.
	text := string(body)
	lineNo := 0
	commaOnly, trailingComma := false, false
	for len(text) > 0 {
		var raw string
		raw, text, _ = strings.Cut(text, "\n")
		lineNo++
		// The apiserver's tabwriter turns tabs into padding and \v, \f into
		// cell and line breaks, so these can only come from re-formatting;
		// treat them as padding.
		line := tabwriterControls.Replace(strings.TrimRight(raw, "\r"))
		// An elision ("...", "…") stands for rows left out of a paste or a
		// hand-trimmed bundle; no dump row is made of dots alone.
		if trimmed := strings.TrimSpace(line); trimmed == "" || refIsElision(trimmed) {
			continue
		}
		if !utf8.ValidString(line) {
			return nil, fmt.Errorf("%s line %d: not UTF-8 text: %s", endpoint, lineNo, quoteLine(line))
		}
		// The layout of Kubernetes' documentation ends every line, header
		// included, with a comma; no column is ever empty at the end of a
		// header, so one trailing comma there means "drop it on every line".
		if t.header == nil && strings.HasSuffix(strings.TrimRight(line, " "), ",") {
			trailingComma = true
		}
		closed := strings.HasSuffix(strings.TrimRight(line, " "), ",")
		if trailingComma {
			line = strings.TrimSuffix(strings.TrimRight(line, " "), ",")
		}
		if t.header == nil {
			t.header = refSplitCells(line, 16)
			if len(t.header) == 1 && strings.Contains(line, ",") {
				commaOnly = true
				t.header = splitCommas(line)
			}
			if t.header[0] != first {
				return nil, fmt.Errorf("%s line %d: expected a header starting with %q, got %s", endpoint, lineNo, first, quoteLine(line))
			}
			for i, h := range t.header {
				// Upstream column names are CamelCase identifiers; anything
				// else means this is not a dump header.
				if !isColumnName(h) {
					return nil, fmt.Errorf("%s line %d: %s is not a column name in header %s", endpoint, lineNo, strconv.Quote(h), quoteLine(line))
				}
				if _, dup := t.index[h]; dup {
					return nil, fmt.Errorf("%s line %d: column %q appears twice in header %s", endpoint, lineNo, h, quoteLine(line))
				}
				t.index[h] = i
			}
			t.offsets = headerOffsets(line)
			if cuttable != nil {
				minCells = len(t.header)
				for minCells > 0 && cuttable[t.header[minCells-1]] {
					minCells--
				}
			}
			continue
		}
		var cells []string
		if commaOnly {
			cells = splitCommas(line)
		} else {
			cells = refSplitCells(line, len(t.header))
			if len(cells) != len(t.header) {
				if aligned, ok := splitAligned(line, t.offsets); ok && len(t.offsets) == len(t.header) {
					cells = aligned
				}
			}
		}
		cut := closed && minCells >= 0 && len(cells) >= minCells && len(cells) < len(t.header)
		if len(cells) != len(t.header) && !cut {
			return nil, fmt.Errorf("%s line %d: %d columns where the header has %d: %s", endpoint, lineNo, len(cells), len(t.header), quoteLine(line))
		}
		t.rows = append(t.rows, tableRow{lineNo: lineNo, line: line, cells: cells})
	}
	if t.header == nil {
		return nil, fmt.Errorf("%s: empty body, expected a header starting with %q", endpoint, first)
	}
	return t, nil
}

// refCellReader reads the cells of a row by column name, a map lookup a
// cell, as the parser did; it converts them as cellReader does, but for
// times, which it reads with time.Parse alone.
type refCellReader struct {
	cellReader
}

func (c *refCellReader) str(col string) string { return c.cellReader.str(c.t.col(col)) }
func (c *refCellReader) has(col string) bool   { return c.t.col(col).i >= 0 }
func (c *refCellReader) int(col string) int    { return c.cellReader.int(c.t.col(col)) }
func (c *refCellReader) bool(col string) bool  { return c.cellReader.bool(c.t.col(col)) }
func (c *refCellReader) duration(col string) time.Duration {
	return c.cellReader.duration(c.t.col(col))
}
func (c *refCellReader) seatSeconds(col string) float64 {
	return c.cellReader.seatSeconds(c.t.col(col))
}

func (c *refCellReader) time(col string) time.Time {
	v, ok := c.cell(c.t.col(col))
	if !ok {
		return time.Time{}
	}
	ts, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		c.fail(c.t.col(col), v, "an RFC 3339 time")
	}
	return ts
}

func refIsElision(t string) bool {
	if t == "" {
		return false
	}
	low := strings.ToLower(t)
	if strings.Contains(low, "snip") && len(low) <= 16 {
		stripped := strings.Trim(low, "<>[]().… -")
		return stripped == "snip" || stripped == "snipped"
	}
	return dotsOnly(t)
}

func refParsePriorityLevels(body []byte) ([]PriorityLevelRow, error) {
	t, err := refParseTableCut("dump_priority_levels", body, "PriorityLevelName", nil)
	if err != nil {
		return nil, err
	}
	if err := t.require("PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests", "ExecutingRequests"); err != nil {
		return nil, err
	}
	_, hasCounters := t.index["DispatchedRequests"]
	unknown := t.unknownColumns(plColumns)
	out := make([]PriorityLevelRow, 0, len(t.rows))
	for _, r := range t.rows {
		c := &refCellReader{cellReader{t: &t.table, r: r}}
		row := PriorityLevelRow{Name: c.str("PriorityLevelName"), HasCounters: hasCounters, Extra: t.extra(r, unknown)}
		if row.Name == "" {
			return nil, fmt.Errorf("dump_priority_levels line %d: empty PriorityLevelName: %s", r.lineNo, quoteLine(r.line))
		}
		if placeholder(r.cells) {
			row.Placeholder = true
			row.Extra = nil
			out = append(out, row)
			continue
		}
		row.ActiveQueues = c.int("ActiveQueues")
		row.IsIdle = c.bool("IsIdle")
		row.IsQuiescing = c.bool("IsQuiescing")
		row.WaitingRequests = c.int("WaitingRequests")
		row.ExecutingRequests = c.int("ExecutingRequests")
		row.DispatchedRequests = c.int("DispatchedRequests")
		row.RejectedRequests = c.int("RejectedRequests")
		row.TimedoutRequests = c.int("TimedoutRequests")
		row.CancelledRequests = c.int("CancelledRequests")
		if c.err != nil {
			return nil, c.err
		}
		out = append(out, row)
	}
	return out, nil
}

func refParseQueues(body []byte) ([]QueueRow, error) {
	t, err := refParseTableCut("dump_queues", body, "PriorityLevelName", nil)
	if err != nil {
		return nil, err
	}
	if err := t.require("PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests"); err != nil {
		return nil, err
	}
	_, hasSeats := t.index["SeatsInUse"]
	unknown := t.unknownColumns(queueColumns)
	out := make([]QueueRow, 0, len(t.rows))
	for _, r := range t.rows {
		c := &refCellReader{cellReader{t: &t.table, r: r}}
		row := QueueRow{PriorityLevel: c.str("PriorityLevelName"), HasSeats: hasSeats, Extra: t.extra(r, unknown)}
		if row.PriorityLevel == "" {
			return nil, fmt.Errorf("dump_queues line %d: empty PriorityLevelName: %s", r.lineNo, quoteLine(r.line))
		}
		if placeholder(r.cells) {
			row.Placeholder = true
			row.Extra = nil
			out = append(out, row)
			continue
		}
		row.Index = c.int("Index")
		row.PendingRequests = c.int("PendingRequests")
		row.ExecutingRequests = c.int("ExecutingRequests")
		row.SeatsInUse = c.int("SeatsInUse")
		if c.has("NextDispatchR") {
			row.NextDispatchR = c.seatSeconds("NextDispatchR")
		} else {
			row.NextDispatchR = c.seatSeconds("VirtualStart")
		}
		row.InitialSeatsSum = c.int("InitialSeatsSum")
		row.MaxSeatsSum = c.int("MaxSeatsSum")
		row.TotalWorkSum = c.seatSeconds("TotalWorkSum")
		if c.err != nil {
			return nil, c.err
		}
		out = append(out, row)
	}
	return out, nil
}

func refParseRequests(body []byte) ([]RequestRow, error) {
	t, err := refParseTableCut("dump_requests", body, "PriorityLevelName", requestDetails)
	if err != nil {
		return nil, err
	}
	// "FlowDistingsher" is upstream's spelling.
	if err := t.require("PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher", "ArriveTime"); err != nil {
		return nil, err
	}
	_, hasDetails := t.index["UserName"]
	_, hasSeats := t.index["InitialSeats"]
	_, hasStart := t.index["StartTime"]
	unknown := t.unknownColumns(requestColumns)
	out := make([]RequestRow, 0, len(t.rows))
	for _, r := range t.rows {
		// Before 1.20 every exempt level had a row of "<none>" cells here
		// too: a phantom, not a request (kubernetes/kubernetes#93376).
		if placeholder(r.cells) {
			continue
		}
		c := &refCellReader{cellReader{t: &t.table, r: r}}
		row := RequestRow{
			PriorityLevel:     c.str("PriorityLevelName"),
			FlowSchema:        c.str("FlowSchemaName"),
			QueueIndex:        c.int("QueueIndex"),
			IndexInQueue:      c.int("RequestIndexInQueue"),
			FlowDistinguisher: c.str("FlowDistingsher"),
			ArriveTime:        c.time("ArriveTime"),
			InitialSeats:      c.int("InitialSeats"),
			FinalSeats:        c.int("FinalSeats"),
			AdditionalLatency: c.duration("AdditionalLatency"),
			StartTime:         c.time("StartTime"),
			HasSeats:          hasSeats,
			HasDetails:        hasDetails,
			WaitingOnly:       !hasStart,
			UserName:          c.str("UserName"),
			Verb:              c.str("Verb"),
			APIPath:           c.str("APIPath"),
			Namespace:         c.str("Namespace"),
			Name:              c.str("Name"),
			APIVersion:        c.str("APIVersion"),
			Resource:          c.str("Resource"),
			SubResource:       c.str("SubResource"),
			Extra:             t.extra(r, unknown),
		}
		if len(r.cells) < len(t.header) {
			row.CutAfter = t.header[len(r.cells)-1]
		}
		if c.err != nil {
			return nil, c.err
		}
		if row.PriorityLevel == "" {
			return nil, fmt.Errorf("dump_requests line %d: empty PriorityLevelName: %s", r.lineNo, quoteLine(r.line))
		}
		// A zero StartTime renders as 0001-01-01T00:00:00Z: keep it zero.
		if row.StartTime.IsZero() {
			row.StartTime = time.Time{}
		}
		out = append(out, row)
	}
	return out, nil
}
