package load

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// failingSource answers with one snapshot and a failure whose message
// carries terminal escapes, as a hostile apiserver could send.
type failingSource struct{}

func (failingSource) Capture(context.Context, dump.CaptureOptions) (*dump.Capture, error) {
	return &dump.Capture{Snapshots: []*dump.Snapshot{{Instance: "a"}},
		Failures: []dump.InstanceError{{Instance: "b", Err: errors.New("evil\x1b[31mred\x07\nnext line")}}}, nil
}
func (failingSource) Describe() string { return "fake" }

// TestNotesSanitised: Load's notes are safe lines for a terminal.
func TestNotesSanitised(t *testing.T) {
	o := NewOptions(nil, Instances)
	o.Source = failingSource{}
	st, err := o.Load(context.Background(), Request{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Notes) == 0 {
		t.Fatal("no note of the failure")
	}
	for _, n := range st.Notes {
		if strings.ContainsAny(n, "\x1b\x07\n") {
			t.Errorf("note %q is not sanitised", n)
		}
	}
}

// TestStoreValidate: the store's flags are checked in Validate, before
// anything is read, with what Complete could not make of them.
func TestStoreValidate(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		set     func(*StoreOptions)
		beside  bool
		from    string
		wantErr string
	}{
		{"window", func(s *StoreOptions) { s.URL = "http://p:9090"; _ = s.Since.Set("1h") }, false, "", ""},
		{"since without a store", func(s *StoreOptions) { _ = s.Since.Set("1h") }, false, "", "--since reads the past from a store"},
		{"future", func(s *StoreOptions) { s.URL, s.Until = "http://p:9090", "2999-01-01T00:00:00Z" }, false, "", "in the future"},
		{"bad selector", func(s *StoreOptions) { s.URL, s.Selector = "http://p:9090", "cluster=prod" }, false, "", "--prometheus-selector"},
		{"bad URL", func(s *StoreOptions) { s.URL = "p:9090" }, false, "", "is not a URL"},
		{"store instead of a bundle", func(s *StoreOptions) { s.URL = "http://p:9090" }, false, "b.tar.gz", "--from and --apiserver-urls do not apply"},
		{"store beside a bundle", func(s *StoreOptions) { s.URL = "http://p:9090" }, true, "b.tar.gz", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions(nil, Store)
			o.From, o.StoreBeside = tt.from, tt.beside
			o.Source = failingSource{} // Complete builds nothing
			o.Store.Clock = clocktesting.NewFakePassiveClock(now)
			tt.set(o.Store)
			if err := o.Complete(); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			err := o.Validate()
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			if o.Store.Querier != nil {
				t.Errorf("Complete or Validate built the client")
			}
		})
	}
}
