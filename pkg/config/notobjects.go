package config

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// A file that holds the objects' text but is not objects itself (a Helm
// or Go template whose {{ }} actions are not rendered, a shell script that
// applies them from a here-document) fails to decode at some document: the
// decoder's error ("invalid character '{' looking for beginning of object
// key string", or "not a Kubernetes object: text") does not say what the
// file is. unrenderedText names it, with the kinds in it, and says what
// to give instead; "" when the file is neither.

// templateAction is a Go template action as Helm writes them: "{{ .X }}",
// "{{- include ... }}", "{{ $v }}", "{{/* ... */}}".
var templateAction = regexp.MustCompile(`\{\{-?\s*(?:[.$]|/\*|include\b|define\b|if\b|range\b|end\b|template\b|toYaml\b|required\b|with\b|else\b)`)

// templateComment is a template comment, "{{/* ... */}}" or "{{- /* ... */ -}}",
// or an action that prints a raw string ("{{`{{ $labels.x }}`}}", as Helm
// charts keep Prometheus' own templates): each is one action, whatever it
// quotes.
var templateComment = regexp.MustCompile("(?s)\\{\\{-?\\s*(?:/\\*.*?\\*/|`[^`]*`)\\s*-?\\}\\}")

// hereDoc is a shell command that feeds a here-document to a command
// ("cat <<EOF | envsubst | kubectl apply -f -"), its delimiter quoted or
// not.
var hereDoc = regexp.MustCompile(`(?m)^[^\n#]*<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?[^\n]*$`)

// anyKind is the kind line of a document's object (at the start of a
// line, as a manifest's top level has it; a subject's "kind: Group" is
// indented).
var anyKind = regexp.MustCompile(`(?m)^kind:\s*["']?([A-Z][A-Za-z0-9]*)["']?\s*$`)

// shellVar is a variable a shell substitutes ("${NAME}", "$NAME").
var shellVar = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Z_][A-Z0-9_]*\b`)

func unrenderedText(data []byte) string {
	kinds := func(b []byte) string {
		n := map[string]int{}
		var order []string
		for _, m := range anyKind.FindAllSubmatch(b, -1) {
			if n[string(m[1])] == 0 {
				order = append(order, string(m[1]))
			}
			n[string(m[1])]++
		}
		var parts []string
		for _, k := range order {
			parts = append(parts, pluralKind(n[k], k))
		}
		if len(parts) == 0 {
			return ""
		}
		return strings.Join(parts, " and ")
	}
	if m := hereDoc.FindSubmatchIndex(data); m != nil {
		delim := string(data[m[2]:m[3]])
		body := data[m[1]:]
		if end := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(delim) + `\s*$`).FindIndex(body); end != nil {
			body = body[:end[0]]
			command := strings.TrimSpace(string(data[m[0]:m[1]]))
			what := kinds(body)
			if what == "" {
				what = "text"
			}
			vars := uniq(shellVar.FindAllString(string(body), -1))
			subst := ""
			if len(vars) > 0 {
				subst = ", with " + strings.Join(vars, ", ") + map[bool]string{true: " replaced by its value", false: " replaced by their values"}[len(vars) == 1] + " as the shell would (envsubst)"
			}
			return fmt.Sprintf("a shell script, not objects: its here-document (%s) holds %s: give the lines between <<%s and %s as a file%s", command, what, delim, delim, subst)
		}
	}
	// a comment is one action, whatever it quotes
	uncommented := templateComment.ReplaceAll(data, []byte("{{/**/}}"))
	if actions := templateAction.FindAll(uncommented, -1); len(actions) > 0 {
		what := kinds(uncommented)
		if what == "" {
			what = "text"
		}
		return fmt.Sprintf("a Helm (Go) template, not objects: %s with %d {{ }} %s not rendered: render it (helm template CHART, or the tool that includes it) and give its output", what, len(actions), map[bool]string{true: "action", false: "actions"}[len(actions) == 1])
	}
	return ""
}

func pluralKind(n int, kind string) string {
	if n == 1 {
		return "1 " + kind
	}
	return fmt.Sprintf("%d %ss", n, kind)
}

func uniq(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// isText reports whether b is worth diagnosing: not binary.
func isText(b []byte) bool { return !bytes.ContainsRune(b, 0) }
