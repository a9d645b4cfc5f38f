package promfetch

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The client POSTs queries as forms; the store (and the apiserver's service
// proxy) only ever sees GETs with the same parameters and the headers.
func TestGetOnly(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" "+r.Header.Get("X-Scope-OrgID")+" "+r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"priority_level":"a"},"values":[[1700000000,"1"],[1700000060,"+Inf"]]}]}}`))
	}))
	defer srv.Close()
	c, err := New(Options{URL: srv.URL + "/prometheus", Username: "u", Password: "p", Headers: map[string]string{"X-Scope-OrgID": "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := c.QueryRange(t.Context(), `up{a="b"}`, timeAt(1700000000), timeAt(1700000060), 60e9)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || !strings.HasPrefix(seen[0], "GET /prometheus/api/v1/query_range?") || !strings.Contains(seen[0], "query=up%7Ba%3D%22b%22%7D") ||
		!strings.HasSuffix(seen[0], " t1 Basic dTpw") {
		t.Errorf("requests: %q", seen)
	}
	if len(ss) != 1 || ss[0].Labels["priority_level"] != "a" || len(ss[0].Points) != 2 || ss[0].Points[0].V != 1 || ss[0].Points[1].V == ss[0].Points[1].V {
		t.Errorf("series: %+v (an infinity becomes NaN)", ss)
	}
	if c.Stats.Queries.Load() != 1 || c.Stats.Bytes.Load() == 0 {
		t.Errorf("stats: %d queries, %d bytes", c.Stats.Queries.Load(), c.Stats.Bytes.Load())
	}
}

func timeAt(sec int64) time.Time { return time.Unix(sec, 0).UTC() }
