package metrics

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// expfmtFamilies is what ParseText gave before parseStrict: expfmt's
// families of body, or its error.
func expfmtFamilies(body []byte) (fams map[string]*dto.MetricFamily, err error) {
	defer func() {
		if r := recover(); r != nil {
			fams, err = nil, fmt.Errorf("expfmt panics: %v", r)
		}
	}()
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(bytes.NewReader(body))
}

// sameFamilies fails t unless got has the families of want, each equal.
func sameFamilies(t *testing.T, what string, got, want map[string]*dto.MetricFamily) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d families, expfmt %d", what, len(got), len(want))
	}
	for n, mf := range want {
		if !proto.Equal(mf, got[n]) {
			t.Fatalf("%s: family %s differs:\nstrict %v\nexpfmt %v", what, n, got[n], mf)
		}
	}
}

// metricsBodies are the /metrics bodies of testdata/metrics and
// testdata/field, filtered as a capture keeps them, and a generated one.
func metricsBodies(t *testing.T) map[string][]byte {
	t.Helper()
	bodies := map[string][]byte{"generated": genBody(1 << 20)}
	for _, dir := range []string{filepath.Join("..", "..", "testdata", "metrics"), filepath.Join("..", "..", "testdata", "field")} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".txt") {
				return err
			}
			b, err := os.ReadFile(p)
			if err == nil && bytes.Contains(b, []byte(FlowcontrolPrefix)) && !bytes.Contains(b, []byte("PriorityLevelName")) {
				bodies[p] = b
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return bodies
}

// TestParseStrictMatchesExpfmt checks that the kept text of every /metrics
// body in testdata that parseStrict reads (every scrape of
// testdata/metrics, so a capture takes the fast path) is read into
// expfmt's families.
func TestParseStrictMatchesExpfmt(t *testing.T) {
	bodies := metricsBodies(t)
	if len(bodies) < 10 {
		t.Fatalf("%d bodies: testdata moved?", len(bodies))
	}
	for name, body := range bodies {
		kept, err := FilterAPF(bytes.NewReader(body))
		if err != nil {
			continue // FilterAPF's tests cover its refusals
		}
		want, err := expfmtFamilies(kept)
		if err != nil {
			t.Errorf("%s: expfmt: %v", name, err)
			continue
		}
		got, ok := parseStrict(kept)
		if !ok {
			// Pastes of other forms (testdata/field: a Prometheus UI
			// table, with blanks after the commas and a tab before the
			// value) are expfmt's; a scrape as the apiserver serves it
			// never is.
			if !strings.Contains(name, "field") {
				t.Errorf("%s: parseStrict leaves the kept text to expfmt", name)
			}
			continue
		}
		sameFamilies(t, name, got, want)
	}
}

// FuzzParseStrictMatchesExpfmt checks that whatever parseStrict reads,
// expfmt reads the same families of, without an error.
func FuzzParseStrictMatchesExpfmt(f *testing.F) {
	for _, n := range []string{"modern-a.txt", "v1.20-shape.txt"} {
		kept, err := FilterAPF(bytes.NewReader(readFixture(f, n)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(kept)
	}
	for _, s := range []string{
		"# TYPE h histogram\nh_bucket{le=\"1\",a=\"x\"} 1\nh_bucket{a=\"x\",le=\"+Inf\"} 2\nh_sum{a=\"x\"} 3\nh_count{a=\"x\"} 2\n",
		"# HELP h_count a\n# TYPE h histogram\nh_count 1\nh_bucket{le=\"1\"} 1.5\n",
		"# TYPE c counter\nc{a=\"1\",} 1\nc{} 2\n# HELP c late\nc_count 3\n",
		"# TYPE g gauge\ng{a=\"1\",a=\"2\"} 1\ng NaN\ng +Inf\ng 0x1p3\ng 1_0\n",
		"x 1\n# TYPE x counter\n",
		"# HELP x  two spaces\n# HELP y tab\\n\nx{a=\"\\\"\"} 1\n",
		"# TYPE h histogram\nh{le=\"1\"} 1\nh_sum{le=\"1\"} 1\nh_bucket 1\n",
		"u 1 1700000000000\nu  2\nu{a=\"b\"}  3\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := parseStrict(body)
		if !ok {
			return
		}
		want, err := expfmtFamilies(body)
		if err != nil {
			t.Fatalf("parseStrict read %d families where expfmt fails: %v", len(got), err)
		}
		sameFamilies(t, "fuzz", got, want)
	})
}

// TestParseStrictMutations runs FuzzParseStrictMatchesExpfmt's check over
// windows of real scrapes' kept text with bytes of the format's syntax
// changed, dropped or added (a fixed seed: the same bodies each run), a
// histogram's TYPE line ahead of some: whatever parseStrict reads, expfmt
// reads the same.
func TestParseStrictMutations(t *testing.T) {
	var seeds [][]byte
	for _, n := range []string{"modern-a.txt", "v1.20-shape.txt", "v1.37.1-load.txt"} {
		k, err := FilterAPF(bytes.NewReader(readFixture(t, n)))
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, k)
	}
	alphabet := []byte("{}=\",_ \t\n#abcdelrsumtx019.+-\\pNInfHELPTYPEcounterhistogramgauge")
	r := rand.New(rand.NewSource(1))
	read := 0
	for i := 0; i < 5000; i++ {
		lines := bytes.SplitAfter(seeds[r.Intn(len(seeds))], []byte("\n"))
		from := r.Intn(len(lines))
		b := bytes.Join(lines[from:min(len(lines), from+1+r.Intn(12))], nil)
		for m := r.Intn(6); m > 0 && len(b) > 0; m-- {
			p := r.Intn(len(b))
			switch c := alphabet[r.Intn(len(alphabet))]; r.Intn(3) {
			case 0:
				b[p] = c
			case 1:
				b = append(b[:p], b[p+1:]...)
			default:
				b = append(b[:p], append([]byte{c}, b[p:]...)...)
			}
		}
		if r.Intn(4) == 0 {
			b = append([]byte("# TYPE "+RequestWaitDurationSecond+" histogram\n"), b...)
		}
		got, ok := parseStrict(b)
		if !ok {
			continue
		}
		read++
		want, err := expfmtFamilies(b)
		if err != nil {
			t.Fatalf("%q: parseStrict reads it, expfmt: %v", b, err)
		}
		sameFamilies(t, strconv.Quote(string(b)), got, want)
	}
	if read < 1000 {
		t.Fatalf("parseStrict read %d of 5000 bodies: the check checks little", read)
	}
}

// BenchmarkParseText parses the kept text of a real scrape under load
// through ParseText (parseStrict) and, in the same iteration, through
// expfmt as ParseText did before, and reports the ratio of their times.
func BenchmarkParseText(b *testing.B) {
	kept, err := FilterAPF(bytes.NewReader(readFixture(b, "v1.37.1-load.txt")))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(kept)))
	b.ReportAllocs()
	var strict, upstream time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := ParseText(kept, t0); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := expfmtFamilies(kept); err != nil {
			b.Fatal(err)
		}
		strict, upstream = strict+t1.Sub(t0), upstream+time.Since(t1)
	}
	b.ReportMetric(float64(strict.Microseconds())/float64(b.N), "parse-µs/op")
	b.ReportMetric(float64(upstream.Microseconds())/float64(b.N), "expfmt-µs/op")
	b.ReportMetric(float64(strict)/float64(upstream), "parse/expfmt")
}
