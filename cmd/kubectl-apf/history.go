package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// terminalWidth is the width of w when it is a terminal, else 100.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 40 {
			return width
		}
	}
	return 100
}
