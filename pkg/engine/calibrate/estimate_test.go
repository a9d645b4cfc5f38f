package calibrate

import (
	"reflect"
	"testing"
)

// TestEstimatorsRunInTheOrderTheyNeed: the composition runs each estimator
// once, after those whose models it reads, in the order of their Kinds
// (which the Kind constants document): the pass's estimators, with the
// seat-time check after the levels' own figures and the server's summary
// of them after it, then those over the prepared workload.
func TestEstimatorsRunInTheOrderTheyNeed(t *testing.T) {
	want := []Kind{KindThreshold, KindOverheads, KindCFS, KindSeatTime, KindServerOverhead, KindAuditWaits, KindMeasured, KindShared}
	var got []Kind
	for _, e := range append(append([]estimator{}, passEstimators...), workloadEstimators...) {
		got = append(got, e.kind)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the estimators run as %v, want %v", got, want)
	}
}

// TestReportCarriesNoWorkingState: the report is a plain value, every
// field of it exported (and so in the JSON simulate returns); the state
// Apply and the replay's servers read is Result's alone.
func TestReportCarriesNoWorkingState(t *testing.T) {
	rt := reflect.TypeFor[Report]()
	for i := range rt.NumField() {
		if f := rt.Field(i); !f.IsExported() {
			t.Errorf("Report carries %s, which is not in the report", f.Name)
		}
	}
	if _, ok := reflect.TypeFor[Result]().FieldByName("working"); !ok {
		t.Errorf("Result does not carry the working state")
	}
}
