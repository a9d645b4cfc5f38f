package dump

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// metricsMerge joins the /metrics text of a raw input: several greps of
// one scrape, or the same series read twice (two scrapes of one server in a
// directory, a grep pasted twice). A series is counted once, from the last
// read (the later scrape), so nothing is summed with itself; HELP and TYPE
// lines are kept once per family, each family's lines together, as the
// text format requires.
type metricsMerge struct {
	// families in the order first seen, with their HELP and TYPE lines.
	families []string
	help     map[string]string
	typ      map[string]string
	typeName map[string]string
	// series in the order first seen, with their last line.
	series []string
	line   map[string]string
	name   map[string]string
	// repeated counts the series read more than once, changed those whose
	// value differed between reads.
	repeated, changed int
	// lastFrom names the body of the last series read again.
	lastFrom string
	// instances are the values of the instance label a store adds (a
	// Prometheus UI paste): several mean several apiservers in one input.
	instances map[string]bool
	// sources are the bodies read, in order: what each holds of which
	// levels (unknown).
	sources []*mergeSource
}

// mergeSource is what one body of a merge holds: the names of its HELP,
// TYPE and sample lines, and the priority levels its series name.
type mergeSource struct {
	names  map[string]bool
	levels map[string]bool
}

func newMetricsMerge() *metricsMerge {
	return &metricsMerge{help: map[string]string{}, typ: map[string]string{}, typeName: map[string]string{}, line: map[string]string{}, name: map[string]string{}}
}

// add reads the trimmed lines of one metrics body, named from.
func (m *metricsMerge) add(from string, lines []string) {
	src := &mergeSource{names: map[string]bool{}, levels: map[string]bool{}}
	m.sources = append(m.sources, src)
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(l, "# HELP "); ok {
			n, _, _ := strings.Cut(rest, " ")
			src.names[n] = true
			m.family(n)
			if _, ok := m.help[n]; !ok {
				m.help[n] = l
			}
			continue
		}
		if rest, ok := strings.CutPrefix(l, "# TYPE "); ok {
			n, t, _ := strings.Cut(rest, " ")
			src.names[n] = true
			m.family(n)
			if _, ok := m.typ[n]; !ok {
				m.typ[n], m.typeName[n] = l, strings.TrimSpace(t)
			}
			continue
		}
		name, key, value := seriesKey(l)
		src.names[name] = true
		if v, ok := labelOf(key, "priority_level"); ok && v != "" {
			src.levels[v] = true
		}
		if i := strings.Index(key, `instance="`); i >= 0 && (key[i-1] == '{' || key[i-1] == ',') {
			if v, _, ok := strings.Cut(key[i+len(`instance="`):], `"`); ok {
				if m.instances == nil {
					m.instances = map[string]bool{}
				}
				m.instances[v] = true
			}
		}
		if prev, ok := m.line[key]; ok {
			m.repeated++
			m.lastFrom = from
			if _, _, v := seriesKey(prev); v != value {
				m.changed++
			}
		} else {
			m.series = append(m.series, key)
			m.name[key] = name
		}
		m.line[key] = l
	}
}

func (m *metricsMerge) family(n string) {
	if _, ok := m.help[n]; ok {
		return
	}
	if _, ok := m.typ[n]; ok {
		return
	}
	for _, f := range m.families {
		if f == n {
			return
		}
	}
	m.families = append(m.families, n)
}

// familyOf is the family a sample belongs to: a histogram's or summary's
// _bucket, _sum, _count and _created samples belong to the declared base.
func (m *metricsMerge) familyOf(name string) string {
	if _, ok := m.typ[name]; ok {
		return name
	}
	for _, suf := range []string{"_bucket", "_sum", "_count", "_created"} {
		if base, ok := strings.CutSuffix(name, suf); ok {
			switch m.typeName[base] {
			case "histogram", "summary", "gaugehistogram":
				return base
			}
		}
	}
	return name
}

// body is the merged text: each family's HELP, TYPE and samples together.
func (m *metricsMerge) body() []byte {
	bySeries := map[string][]string{}
	for _, k := range m.series {
		f := m.familyOf(m.name[k])
		bySeries[f] = append(bySeries[f], m.line[k])
	}
	var b strings.Builder
	for _, f := range m.familiesInOrder() {
		if h, ok := m.help[f]; ok {
			b.WriteString(h + "\n")
		}
		if t, ok := m.typ[f]; ok {
			b.WriteString(t + "\n")
		}
		for _, l := range bySeries[f] {
			b.WriteString(l + "\n")
		}
	}
	return []byte(b.String())
}

// labelOf returns the value of label in a series key (seriesKey's: the
// pairs sorted, each name="value"), its escapes (\\, \", \n) read as the
// metrics parser reads them.
func labelOf(key, label string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 || !strings.HasSuffix(key, "}") {
		return "", false
	}
	for _, p := range splitLabels(key[open+1 : len(key)-1]) {
		if v, ok := strings.CutPrefix(p, label+"="); ok {
			v = strings.TrimSpace(v)
			if u, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
				return u, true
			}
			return strings.Trim(v, `"`), true
		}
	}
	return "", false
}

// unknown returns, for each APF family of the merge, the priority levels
// it cannot tell of: the levels that only bodies without the family name.
// A body of one scrape holds a family's series of every level it had (a
// level without one has none of it), but bodies from several inputs (the
// files of a directory, greps of different scrapes) do not speak for each
// other: a family of one says nothing of the levels only another names,
// whose figures of it are unknown, not 0. Nil when every family speaks for
// every level named.
func (m *metricsMerge) unknown() map[string][]string {
	all := map[string]bool{}
	for _, src := range m.sources {
		for l := range src.levels {
			all[l] = true
		}
	}
	var out map[string][]string
	for _, f := range m.familiesInOrder() {
		if !strings.HasPrefix(f, metrics.FlowcontrolPrefix) {
			continue
		}
		covered := map[string]bool{}
		for _, src := range m.sources {
			if m.holds(src, f) {
				for l := range src.levels {
					covered[l] = true
				}
			}
		}
		var levels []string
		for l := range all {
			if !covered[l] {
				levels = append(levels, l)
			}
		}
		if len(levels) == 0 {
			continue
		}
		sort.Strings(levels)
		if out == nil {
			out = map[string][]string{}
		}
		out[f] = levels
	}
	return out
}

// holds reports whether a body holds a line of family f.
func (m *metricsMerge) holds(src *mergeSource, f string) bool {
	for n := range src.names {
		if n == f || m.familyOf(n) == f {
			return true
		}
	}
	return false
}

// familiesInOrder are the families of the merge in the order body writes
// them.
func (m *metricsMerge) familiesInOrder() []string {
	order := append([]string(nil), m.families...)
	seen := map[string]bool{}
	for _, f := range order {
		seen[f] = true
	}
	for _, k := range m.series {
		if f := m.familyOf(m.name[k]); !seen[f] {
			seen[f] = true
			order = append(order, f)
		}
	}
	return order
}

// note says what the merge did, "" when no series was read twice and one
// apiserver at most is named.
func (m *metricsMerge) note() string {
	var notes []string
	if len(m.instances) > 1 {
		notes = append(notes, fmt.Sprintf("metrics of %d apiservers (instance label) are summed per level, as one server's: give one input per apiserver for per-server figures", len(m.instances)))
	}
	if u := m.unknown(); len(u) > 0 {
		fams := make([]string, 0, len(u))
		for f := range u {
			fams = append(fams, f)
		}
		sort.Strings(fams)
		what := fmt.Sprintf("%d metrics families (%s) are not in every input that names a level: their", len(fams), strings.Join(fams, ", "))
		if len(fams) == 1 {
			what = "the metrics family " + fams[0] + " is not in every input that names a level: its"
		}
		notes = append(notes, what+" figures of the levels only the other inputs name are unknown (-), not 0")
	}
	if m.repeated == 0 {
		return strings.Join(notes, "; ")
	}
	s := strconv.Itoa(m.repeated) + " metrics series read again (two scrapes of one server, or a paste repeated) counted once, from the last read (" + m.lastFrom + ")"
	if m.changed > 0 {
		s += "; " + strconv.Itoa(m.changed) + " of them changed between reads: if they came from different apiservers, give one input per apiserver"
	}
	return strings.Join(append(notes, s), "; ")
}

// seriesKey splits a sample line into its metric name, a key of the series
// (the name and its labels, sorted, so that one series written with its
// labels in another order or spacing is the same), and the value.
func seriesKey(l string) (name, key, value string) {
	i := strings.IndexAny(l, "{ \t")
	if i < 0 {
		return l, l, ""
	}
	name = l[:i]
	rest := l[i:]
	labels := ""
	if rest[0] == '{' {
		end := labelsEnd(rest)
		if end < 0 {
			return name, l, ""
		}
		labels, rest = rest[1:end], rest[end+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) > 0 {
		value = fields[0]
	}
	pairs := splitLabels(labels)
	sort.Strings(pairs)
	return name, name + "{" + strings.Join(pairs, ",") + "}", value
}

// labelsEnd returns the index of the brace that closes the label set
// starting s, -1 when there is none; quoted values may hold braces.
func labelsEnd(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++
		case s[i] == '"':
			quoted = !quoted
		case !quoted && s[i] == '}':
			return i
		}
	}
	return -1
}

// splitLabels splits the inside of a label set at the commas outside
// quotes, each pair trimmed.
func splitLabels(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++
		case s[i] == '"':
			quoted = !quoted
		case !quoted && s[i] == ',':
			if p := strings.TrimSpace(s[start:i]); p != "" {
				out = append(out, p)
			}
			start = i + 1
		}
	}
	if p := strings.TrimSpace(s[start:]); p != "" {
		out = append(out, p)
	}
	return out
}

// metricNameRE is a metric name of the text format.
var metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// seriesTail returns what follows the label set of a line that starts as a
// series does (a metric name and a closed label set), "" when it does not.
func seriesTail(t string) string {
	i := strings.IndexByte(t, '{')
	if i <= 0 || !metricNameRE.MatchString(t[:i]) {
		return ""
	}
	end := labelsEnd(t[i:])
	if end < 0 {
		return ""
	}
	return strings.TrimSpace(t[i+end+1:])
}

// isBareSeries reports whether t is a series with its labels and no value:
// the Prometheus UI's table copied one cell a line puts the value next.
func isBareSeries(t string) bool {
	i := strings.IndexByte(t, '{')
	return i > 0 && metricNameRE.MatchString(t[:i]) && labelsEnd(t[i:]) == len(t)-i-1
}

// isSampleValue reports whether t is a sample value of the text format.
func isSampleValue(t string) bool {
	switch t {
	case "+Inf", "-Inf", "Inf", "NaN":
		return true
	}
	_, err := strconv.ParseFloat(t, 64)
	return err == nil
}

// tableRuleRE is the rule under a Markdown table's header ("-- | --",
// "|---|:---:|").
var tableRuleRE = regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?$`)

// promTableLine reads a line of a Prometheus UI table pasted as Markdown
// (what a table copied from the UI becomes in a GitHub comment): the
// header ("series | value", "Element | Value") and the rule are skipped,
// a row "name{labels} | value" is the sample line "name{labels} value".
// ok is false for any other line.
func promTableLine(t string) (row string, skip, ok bool) {
	if !strings.Contains(t, "|") {
		return "", false, false
	}
	if tableRuleRE.MatchString(t) {
		return "", true, true
	}
	s := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(t, "|"), "|"))
	// The value is after the last bar outside the labels.
	from := 0
	if i := strings.IndexByte(s, '{'); i >= 0 {
		if end := labelsEnd(s[i:]); end >= 0 {
			from = i + end + 1
		}
	}
	bar := strings.LastIndexByte(s[from:], '|')
	if bar < 0 {
		return "", false, false
	}
	series, value := strings.TrimSpace(s[:from+bar]), strings.TrimSpace(s[from+bar+1:])
	switch strings.ToLower(series) {
	case "series", "element", "metric":
		if strings.EqualFold(value, "value") {
			return "", true, true
		}
	}
	name := series
	if i := strings.IndexByte(series, '{'); i >= 0 {
		if !isBareSeries(series) {
			return "", false, false
		}
		name = series[:i]
	}
	if !metricNameRE.MatchString(name) || !isSampleValue(value) {
		return "", false, false
	}
	return series + " " + value, false, true
}
