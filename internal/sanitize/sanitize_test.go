package sanitize

import "testing"

func TestLineAndText(t *testing.T) {
	in := "a\tb\x1b[31mc\x07\nd\u0085e\x7f"
	if got, want := Line(in), "a b?[31mc??d?e?"; got != want {
		t.Errorf("Line(%q) = %q, want %q", in, got, want)
	}
	if got, want := Text(in), "a\tb?[31mc?\nd?e?"; got != want {
		t.Errorf("Text(%q) = %q, want %q", in, got, want)
	}
	if got := Line("żółw ünïcode"); got != "żółw ünïcode" {
		t.Errorf("printable text changed: %q", got)
	}
}

func FuzzLine(f *testing.F) {
	f.Add("evil\x1b]0;title\x07")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range Line(s) {
			if isControl(r) || r == '\t' {
				t.Fatalf("Line(%q) kept control character %U", s, r)
			}
		}
	})
}
