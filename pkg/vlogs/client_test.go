package vlogs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestStoreDeadline: VictoriaLogs stops a query at the lower of its
// -search.maxQueryDuration and the timeout argument, and answers 503 with
// a message that names only the former (app/vlselect/main.go,
// logRequestErrorIfNeeded; the body below is the one a 20-million-event
// day gave). Raising --victorialogs-timeout alone does not help when the
// store's limit is the lower: the line names both.
func TestStoreDeadline(t *testing.T) {
	body := `remoteAddr: "127.0.0.1:46510"; requestURI: /select/logsql/query?query=_time%3A%5B2026-11-23T00%3A00%3A00Z&timeout=10m0s; the request couldn't be executed in 30.050 seconds; possible solutions: to increase -search.maxQueryDuration=30s; to pass bigger value to 'timeout' query arg`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, body, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c, err := New(Options{URL: srv.URL, Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Query(context.Background(), "*", func([]byte) error { return nil })
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"timed out in the store", "-search.maxQueryDuration=30s", "--victorialogs-timeout 10m0s", "raise the lower one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("not one line: %q", err)
	}
}
