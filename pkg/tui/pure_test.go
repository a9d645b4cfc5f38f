package tui

import (
	"reflect"
	"testing"
)

// TestViewComputesNothing: View draws what Update computed. After a
// selection moved past the rows that fit, a sort, a filter and the
// drill-down, drawing a frame changes nothing of the model but the
// selection it shows (a level that is gone becomes the first row drawn),
// and drawing it again changes nothing at all and gives the same frame.
func TestViewComputesNothing(t *testing.T) {
	for _, tt := range []struct {
		name string
		keys []string
	}{
		{"scrolled", []string{"down", "down", "down", "down", "down", "down", "down", "down", "down"}},
		{"sorted and filtered", []string{"s", "s", "/", "l", "o", "a", "d", "enter"}},
		{"drill-down", []string{"down", "down", "enter"}},
		{"selection gone", []string{"down", "down", "/", "^", "w", "enter"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := fixedModel(t, rejectingFixture(), 80, 14, nil)
			m.Update(refreshMsg{Refresh: Refresh{At: fixtureAt, Capture: rejectingFixture().capture(t), Requests: 5}})
			press(m, tt.keys...)
			table, drill := m.table, m.drill
			first := content(m)
			table.cursor = m.table.cursor // the one write: the selection shown
			if !reflect.DeepEqual(table, m.table) {
				t.Errorf("the first View changed the table:\nbefore %+v\nafter  %+v", table, m.table)
			}
			if !reflect.DeepEqual(drill, m.drill) {
				t.Errorf("the first View changed the drill-down")
			}
			table = m.table
			if second := content(m); second != first {
				t.Errorf("a second View drew another frame:\n%s\n---\n%s", first, second)
			}
			if !reflect.DeepEqual(table, m.table) || !reflect.DeepEqual(drill, m.drill) {
				t.Errorf("a second View changed the model")
			}
		})
	}
}
