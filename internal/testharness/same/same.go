// Package same compares slices of values, element by element, for the tests
// that read values back from an encoding (the workload tapes of
// pkg/engine/workload and pkg/input). It imports none of the module's
// packages, so that a package's own tests can use it on its types.
package same

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// Elements fails t unless want and got hold the same elements (Diff).
func Elements[T any](t testing.TB, what string, want, got []T) {
	t.Helper()
	if d := Diff(what, want, got); d != "" {
		t.Fatal(d)
	}
}

var timeType = reflect.TypeFor[time.Time]()

// Diff says how got differs from want, at the first element that differs
// ("" when none does): the elements are compared by reflect.DeepEqual, but
// for the exported time.Time fields of a struct, which are compared as
// instants in locations of the same name (a time read back from an encoding
// has a *time.Location of its own). what names an element in the message.
func Diff[T any](what string, want, got []T) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d %ss, want %d", len(got), what, len(want))
	}
	for i := range want {
		x, y := want[i], got[i]
		vx, vy := reflect.ValueOf(&x).Elem(), reflect.ValueOf(&y).Elem()
		if vx.Kind() == reflect.Struct {
			for f := range vx.NumField() {
				if sf := vx.Type().Field(f); !sf.IsExported() || sf.Type != timeType {
					continue
				}
				a, b := vx.Field(f).Interface().(time.Time), vy.Field(f).Interface().(time.Time)
				if !a.Equal(b) || a.Location().String() != b.Location().String() {
					return fmt.Sprintf("%s %d: %s %v, want %v", what, i, vx.Type().Field(f).Name, b, a)
				}
				vx.Field(f).Set(reflect.Zero(timeType))
				vy.Field(f).Set(reflect.Zero(timeType))
			}
		}
		if !reflect.DeepEqual(x, y) {
			return fmt.Sprintf("%s %d:\n got %+v\nwant %+v", what, i, y, x)
		}
	}
	return ""
}
