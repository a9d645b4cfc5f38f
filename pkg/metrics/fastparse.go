package metrics

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
)

// parseStrict reads the Prometheus text that kube-apiserver writes, and
// that FilterAPF keeps, into the families expfmt's TextParser gives for
// it, at a fraction of the cost: one pass over lines of "# HELP", "# TYPE"
// (counter, gauge, histogram, untyped) and samples `name{l="v",...} value`
// with integer histogram counts. Anything else (blanks around tokens,
// escapes, timestamps, other comments, summaries, a float count, a body
// not ending with a line break) makes it report false, and the caller
// parses with expfmt, which also gives every error; FuzzParseStrictMatchesExpfmt
// checks that what it reads is what expfmt reads.
func parseStrict(body []byte) (map[string]*dto.MetricFamily, bool) {
	if len(body) > 0 && body[len(body)-1] != '\n' {
		return nil, false
	}
	p := strictParser{fams: map[string]*dto.MetricFamily{}, strs: map[string]*string{}, hists: map[*dto.MetricFamily]map[string]*dto.Metric{}}
	text := string(body)
	for len(text) > 0 {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		if !p.line(line) {
			return nil, false
		}
	}
	for k, mf := range p.fams {
		if len(mf.Metric) == 0 {
			delete(p.fams, k)
		}
	}
	return p.fams, true
}

type strictParser struct {
	fams map[string]*dto.MetricFamily
	// strs interns names and label values: a scrape repeats them.
	strs map[string]*string
	// hists holds each histogram's series by their labels but le.
	hists map[*dto.MetricFamily]map[string]*dto.Metric
	// pairs is where the label pairs of the next samples are taken from.
	pairs []dto.LabelPair
}

func (p *strictParser) str(s string) *string {
	if v, ok := p.strs[s]; ok {
		return v
	}
	v := &s
	p.strs[s] = v
	return v
}

func (p *strictParser) line(line string) bool {
	switch {
	case line == "":
		return true
	case strings.HasPrefix(line, "# HELP "):
		name, help, ok := strings.Cut(line[len("# HELP "):], " ")
		if !ok || !legacyName(name, true) || help == "" || help[0] == ' ' || help[0] == '\t' || strings.IndexByte(help, '\\') >= 0 {
			return false
		}
		mf, _, _ := p.family(name)
		if mf.Help != nil {
			return false
		}
		mf.Help = p.str(help)
		return true
	case strings.HasPrefix(line, "# TYPE "):
		name, typ, ok := strings.Cut(line[len("# TYPE "):], " ")
		if !ok || !legacyName(name, true) {
			return false
		}
		var t dto.MetricType
		switch typ {
		case "counter":
			t = dto.MetricType_COUNTER
		case "gauge":
			t = dto.MetricType_GAUGE
		case "histogram":
			t = dto.MetricType_HISTOGRAM
		case "untyped":
			t = dto.MetricType_UNTYPED
		default:
			return false
		}
		mf, _, _ := p.family(name)
		if mf.Type != nil {
			return false
		}
		mf.Type = t.Enum()
		return true
	}
	return p.sample(line)
}

// family is expfmt's setOrCreateCurrentMF: the family a name belongs to
// (a histogram's series belong to the histogram), and whether the name is
// of a histogram's count or sum.
func (p *strictParser) family(name string) (mf *dto.MetricFamily, isCount, isSum bool) {
	if mf = p.fams[name]; mf != nil {
		return mf, false, false
	}
	// expfmt looks for a summary the name is a series of first: parseStrict
	// reads no summary (a TYPE summary line leaves the text to expfmt).
	base := name
	switch {
	case len(name) > 6 && strings.HasSuffix(name, "_count"):
		base, isCount = name[:len(name)-6], true
	case len(name) > 4 && strings.HasSuffix(name, "_sum"):
		base, isSum = name[:len(name)-4], true
	case len(name) > 7 && strings.HasSuffix(name, "_bucket"):
		base = name[:len(name)-7]
	}
	if mf = p.fams[base]; mf != nil && (mf.GetType() == dto.MetricType_HISTOGRAM || mf.GetType() == dto.MetricType_GAUGE_HISTOGRAM) {
		return mf, isCount, isSum
	}
	mf = &dto.MetricFamily{Name: p.str(name)}
	p.fams[name] = mf
	return mf, false, false
}

func (p *strictParser) sample(line string) bool {
	end := 0
	for end < len(line) && line[end] != '{' && line[end] != ' ' {
		end++
	}
	name := line[:end]
	if !legacyName(name, true) || end == len(line) {
		return false
	}
	mf, isCount, isSum := p.family(name)
	if mf.Type == nil {
		mf.Type = dto.MetricType_UNTYPED.Enum()
	}
	hist := mf.GetType() == dto.MetricType_HISTOGRAM
	if !hist && mf.GetType() != dto.MetricType_COUNTER && mf.GetType() != dto.MetricType_GAUGE && mf.GetType() != dto.MetricType_UNTYPED {
		return false
	}
	rest := line[end:]
	var labels []*dto.LabelPair
	le, hasLE := "", false
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq < 0 {
				return false
			}
			lname := rest[:eq]
			if !legacyName(lname, false) || lname == "__name__" || len(rest) < eq+2 || rest[eq+1] != '"' {
				return false
			}
			rest = rest[eq+2:]
			q := strings.IndexByte(rest, '"')
			if q < 0 {
				return false
			}
			value := rest[:q]
			if strings.IndexByte(value, '\\') >= 0 || strings.IndexByte(value, '\n') >= 0 || !utf8.ValidString(value) {
				return false
			}
			rest = rest[q+1:]
			if hist && lname == "le" {
				if hasLE {
					return false
				}
				le, hasLE = value, true
			} else {
				for _, l := range labels {
					if l.GetName() == lname {
						return false
					}
				}
				if len(p.pairs) == 0 {
					p.pairs = make([]dto.LabelPair, 256)
				}
				lp := &p.pairs[0]
				p.pairs = p.pairs[1:]
				lp.Name, lp.Value = p.str(lname), p.str(value)
				labels = append(labels, lp)
			}
			switch {
			case strings.HasPrefix(rest, ","):
				rest = rest[1:]
			case strings.HasPrefix(rest, "}"):
			default:
				return false
			}
		}
	}
	if len(rest) < 2 || rest[0] != ' ' {
		return false
	}
	token := rest[1:]
	if strings.ContainsAny(token, " \t\"pP_") {
		return false
	}
	value, err := strconv.ParseFloat(token, 64)
	if err != nil {
		return false
	}
	if !hist {
		m := &dto.Metric{Label: labels}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			m.Counter = &dto.Counter{Value: &value}
		case dto.MetricType_GAUGE:
			m.Gauge = &dto.Gauge{Value: &value}
		default:
			m.Untyped = &dto.Untyped{Value: &value}
		}
		mf.Metric = append(mf.Metric, m)
		return true
	}
	bucket := !isCount && !isSum && strings.HasSuffix(name, "_bucket") && name != mf.GetName()
	if bucket != hasLE || name == mf.GetName() {
		return false
	}
	m := p.histogram(mf, labels)
	switch {
	case isCount:
		n, ok := count(value)
		if !ok {
			return false
		}
		m.Histogram.SampleCount = &n
	case isSum:
		m.Histogram.SampleSum = &value
	default:
		bound, err := strconv.ParseFloat(le, 64)
		if err != nil || strings.ContainsAny(le, "pP_") {
			return false
		}
		n, ok := count(value)
		if !ok {
			return false
		}
		m.Histogram.Bucket = append(m.Histogram.Bucket, &dto.Bucket{UpperBound: &bound, CumulativeCount: &n})
	}
	return true
}

// histogram returns the series of mf with labels (le aside), made the
// first time its labels are seen, with these labels, in their order.
func (p *strictParser) histogram(mf *dto.MetricFamily, labels []*dto.LabelPair) *dto.Metric {
	byKey := p.hists[mf]
	if byKey == nil {
		byKey = map[string]*dto.Metric{}
		p.hists[mf] = byKey
	}
	keys := make([]string, len(labels))
	for i, l := range labels {
		keys[i] = l.GetName() + "\xff" + l.GetValue()
	}
	sort.Strings(keys)
	key := strings.Join(keys, "\xfe")
	if m := byKey[key]; m != nil {
		return m
	}
	m := &dto.Metric{Label: labels, Histogram: &dto.Histogram{}}
	byKey[key] = m
	mf.Metric = append(mf.Metric, m)
	return m
}

// count is a histogram count as expfmt keeps it when it is a whole
// number that fits (not a float count, which parseStrict leaves to it).
func count(v float64) (uint64, bool) {
	if v < 0 || v >= 1<<63 || math.IsNaN(v) || v != math.Trunc(v) {
		return 0, false
	}
	return uint64(v), true
}

// legacyName reports whether s is a legacy metric name (metric: ':' too)
// or label name.
func legacyName(s string, metric bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || metric && c == ':' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}
