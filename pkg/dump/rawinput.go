package dump

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// RawInput is what DetectRaw found in raw artifacts: the bodies of the
// debug dumps and of /metrics as a user saves or pastes them
// ("kubectl get --raw /debug/api_priority_and_fairness/dump_priority_levels > pl.txt",
// "kubectl get --raw /metrics | grep flowcontrol"), told apart by their
// content, never by their file name.
type RawInput struct {
	// Files are the bodies found, by bundle file name (FilePriorityLevels,
	// FileQueues, FileRequests, MetricsFile(0)), with the lines that are not
	// part of them (elisions, shell prompts, code fences) taken out.
	Files map[string][]byte
	// From names where each body was found ("pl.txt", "standard input").
	From map[string]string
	// Elided counts the elision lines ("...", "…") skipped, Prompts the
	// shell command lines ("$ kubectl get --raw ..."), Prose the lines of
	// text around them ("Here is the dump:"), Tables the header and rule
	// lines of a Prometheus UI table pasted as Markdown ("series | value",
	// "-- | --").
	Elided, Prompts, Prose, Tables int
	// Ignored are the files of a directory that hold none of the kinds,
	// with why.
	Ignored []string
	// Newest is the latest time a request dump shows (an arrival or a
	// start); zero when there is none.
	Newest time.Time

	// cutRows counts the rows of the request dump cut short before their
	// request details end (RequestRow.CutAfter), cutAfter the columns they
	// stop after.
	cutRows  int
	cutAfter map[string]bool

	// counts are the rows parsed, by bundle file name.
	counts map[string]int
	// merge joins the metrics bodies, each series once.
	merge *metricsMerge
	// ObjectFiles is true when the command reading the input takes -f (the
	// note points to it only then).
	ObjectFiles bool

	// The FlowSchemas and PriorityLevelConfigurations of the object files
	// of a directory, and those files' names.
	flowSchemas    []flowcontrolv1.FlowSchema
	priorityLevels []flowcontrolv1.PriorityLevelConfiguration
	objectFiles    []string
}

// rawKinds are the bodies a raw input may hold, in the order a note names
// them.
var rawKinds = []string{FilePriorityLevels, FileQueues, FileRequests, MetricsFile(0)}

func rawKindName(file string) string {
	if file == MetricsFile(0) {
		return "metrics"
	}
	return strings.TrimSuffix(file, ".txt")
}

var (
	// A sample line of the Prometheus text format: a metric name, optional
	// labels, a value.
	metricSampleRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})?[ \t]+[-+0-9.eEInfNa]+([ \t]+-?[0-9]+)?$`)
	// A command (after a shell prompt or not), as pasted with its output.
	promptRE = regexp.MustCompile(`^((\$|%|#|>|PS [^>]*>)\s*)?(kubectl|oc|curl|k|wget|cat|grep|sudo)\s`)
)

// isElision reports whether a trimmed line stands for lines left out of a
// paste: "...", "…", "[...]", "(…)", "<snip>", "...snip...".
func isElision(t string) bool {
	if t == "" {
		return false
	}
	// Only a short line can be a "snip": skip the lower-case copy of the
	// others (every line of a dump goes through here). A line longer than
	// 16 bytes whose lower case is shorter (a Kelvin sign) has a letter
	// that is no part of "snip", and fails the dots below as it would fail
	// the "snip" test.
	if len(t) <= 16 {
		if low := strings.ToLower(t); strings.Contains(low, "snip") && len(low) <= 16 {
			stripped := strings.Trim(low, "<>[]().… -")
			return stripped == "snip" || stripped == "snipped"
		}
	}
	return dotsOnly(t)
}

// dotsOnly reports whether t is made of dots ("...", "…") with brackets
// and spaces around them.
func dotsOnly(t string) bool {
	dots := 0
	for _, r := range t {
		switch r {
		case '.':
			dots++
		case '…':
			dots += 3
		case '[', ']', '(', ')', ' ', '\t':
		default:
			return false
		}
	}
	return dots >= 3
}

// dumpKindOf returns the bundle file name of the dump whose header line
// this is, "" when the line is no dump header.
func dumpKindOf(t string) (string, error) {
	first, _, ok := strings.Cut(t, ",")
	if !ok || strings.TrimSpace(first) != "PriorityLevelName" {
		return "", nil
	}
	cols := map[string]bool{}
	for _, c := range strings.Split(t, ",") {
		cols[strings.TrimSpace(c)] = true
	}
	switch {
	case cols["FlowSchemaName"]:
		return FileRequests, nil
	case cols["ActiveQueues"]:
		return FilePriorityLevels, nil
	case cols["Index"]:
		return FileQueues, nil
	}
	return "", fmt.Errorf("a dump header of no known layout (neither dump_priority_levels, dump_queues nor dump_requests): %s", quoteLine(t))
}

// isProse reports whether a trimmed line is a sentence around a paste
// ("Here are the queues:", "Output of the command below"): it starts with
// a letter, has at least two words, and is neither a dump header nor
// /metrics text (the caller checks those first). A line of a dump has cells
// separated by commas, so inDump takes only lines without any.
func isProse(t string, inDump bool) bool {
	r, _ := utf8.DecodeRuneInString(t)
	if !unicode.IsLetter(r) || !strings.ContainsAny(t, " \t") {
		return false
	}
	if inDump && strings.Contains(t, ",") {
		return false
	}
	// A sentence starts with a word, not a metric name or a key=value.
	if first, _, _ := strings.Cut(t, " "); strings.ContainsAny(first, "_=/<>\"") {
		return false
	}
	// A series with labels and no value, or with a value the metrics
	// grammar refuses, is no sentence: let the reader say what is wrong.
	return !strings.Contains(t, "{")
}

func isMetricsLine(t string) bool {
	if strings.HasPrefix(t, "# HELP ") || strings.HasPrefix(t, "# TYPE ") {
		return true
	}
	return metricSampleRE.MatchString(t)
}

// section is one body found in a raw input.
type section struct {
	kind  string
	start int
	lines []string
}

// DetectRaw reads data, named name in messages ("pl.txt", "standard
// input"), as raw artifacts: one or more debug dumps and /metrics text,
// possibly pasted with their commands and with elision lines, and adds what
// it holds to in. Anything else is an error quoting the first line that is
// none of these.
func DetectRaw(name string, data []byte, in *RawInput) error {
	if in.Files == nil {
		in.Files, in.From = map[string][]byte{}, map[string]string{}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%s is empty", name)
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return fmt.Errorf("%s is binary data, not a bundle (a directory or a .tar.gz), a debug dump or /metrics text", name)
	}
	if err := grafanaError(name, data); err != nil {
		return err
	}
	if err := rulesError(name, data); err != nil {
		return err
	}
	var secs []*section
	var cur *section
	// The first prose line, quoted when nothing else is found: the input
	// was then no paste of a dump but something else.
	proseLine, proseText := 0, ""
	// A series of a Prometheus UI table copied with its value on the next
	// line waits here for it.
	pending, pendingLine := "", 0
	text := string(data)
	for n := 1; len(text) > 0; n++ {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		line = strings.TrimRight(line, "\r")
		t := strings.TrimSpace(line)
		switch {
		case t == "":
			continue
		case isElision(t):
			in.Elided++
			continue
		case strings.HasPrefix(t, "```"):
			cur = nil
			continue
		case promptRE.MatchString(t):
			in.Prompts++
			cur = nil
			continue
		case strings.HasPrefix(t, "#") && !isMetricsLine(t):
			// A comment of a shell session or of /metrics text.
			continue
		}
		inMetrics := cur == nil || cur.kind == MetricsFile(0)
		switch {
		case pending != "":
			if !isSampleValue(t) {
				return fmt.Errorf("%s line %d: the metrics series %s has no value: the next line, %s, is no number (a line of /metrics text is name{labels} value)", name, pendingLine, quoteLine(pending), quoteLine(t))
			}
			t = pending + " " + t
			line, pending = t, ""
		case inMetrics:
			if row, skip, ok := promTableLine(t); ok {
				if skip {
					in.Tables++
					continue
				}
				t, line = row, row
			} else if isBareSeries(t) {
				pending, pendingLine = t, n
				continue
			}
		}
		kind, err := dumpKindOf(t)
		if err != nil {
			return fmt.Errorf("%s line %d: %w", name, n, err)
		}
		switch {
		case kind != "":
			cur = &section{kind: kind, start: n}
			secs = append(secs, cur)
		case isMetricsLine(t) && (cur == nil || cur.kind != MetricsFile(0)):
			cur = &section{kind: MetricsFile(0), start: n}
			secs = append(secs, cur)
		case (cur == nil || cur.kind == MetricsFile(0) && !isMetricsLine(t)) && isProse(t, false),
			cur != nil && cur.kind != MetricsFile(0) && isProse(t, true):
			// Text around the paste ends the body it follows.
			if proseLine == 0 {
				proseLine, proseText = n, t
			}
			in.Prose++
			cur = nil
			continue
		case inMetrics && !isMetricsLine(t) && seriesTail(t) != "":
			return fmt.Errorf("%s line %d: a metrics series whose value is no number: after its labels comes %s (a line of /metrics text is name{labels} value): %s", name, n, quoteLine(seriesTail(t)), quoteLine(t))
		case cur == nil, cur.kind == MetricsFile(0) && !isMetricsLine(t):
			return notRaw(name, n, t)
		}
		// A dump keeps its alignment (cells may hold ", "); metrics lines
		// are taken trimmed.
		if cur.kind == MetricsFile(0) {
			line = t
		}
		cur.lines = append(cur.lines, line)
	}
	if pending != "" {
		return fmt.Errorf("%s line %d: the metrics series %s has no value (a line of /metrics text is name{labels} value)", name, pendingLine, quoteLine(pending))
	}
	if len(secs) == 0 {
		if proseLine > 0 {
			return notRaw(name, proseLine, proseText)
		}
		return fmt.Errorf("%s holds no debug dump and no /metrics text (only %s)", name, skippedLines(in))
	}
	for _, s := range secs {
		if err := in.add(name, s); err != nil {
			return err
		}
	}
	return nil
}

// parseMetricsBody parses a snapshot's metrics body, named name. A
// scrape's body (a live capture's, a bundle's as "dump bundle" writes it)
// is the Prometheus text format and parsed as such; any other form of the
// same (a Prometheus UI table, a paste with its command and code fences,
// put in a bundle by hand) is read by the reader of a raw file, which
// tells those forms apart (DetectRaw), so that a bundle reads what --from
// of the same file reads. A body the raw reader cannot read either gives
// the raw reader's error when it took the body for a paste (it skipped a
// table's header, a command or an elision), the Prometheus text's
// otherwise; one that holds a debug dump is refused.
func parseMetricsBody(name string, b []byte, at time.Time) (*metrics.Scrape, error) {
	sc, _, err := metrics.ParseAPF(bytes.NewReader(b), at)
	if err == nil {
		return sc, nil
	}
	err = fmt.Errorf("%s: %w", name, err)
	var raw RawInput
	if rerr := DetectRaw(name, b, &raw); rerr != nil {
		if raw.Tables+raw.Prompts+raw.Elided > 0 {
			return nil, rerr
		}
		return nil, err
	}
	for _, k := range rawKinds {
		if _, ok := raw.Files[k]; ok && k != MetricsFile(0) {
			return nil, fmt.Errorf("%s holds %s, where metrics are expected", name, rawKindName(k))
		}
	}
	// DetectRaw read a body, and none but metrics.
	sc, _, perr := metrics.ParseAPF(bytes.NewReader(raw.Files[MetricsFile(0)]), at)
	if perr != nil {
		return nil, err
	}
	return sc, nil
}

// notRaw is the error of a line that is none of the kinds.
func notRaw(name string, n int, t string) error {
	return fmt.Errorf("%s line %d: %s is neither a debug dump (a header starting \"PriorityLevelName,\"), /metrics text, nor a bundle (a directory or a .tar.gz written by \"kubectl apf dump bundle\")", name, n, quoteLine(t))
}

func skippedLines(in *RawInput) string {
	var parts []string
	if in.Elided > 0 {
		parts = append(parts, plural(in.Elided, "elision line"))
	}
	if in.Prompts > 0 {
		parts = append(parts, plural(in.Prompts, "command line"))
	}
	if in.Prose > 0 {
		parts = append(parts, plural(in.Prose, "line")+" of text")
	}
	if in.Tables > 0 {
		parts = append(parts, plural(in.Tables, "table header line"))
	}
	if len(parts) == 0 {
		return "code fences"
	}
	if len(parts) > 2 {
		return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	return strings.Join(parts, " and ")
}

func plural(n int, what string) string {
	return fmt.Sprintf("%d %s", n, textfmt.Plural(n, what, what+"s"))
}

// add checks one section with its parser and keeps it.
func (in *RawInput) add(name string, s *section) error {
	body := []byte(strings.Join(s.lines, "\n") + "\n")
	where := fmt.Sprintf("%s (the %s from line %d)", name, rawKindName(s.kind), s.start)
	if prev, dup := in.From[s.kind]; dup && s.kind != MetricsFile(0) {
		return fmt.Errorf("%s: a second %s (the first is in %s): give one capture per input, or one directory per apiserver", where, rawKindName(s.kind), prev)
	}
	switch s.kind {
	case FilePriorityLevels:
		rows, err := ParsePriorityLevels(body)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		in.count(s.kind, len(rows))
	case FileQueues:
		rows, err := ParseQueues(body)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		in.count(s.kind, len(rows))
	case FileRequests:
		rows, err := ParseRequests(body)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		in.count(s.kind, len(rows))
		for _, r := range rows {
			if r.CutAfter != "" {
				if in.cutAfter == nil {
					in.cutAfter = map[string]bool{}
				}
				in.cutRows++
				in.cutAfter[r.CutAfter] = true
			}
			for _, t := range []time.Time{r.ArriveTime, r.StartTime} {
				if t.After(in.Newest) {
					in.Newest = t
				}
			}
		}
	default:
		// Several greps of one scrape join into one body, where a series
		// read twice counts once.
		if in.merge == nil {
			in.merge = newMetricsMerge()
		}
		in.merge.add(fmt.Sprintf("%s from line %d", name, s.start), s.lines)
		body = in.merge.body()
		sc, _, err := metrics.ParseAPF(bytes.NewReader(body), time.Time{})
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if len(sc.Families) == 0 {
			return fmt.Errorf("%s: /metrics text without any API Priority and Fairness series (apiserver_flowcontrol_*): is it an apiserver's?", where)
		}
		in.count(s.kind, len(sc.Families))
		if prev, ok := in.From[s.kind]; ok && prev != name {
			name = prev + ", " + name
		}
		delete(in.Files, MetricsUnknownKey(0))
		if u := in.merge.unknown(); u != nil {
			b, err := json.Marshal(u)
			if err != nil {
				return err
			}
			in.Files[MetricsUnknownKey(0)] = b
		}
	}
	in.Files[s.kind] = body
	in.From[s.kind] = name
	return nil
}

func (in *RawInput) count(kind string, n int) {
	if in.counts == nil {
		in.counts = map[string]int{}
	}
	in.counts[kind] = n
}

// rawUnits names what a body's rows are.
var rawUnits = map[string]string{FilePriorityLevels: "level", FileQueues: "queue", FileRequests: "request", MetricsFile(0): "family"}

// Snapshot returns the snapshot of the raw input, named instance, taken at
// at (zero: unknown).
func (in *RawInput) Snapshot(instance string, at time.Time) (*Snapshot, error) {
	s := &Snapshot{Instance: instance, CapturedAt: at, Raw: map[string][]byte{}}
	for k, b := range in.Files {
		s.Raw[k] = b
	}
	if err := s.ParseRaw(); err != nil {
		return nil, err
	}
	return s, nil
}

// Note is the one line that says what the raw input held and what it did
// not, and what a command cannot do without the rest.
func (in *RawInput) Note(name string) string {
	var read, missing []string
	for _, k := range rawKinds {
		if _, ok := in.Files[k]; !ok {
			missing = append(missing, rawKindName(k))
			continue
		}
		unit := rawUnits[k]
		if unit == "family" {
			unit = "APF famil"
		}
		what := fmt.Sprintf("%s (%s)", rawKindName(k), pluralUnit(in.counts[k], unit))
		read = append(read, what)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "note: read %s as raw input: %s", name, strings.Join(read, ", "))
	if len(missing) > 0 {
		fmt.Fprintf(&b, "; not in it: %s", strings.Join(missing, ", "))
	}
	if len(in.objectFiles) > 0 {
		fmt.Fprintf(&b, "; objects from %s: %s, %s", strings.Join(in.objectFiles, ", "),
			plural(len(in.flowSchemas), "FlowSchema"), plural(len(in.priorityLevels), "PriorityLevelConfiguration"))
	} else {
		b.WriteString("; " + noObjectsNote(in.ObjectFiles))
	}
	if in.merge != nil {
		if n := in.merge.note(); n != "" {
			b.WriteString("; " + n)
		}
	}
	if in.cutRows > 0 {
		after := make([]string, 0, len(in.cutAfter))
		for c := range in.cutAfter {
			after = append(after, c)
		}
		sort.Strings(after)
		fmt.Fprintf(&b, "; %s of dump_requests %s after column %s: the columns after it are not in the input and show as -",
			plural(in.cutRows, "row"), map[bool]string{true: "stops", false: "stop"}[in.cutRows == 1], strings.Join(after, " or "))
	}
	if in.Elided > 0 || in.Prompts > 0 || in.Prose > 0 || in.Tables > 0 {
		fmt.Fprintf(&b, "; skipped %s", skippedLines(in))
	}
	if len(in.Ignored) > 0 {
		sort.Strings(in.Ignored)
		fmt.Fprintf(&b, "; ignored %s", strings.Join(in.Ignored, ", "))
	}
	return b.String()
}

// NoObjectsNote says what an input without FlowSchema and
// PriorityLevelConfiguration objects cannot give, to a command that takes
// -f.
const NoObjectsNote = "no FlowSchemas or PriorityLevelConfigurations: level names come from the dumps and metrics, classification and configured limits need the cluster, a bundle or -f"

// noObjectsNote is NoObjectsNote, without -f for a command that has none.
func noObjectsNote(objectFiles bool) string {
	if objectFiles {
		return NoObjectsNote
	}
	return strings.TrimSuffix(NoObjectsNote, ", a bundle or -f") + " or a bundle"
}

func pluralUnit(n int, unit string) string {
	if strings.HasSuffix(unit, "famil") {
		return fmt.Sprintf("%d %s", n, textfmt.Plural(n, unit+"y", unit+"ies"))
	}
	return plural(n, unit)
}

// HasObjects reports whether the snapshot was read with its FlowSchema and
// PriorityLevelConfiguration objects: a live capture always is, a raw dump
// never, a bundle when it holds them.
func (s *Snapshot) HasObjects() bool {
	if len(s.FlowSchemas) > 0 || len(s.PriorityLevels) > 0 {
		return true
	}
	_, fs := s.Raw[FileFlowSchemas]
	_, pl := s.Raw[FilePLCs]
	return fs || pl
}
