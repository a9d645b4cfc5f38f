package dump

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/internal/utctime"
)

// maxQuotedLine bounds how much of an offending line an error quotes, so a
// garbage body (an HTML error page, a binary blob) gives one readable line.
const maxQuotedLine = 120

var tabwriterControls = strings.NewReplacer("\t", " ", "\v", " ", "\f", " ")

// bodyString is body as a string without a copy: a dump is megabytes and
// its rows keep substrings of it, beside the body itself kept in
// Snapshot.Raw. The caller must not modify body while the string lives.
func bodyString(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	return unsafe.String(&body[0], len(body))
}

// table is the header of one debug dump and what it says about the rows:
// how to split them and which cells they must hold.
//
// The apiserver writes every dump through
// text/tabwriter.NewWriter(w, 8, 0, 1, ' ', 0) with cells joined by ",\t"
// (k8s.io/apiserver pkg/util/flowcontrol/apf_controller_debug.go: row,
// tabPrint, endLine), so on the wire a cell ends with a comma followed by at
// least one space of padding, and the last cell of a line has no comma.
type table struct {
	endpoint string
	header   []string
	// index maps a header name to its column.
	index map[string]int
	// offsets are the rune offsets where each header cell starts; tabwriter
	// aligns every line of a dump to them, which lets us split a line whose
	// values themselves contain ", " (user names and paths are not escaped).
	offsets []int
	// commaOnly: the padding was stripped (plain CSV); trailingComma:
	// every line ends with a comma (the documentation's layout).
	commaOnly, trailingComma bool
	// minCells is the fewest cells a row cut short may have (-1: a row
	// must be whole).
	minCells int
}

// tableRow is one row of a dump. Its cells are substrings of the body and
// the slice is reused for the next row: a row handler copies what it keeps.
type tableRow struct {
	lineNo int
	line   string
	cells  []string
}

// splitCells splits one dump line into dst's storage. A separator is a
// comma followed by a space or by the end of the line; the padding after
// it is dropped.
//
// It runs once a cell of every row: the search for the comma, the trim
// and the skip of the padding are written out here rather than called.
func splitCells(dst []string, line string) []string {
	cells := dst[:0]
	start := 0
	for i := 0; ; {
		// The cells are padded to the header's columns: jump from comma
		// to comma, a word of eight bytes at a time, rather than step
		// through the padding.
		c := -1
		for ; i+8 <= len(line); i += 8 {
			x := load64(line[i:]) ^ commas8
			if y := (x - ones8) &^ x & highs8; y != 0 {
				c = i + bits.TrailingZeros64(y)/8
				break
			}
		}
		if c < 0 {
			for ; i < len(line); i++ {
				if line[i] == ',' {
					c = i
					break
				}
			}
			if c < 0 {
				break
			}
		}
		i = c
		if i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
			i++
			continue
		}
		// trimSpace, without its call
		cell := line[start:i]
		if len(cell) == 0 || cell[0] <= ' ' || cell[0] >= utf8.RuneSelf || cell[len(cell)-1] <= ' ' || cell[len(cell)-1] >= utf8.RuneSelf {
			cell = strings.TrimSpace(cell)
		}
		cells = append(cells, cell)
		// The padding, eight spaces at a time, then a byte at a time.
		j := i + 1
		for j+8 <= len(line) {
			if x := load64(line[j:]) ^ spaces8; x != 0 {
				j += bits.TrailingZeros64(x) / 8
				break
			}
			j += 8
		}
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		start, i = j, j
	}
	cells = append(cells, trimSpace(line[start:]))
	return cells
}

// Words of eight bytes, for reading a line a word at a time (the SWAR
// idiom of "Bit Twiddling Hacks": a word holds a zero byte when
// (x-ones) &^ x & highs is not zero, and its lowest set bit is in the
// first zero byte).
const (
	ones8   = 0x0101010101010101
	highs8  = 0x8080808080808080
	spaces8 = 0x2020202020202020
	commas8 = 0x2c2c2c2c2c2c2c2c
)

// load64 reads the first eight bytes of s, the first the lowest.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// trimSpace is strings.TrimSpace, without the call for a cell that has
// nothing to trim: neither end is white space, a control byte or part of
// a multi-byte rune.
func trimSpace(s string) string {
	if len(s) > 0 && s[0] > ' ' && s[0] < utf8.RuneSelf && s[len(s)-1] > ' ' && s[len(s)-1] < utf8.RuneSelf {
		return s
	}
	return strings.TrimSpace(s)
}

// splitCommas is the fallback for a dump whose padding was stripped (for
// example by a tool that re-joined it as plain CSV).
func splitCommas(line string) []string {
	cells := strings.Split(line, ",")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// headerOffsets returns the rune offset at which each cell of the header
// line starts.
func headerOffsets(line string) []int {
	var offs []int
	runeIdx := 0
	atStart := true
	prevSep := false
	for _, r := range line {
		if atStart && r != ' ' {
			offs = append(offs, runeIdx)
			atStart = false
		}
		if prevSep && r != ' ' && r != '\t' {
			offs = append(offs, runeIdx)
			prevSep = false
		}
		if r == ',' {
			prevSep = true
		} else if r != ' ' && r != '\t' {
			prevSep = false
		}
		runeIdx++
	}
	return offs
}

// splitAligned splits line at the header's column offsets, for a line whose
// values contain the separator. It reports false when the line is not
// aligned to the header (each boundary must follow "," and padding).
func splitAligned(line string, offs []int) ([]string, bool) {
	runes := []rune(line)
	if len(offs) == 0 {
		return nil, false
	}
	cells := make([]string, 0, len(offs))
	for i, off := range offs {
		if off > len(runes) {
			return nil, false
		}
		end := len(runes)
		if i+1 < len(offs) {
			end = offs[i+1]
			if end > len(runes) {
				return nil, false
			}
			// The cell must end with "," and at least one space of padding.
			cell := strings.TrimRight(string(runes[off:end]), " \t")
			if end-1 < 0 || (runes[end-1] != ' ' && runes[end-1] != '\t') || !strings.HasSuffix(cell, ",") {
				return nil, false
			}
			cells = append(cells, strings.TrimSpace(strings.TrimSuffix(cell, ",")))
			continue
		}
		cells = append(cells, strings.TrimSpace(string(runes[off:end])))
	}
	return cells, true
}

// quoteLine quotes a line for an error message, truncated sensibly.
func quoteLine(line string) string {
	if utf8.RuneCountInString(line) > maxQuotedLine {
		r := []rune(line)
		line = string(r[:maxQuotedLine]) + "..."
	}
	return strconv.Quote(line)
}

// hasTabwriterControls reports whether line holds one of the bytes
// tabwriterControls replaces; a line of a dump as served has none.
func hasTabwriterControls(line string) bool {
	return strings.IndexByte(line, '\t') >= 0 || strings.IndexByte(line, '\v') >= 0 || strings.IndexByte(line, '\f') >= 0
}

// scanTable reads body as a dump: a header, then rows. first is the name
// the first header column must have; it is how a dump is told from garbage
// such as an HTML page or a JSON Status. cuttable, when not nil, also
// keeps a row cut short after a whole cell (its line ends with the cell's
// comma) when every column it lacks is one of cuttable: the columns a paste
// may leave out (the request details that documentation cuts to fit a
// page). Such a row has fewer cells than the header; a row cut inside a
// cell (no comma at its end) is still an error.
//
// onHeader checks the header and prepares the rows' reading; onRow reads
// each row, in order. The rows are read in the same pass as they are
// split, but the errors keep their precedence: a line that does not split
// into the header's columns, anywhere in the body, is the error before
// what onHeader or onRow says of an earlier line (after their first error,
// the rest is only split).
func scanTable(endpoint string, body []byte, first string, cuttable map[string]bool,
	onHeader func(t *table) error, onRow func(t *table, r tableRow) error) error {
	return scanTableParts(endpoint, body, first, cuttable, onHeader, 0, func([]int) []func(*table, tableRow) error {
		return []func(*table, tableRow) error{onRow}
	})
}

// scanTableParts is scanTable, reading the rows in two parts at once when
// the rows after the header are at least parallel bytes (0: never): the
// second part, from the line break nearest their middle, in a goroutine
// of its own. parts gives the row handler of each part, given how many
// lines each has at most (one part: every row). The error is the one
// scanTable gives: the first line, in either part, that does not split,
// else onHeader's, else the first row's error of part 0, else of part 1.
func scanTableParts(endpoint string, body []byte, first string, cuttable map[string]bool,
	onHeader func(t *table) error, parallel int, parts func(lines []int) []func(*table, tableRow) error) error {
	t := &table{endpoint: endpoint, index: map[string]int{}, minCells: -1}
	// One string for the whole body, sharing its memory: every line and
	// cell is a substring of it, so neither the body nor a row is copied.
	// The rows' strings keep body alive, and it must not change after
	// (the parsers' callers keep a body as read: Snapshot.Raw).
	text := bodyString(body)
	lineNo := 0
	for len(text) > 0 {
		var raw string
		raw, text, _ = strings.Cut(text, "\n")
		lineNo++
		line, closed, skip, err := t.prepare(raw, lineNo)
		if err != nil {
			return err
		}
		if skip {
			continue
		}
		if err := t.readHeader(line, lineNo, first, cuttable); err != nil {
			return err
		}
		t.trailingComma = closed
		break
	}
	if t.header == nil {
		return fmt.Errorf("%s: empty body, expected a header starting with %q", endpoint, first)
	}
	deferred := onHeader(t)
	if deferred != nil || parallel <= 0 || len(text) < parallel {
		var onRow func(*table, tableRow) error
		if deferred == nil {
			onRow = parts([]int{lines(text)})[0]
		}
		split, rowErr := t.scanRows(text, lineNo, onRow)
		if split != nil {
			return split
		}
		if deferred != nil {
			return deferred
		}
		return rowErr
	}
	// The parts meet at a line break; no break after the middle: one part.
	first0, second := text, ""
	if k := strings.IndexByte(text[len(text)/2:], '\n'); k >= 0 {
		mid := len(text)/2 + k + 1
		first0, second = text[:mid], text[mid:]
	}
	n0 := strings.Count(first0, "\n")
	onRows := parts([]int{lines(first0), lines(second)})
	type result struct{ split, row error }
	done := make(chan result, 1)
	go func() {
		split, row := t.scanRows(second, lineNo+n0, onRows[1])
		done <- result{split, row}
	}()
	split0, row0 := t.scanRows(first0, lineNo, onRows[0])
	r1 := <-done
	switch {
	case split0 != nil:
		return split0
	case r1.split != nil:
		return r1.split
	case row0 != nil:
		return row0
	}
	return r1.row
}

// lines is the number of lines of text, at most.
func lines(text string) int {
	n := strings.Count(text, "\n")
	if len(text) > 0 && text[len(text)-1] != '\n' {
		n++
	}
	return n
}

// prepare readies one raw line of a dump: it returns the line to split,
// whether its cells ended with a comma (closed), and whether it is to be
// skipped (blank, an elision); an error for a line that is not text.
func (t *table) prepare(raw string, lineNo int) (line string, closed, skip bool, err error) {
	// The apiserver's tabwriter turns tabs into padding and \v, \f into
	// cell and line breaks, so these can only come from re-formatting;
	// treat them as padding.
	line = strings.TrimRight(raw, "\r")
	if hasTabwriterControls(line) {
		line = tabwriterControls.Replace(line)
	}
	// An elision ("...", "…") stands for rows left out of a paste or a
	// hand-trimmed bundle; no dump row is made of dots alone.
	if trimmed := strings.TrimSpace(line); trimmed == "" || isElision(trimmed) {
		return "", false, true, nil
	}
	if !utf8.ValidString(line) {
		return "", false, false, fmt.Errorf("%s line %d: not UTF-8 text: %s", t.endpoint, lineNo, quoteLine(line))
	}
	// The layout of Kubernetes' documentation ends every line, header
	// included, with a comma; no column is ever empty at the end of a
	// header, so one trailing comma there means "drop it on every line".
	untrimmed := strings.TrimRight(line, " ")
	closed = strings.HasSuffix(untrimmed, ",")
	if t.header == nil && closed || t.trailingComma {
		line = strings.TrimSuffix(untrimmed, ",")
	}
	return line, closed, false, nil
}

// scanRows splits the rows of text, whose first line is line lineNo+1,
// and hands them to onRow (nil: split only). It returns the first line
// that does not split into the header's columns, and the first error of
// onRow, after which the rest is only split.
func (t *table) scanRows(text string, lineNo int, onRow func(*table, tableRow) error) (split, rowErr error) {
	cells := make([]string, 0, len(t.header))
	for len(text) > 0 {
		var raw string
		raw, text, _ = strings.Cut(text, "\n")
		lineNo++
		line, closed, skip, err := t.prepare(raw, lineNo)
		if err != nil {
			return err, rowErr
		}
		if skip {
			continue
		}
		if t.commaOnly {
			cells = splitCommas(line)
		} else {
			cells = splitCells(cells, line)
			if len(cells) != len(t.header) {
				if aligned, ok := splitAligned(line, t.offsets); ok && len(t.offsets) == len(t.header) {
					cells = aligned
				}
			}
		}
		cut := closed && t.minCells >= 0 && len(cells) >= t.minCells && len(cells) < len(t.header)
		if len(cells) != len(t.header) && !cut {
			return fmt.Errorf("%s line %d: %d columns where the header has %d: %s", t.endpoint, lineNo, len(cells), len(t.header), quoteLine(line)), rowErr
		}
		if rowErr == nil && onRow != nil {
			rowErr = onRow(t, tableRow{lineNo: lineNo, line: line, cells: cells})
		}
	}
	return nil, rowErr
}

// readHeader reads the header line of a dump.
func (t *table) readHeader(line string, lineNo int, first string, cuttable map[string]bool) error {
	t.header = splitCells(make([]string, 0, 16), line)
	if len(t.header) == 1 && strings.Contains(line, ",") {
		t.commaOnly = true
		t.header = splitCommas(line)
	}
	if t.header[0] != first {
		return fmt.Errorf("%s line %d: expected a header starting with %q, got %s", t.endpoint, lineNo, first, quoteLine(line))
	}
	for i, h := range t.header {
		// Upstream column names are CamelCase identifiers; anything
		// else means this is not a dump header.
		if !isColumnName(h) {
			return fmt.Errorf("%s line %d: %s is not a column name in header %s", t.endpoint, lineNo, strconv.Quote(h), quoteLine(line))
		}
		if _, dup := t.index[h]; dup {
			return fmt.Errorf("%s line %d: column %q appears twice in header %s", t.endpoint, lineNo, h, quoteLine(line))
		}
		t.index[h] = i
	}
	t.offsets = headerOffsets(line)
	if cuttable != nil {
		t.minCells = len(t.header)
		for t.minCells > 0 && cuttable[t.header[t.minCells-1]] {
			t.minCells--
		}
	}
	return nil
}

// require checks that every named column is in the header.
func (t *table) require(names ...string) error {
	var missing []string
	for _, n := range names {
		if _, ok := t.index[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: header lacks %s %s: %s", t.endpoint, textfmt.Plural(len(missing), "column", "columns"), strings.Join(missing, ", "), quoteLine(strings.Join(t.header, ", ")))
	}
	return nil
}

// unknownColumns lists the columns of the header this parser does not know.
// Computed once per table, it keeps the per-row work of extra to nothing in
// the common case of a layout with no extra columns.
func (t *table) unknownColumns(known map[string]bool) []int {
	var idx []int
	for i, h := range t.header {
		if !known[h] {
			idx = append(idx, i)
		}
	}
	return idx
}

// extra returns the cells of the columns unknownColumns found, so a newer
// apiserver's additions survive a round trip through a bundle.
func (t *table) extra(r tableRow, unknown []int) map[string]string {
	if len(unknown) == 0 {
		return nil
	}
	m := make(map[string]string, len(unknown))
	for _, i := range unknown {
		if i < len(r.cells) {
			m[t.header[i]] = r.cells[i]
		}
	}
	return m
}

// column is a header column resolved once per dump: its name (for
// errors) and index (-1 when the header lacks it).
type column struct {
	name string
	i    int
}

// col resolves the column named name.
func (t *table) col(name string) column {
	i, ok := t.index[name]
	if !ok {
		i = -1
	}
	return column{name: name, i: i}
}

// cellReader reads typed cells of one row and remembers the first error.
type cellReader struct {
	t   *table
	r   tableRow
	err error
	// days, when not nil, is the date the rows read before ended on.
	days *dayCache
}

func (c *cellReader) fail(col column, val, what string) {
	if c.err == nil {
		c.err = fmt.Errorf("%s line %d: column %s: %s is not %s: %s", c.t.endpoint, c.r.lineNo, col.name, strconv.Quote(val), what, quoteLine(c.r.line))
	}
}

// cell returns the cell of column col and whether the header has it.
func (c *cellReader) cell(col column) (string, bool) {
	if col.i < 0 {
		return "", false
	}
	if col.i >= len(c.r.cells) {
		// a row cut short (scanTable's cuttable): the column is not in it
		return "", true
	}
	return c.r.cells[col.i], true
}

// str returns the cell of column col, or "" when the header lacks it.
func (c *cellReader) str(col column) string {
	v, _ := c.cell(col)
	return v
}

// same returns the cell of column col, or prev when they are equal: the
// one string for a value that rows repeat (a level's name), so that
// comparing it with the value of the row before costs no read of either.
func (c *cellReader) same(col column, prev string) string {
	if v := c.str(col); v != prev {
		return v
	}
	return prev
}

func (c *cellReader) int(col column) int {
	v, ok := c.cell(col)
	if !ok {
		return 0
	}
	if len(v) == 1 && v[0]-'0' <= 9 {
		// most counts and indexes of a dump are one digit
		return int(v[0] - '0')
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		c.fail(col, v, "an integer")
	}
	return n
}

func (c *cellReader) bool(col column) bool {
	v, ok := c.cell(col)
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil || (v != "true" && v != "false") {
		c.fail(col, v, "true or false")
	}
	return b
}

func (c *cellReader) time(col column) time.Time {
	v, ok := c.cell(col)
	if !ok {
		return time.Time{}
	}
	days := c.days
	if days == nil {
		days = &dayCache{}
	}
	if ts, ok := days.parseUTC(v); ok {
		return ts
	}
	ts, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		c.fail(col, v, "an RFC 3339 time")
	}
	return ts
}

// parseUTC is time.Parse(time.RFC3339Nano, s) for the one form the
// apiserver writes (Go's RFC 3339 in UTC: 2006-01-02T15:04:05.999999999Z,
// zero fraction digits dropped), which a dump repeats twice a request. It
// reports false for anything else, valid or not, which time.Parse reads.
func parseUTC(s string) (time.Time, bool) { return utctime.Parse(s) }

// dayCache is the date part of the last time parseUTC read and its day
// count: a dump's times are mostly of one day.
type dayCache struct{ utctime.Cache }

// parseUTC is parseUTC, remembering the date it read in d.
func (d *dayCache) parseUTC(s string) (time.Time, bool) { return utctime.ParseCached(&d.Cache, s) }

// daysSinceEpoch is the number of days from 1970-01-01 to the date.
var daysSinceEpoch = utctime.DaysSinceEpoch

func (c *cellReader) duration(col column) time.Duration {
	v, ok := c.cell(col)
	if !ok {
		return 0
	}
	if v == "0s" {
		// what an apiserver writes for almost every request
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		c.fail(col, v, "a duration")
	}
	return d
}

// seatSeconds parses a SeatSeconds string such as "0.00300000ss"
// (k8s.io/apiserver pkg/util/flowcontrol/request/seat_seconds.go:
// SeatSeconds.String) or, from 1.20-era dumps, a bare "%.4f" VirtualStart.
func (c *cellReader) seatSeconds(col column) float64 {
	v, ok := c.cell(col)
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "ss"), 64)
	if err != nil {
		c.fail(col, v, "a seat-seconds value")
	}
	return f
}

// placeholder reports whether every cell but the first is "<none>": how
// apiservers before 1.28 rendered the exempt level (plState.queues == nil in
// apf_controller_debug.go of v0.20 to v0.27).
func placeholder(cells []string) bool {
	if len(cells) < 2 {
		return false
	}
	for _, c := range cells[1:] {
		if c != "<none>" {
			return false
		}
	}
	return true
}

func knownSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func isColumnName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case i > 0 && (r >= '0' && r <= '9' || r == '_'):
		default:
			return false
		}
	}
	return true
}
