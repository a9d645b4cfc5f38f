package dump

import (
	"sort"
	"strconv"
	"strings"
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
}

func newMetricsMerge() *metricsMerge {
	return &metricsMerge{help: map[string]string{}, typ: map[string]string{}, typeName: map[string]string{}, line: map[string]string{}, name: map[string]string{}}
}

// add reads the trimmed lines of one metrics body.
func (m *metricsMerge) add(lines []string) {
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(l, "# HELP "); ok {
			n, _, _ := strings.Cut(rest, " ")
			m.family(n)
			if _, ok := m.help[n]; !ok {
				m.help[n] = l
			}
			continue
		}
		if rest, ok := strings.CutPrefix(l, "# TYPE "); ok {
			n, t, _ := strings.Cut(rest, " ")
			m.family(n)
			if _, ok := m.typ[n]; !ok {
				m.typ[n], m.typeName[n] = l, strings.TrimSpace(t)
			}
			continue
		}
		name, key, value := seriesKey(l)
		if prev, ok := m.line[key]; ok {
			m.repeated++
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
	order := append([]string(nil), m.families...)
	seen := map[string]bool{}
	for _, f := range order {
		seen[f] = true
	}
	for _, k := range m.series {
		f := m.familyOf(m.name[k])
		if !seen[f] {
			seen[f] = true
			order = append(order, f)
		}
		bySeries[f] = append(bySeries[f], m.line[k])
	}
	var b strings.Builder
	for _, f := range order {
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

// note says what the merge did, "" when no series was read twice.
func (m *metricsMerge) note() string {
	if m.repeated == 0 {
		return ""
	}
	s := strconv.Itoa(m.repeated) + " metrics series read again (two scrapes of one server, or a paste repeated) counted once, from the last read"
	if m.changed > 0 {
		s += "; " + strconv.Itoa(m.changed) + " of them changed between reads: if they came from different apiservers, give one input per apiserver"
	}
	return s
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
