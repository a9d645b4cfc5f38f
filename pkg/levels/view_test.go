package levels

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

// viewRow is a row with figures present and absent, rejections by two
// reasons and the inputs of its figures.
func viewRow() Row {
	r := Empty("apiserver-0", "workload-low")
	r.NominalLimit, r.CurrentLimit, r.SeatsInUse, r.Utilisation = 24, 30, 15, 0.5
	r.Waiting, r.Executing = 3, 12
	r.HasRates, r.DispatchedPerSec = true, 2.5
	r.RejectedPerSec = map[string]float64{"time-out": 0.25, "queue-full": 1}
	r.RejectedTotal = 1.25
	r.WaitP99 = math.Inf(1)
	r.MeanUtilisation = 0.25
	r.From = map[string]string{FigureWaiting: FromRequestDump, FigureNominalLimit: FromMetrics}
	return r
}

// TestViewJSON: a view writes its fields in their order under their JSON
// names; an absent figure (NaN, or an infinity, which JSON lacks) is null,
// the rejections and the inputs are objects sorted by key, and left out
// when there are none. The expected bytes are written by hand from the
// row above.
func TestViewJSON(t *testing.T) {
	r := viewRow()
	tests := []struct {
		name   string
		row    Row
		fields []Column
		want   string
	}{
		{"top", r, TopFields, `{"instance":"apiserver-0","level":"workload-low","nominalLimit":24,"currentLimit":30,"seatsInUse":15,` +
			`"utilisation":0.5,"waitingRequests":3,"waitingSeats":null,"executingRequests":12,"hasRates":true,"dispatchedPerSecond":2.5,` +
			`"rejectedPerSecond":{"queue-full":1,"time-out":0.25},"waitP99Seconds":null,"meanUtilisation":0.25,"fullFraction":null}`},
		{"capacity now", r, NowFields, `{"instance":"apiserver-0","level":"workload-low","waiting":3,"executing":12,"seatsInUse":15,` +
			`"nominalLimit":24,"currentLimit":30,"from":{"nominalLimit":"metrics","waiting":"dump_requests"}}`},
		{"top, nothing known", Empty("", "exempt"), TopFields, `{"instance":"","level":"exempt","nominalLimit":null,"currentLimit":null,` +
			`"seatsInUse":null,"utilisation":null,"waitingRequests":null,"waitingSeats":null,"executingRequests":null,"hasRates":false,` +
			`"dispatchedPerSecond":null,"waitP99Seconds":null,"meanUtilisation":null,"fullFraction":null}`},
		{"capacity now, nothing known", Empty("b", "exempt"), NowFields, `{"instance":"b","level":"exempt","waiting":null,"executing":null,` +
			`"seatsInUse":null,"nominalLimit":null,"currentLimit":null}`},
		{"no fields", r, nil, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(Views([]Row{tt.row}, tt.fields))
			if err != nil {
				t.Fatal(err)
			}
			if want := "[" + tt.want + "]"; string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestViewNotReadBack: decoding a view fails with ErrViewOnly, rather
// than leaving a row with zeros for its absent figures.
func TestViewNotReadBack(t *testing.T) {
	var vs []View
	if err := json.Unmarshal([]byte(`[{"level":"exempt","waitingRequests":null}]`), &vs); !errors.Is(err, ErrViewOnly) {
		t.Errorf("decoding a view: %v, want %v", err, ErrViewOnly)
	}
}

// TestColumnCatalogue: every field of a view's JSON has a name no other
// field of it has; every column of a table has a title; Named renames a
// copy and leaves the catalogue's column as it was.
func TestColumnCatalogue(t *testing.T) {
	for name, fields := range map[string][]Column{"TopFields": TopFields, "NowFields": NowFields} {
		seen := map[string]bool{}
		for _, c := range fields {
			if c.JSON == "" || seen[c.JSON] {
				t.Errorf("%s: field %q is empty or named twice", name, c.JSON)
			}
			seen[c.JSON] = true
		}
	}
	for name, cols := range map[string][]Column{"TopColumns": TopColumns, "NowColumns": NowColumns} {
		for _, c := range cols {
			if c.Title == "" || (c.Kind != Name && c.Figure == nil) {
				t.Errorf("%s: column %q has no title or no figure", name, c.JSON)
			}
		}
	}
	if c := ColWaiting.Named("waiting"); c.JSON != "waiting" || ColWaiting.JSON != "waitingRequests" || c.Title != ColWaiting.Title {
		t.Errorf("Named: %q from %q (title %q)", c.JSON, ColWaiting.JSON, c.Title)
	}
}
