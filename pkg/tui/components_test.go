package tui

import "testing"

// The components on their own, without the shell: what each Update does
// with a key and hands back.

func TestLineInput(t *testing.T) {
	var in lineInput
	in.open(inputJump, "")
	for _, k := range []string{"n", "ö", "d", "backspace"} {
		if _, _, done := in.Update(keyPress(k)); done {
			t.Fatalf("%q ended the line", k)
		}
	}
	if got := in.View(40); got != padRight("jump to level (enter, esc cancels): :nö█", 40) {
		t.Errorf("View = %q", got)
	}
	mode, text, done := in.Update(keyPress("enter"))
	if !done || mode != inputJump || text != "nö" || in.active() {
		t.Errorf("enter: mode %v, text %q, done %v, still open %v; want jump, \"nö\", done, closed", mode, text, done, in.active())
	}
	in.open(inputFilter, "work")
	if _, _, done := in.Update(keyPress("esc")); done || in.active() || in.buf != "" {
		t.Errorf("esc: done %v, open %v, line %q; want a closed, empty line and nothing typed", done, in.active(), in.buf)
	}
}

func TestDrillDownNeedsALevel(t *testing.T) {
	keys := DefaultKeyMap(false)
	var d drillDown
	if !d.Update(keyPress("enter"), &keys, "") || d.open {
		t.Errorf("enter without a level selected: open %v; want the key taken and the drill-down closed", d.open)
	}
	if d.Update(keyPress("enter"), &keys, "workload-low"); !d.open {
		t.Error("enter on a level did not open the drill-down")
	}
	if d.Update(keyPress("down"), &keys, "workload-low") {
		t.Error("the drill-down took down, which is the table's")
	}
	if d.Update(keyPress("esc"), &keys, "workload-low"); d.open {
		t.Error("esc did not close the drill-down")
	}
}
