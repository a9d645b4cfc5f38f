package main

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

// printObject prints a command's report v: its text (the default format,
// "" or "table") by text, JSON indented by two spaces, YAML, or any other -o
// of package output (jsonpath, go-template) over the same JSON.
func printObject(w io.Writer, f *output.Flags, v any, text func(io.Writer) error) error {
	own, ok := f.Own()
	switch {
	case !ok:
		return f.Print(w, v)
	case own == "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case own == "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding YAML: %w", err)
		}
		_, err = w.Write(b)
		return err
	}
	return text(w)
}
