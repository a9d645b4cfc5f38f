package main

import (
	"io"

	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

// printObject prints a command's report v in the -o format of f (see
// output.Flags.PrintObject): text prints every format of the command's own
// other than json and yaml.
func printObject(w io.Writer, f *output.Flags, v any, text func(io.Writer) error) error {
	return f.PrintObject(w, v, f.Text(text))
}
