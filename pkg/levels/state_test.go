package levels

import (
	"math"
	"reflect"
	"testing"
)

// stateNames are the schema's names of the row's figures where they
// differ.
var stateNames = map[string]string{"WaitP99Seconds": "WaitP99"}

// TestStateCarriesEveryFigure: each figure of the schema's level state
// (every pointer field of rejections.LevelState) is the row's figure of
// the same name, nil where the row's is NaN, so a figure added to the
// schema without its row counterpart, or copied from the wrong one, fails.
func TestStateCarriesEveryFigure(t *testing.T) {
	var r Row
	rv := reflect.ValueOf(&r).Elem()
	st := reflect.TypeOf(r.State())
	figures := 0
	for i := range st.NumField() {
		f := st.Field(i)
		if f.Type.Kind() != reflect.Pointer {
			continue
		}
		name := f.Name
		if n, ok := stateNames[name]; ok {
			name = n
		}
		rf := rv.FieldByName(name)
		if !rf.IsValid() || rf.Kind() != reflect.Float64 {
			t.Errorf("rejections.LevelState.%s has no float64 %s in levels.Row", f.Name, name)
			continue
		}
		figures++
		rf.SetFloat(float64(100 + i))
	}
	r.From = map[string]string{"currentLimit": "metrics"}
	state := r.State()
	got := reflect.ValueOf(state)
	for i := range st.NumField() {
		if f := got.Field(i); f.Kind() == reflect.Pointer {
			if f.IsNil() || f.Elem().Float() != float64(100+i) {
				t.Errorf("State().%s = %v, want %d", st.Field(i).Name, f, 100+i)
			}
		}
	}
	if figures < 9 {
		t.Errorf("%d figures found in rejections.LevelState, want the 9 of levels.Row", figures)
	}
	r.From["currentLimit"] = "changed"
	if state.From["currentLimit"] != "metrics" {
		t.Errorf("State().From shares the row's map")
	}
	nan := Row{NominalLimit: math.NaN(), CurrentLimit: math.NaN(), SeatsInUse: math.NaN(), Waiting: math.NaN(), WaitingSeats: math.NaN(),
		Executing: math.NaN(), WaitP99: math.NaN(), MeanUtilisation: math.NaN(), FullFraction: math.NaN()}
	ns := reflect.ValueOf(nan.State())
	for i := range st.NumField() {
		if f := ns.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			t.Errorf("State().%s of a NaN figure = %v, want nil (absent)", st.Field(i).Name, f.Elem())
		}
	}
}
