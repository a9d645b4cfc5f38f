package config

import (
	"regexp"
	"strings"
)

// Location is where an object of -f input is written: its file and the
// line of its metadata.name (1-based), for SARIF and editors.
type Location struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

var (
	kindLine     = regexp.MustCompile(`^kind:\s*["']?([A-Za-z]+)["']?\s*(#.*)?$`)
	metadataLine = regexp.MustCompile(`^metadata:\s*(\{.*)?$`)
	inlineName   = regexp.MustCompile(`[{,]\s*name:\s*["']?([^"',}\s]+)`)
	nameLine     = regexp.MustCompile(`^\s+name:\s*["']?([^"'\s#]+)["']?\s*(#.*)?$`)
	jsonName     = regexp.MustCompile(`"name"\s*:\s*"([^"]+)"`)
	jsonKind     = regexp.MustCompile(`"kind"\s*:\s*"(FlowSchema|PriorityLevelConfiguration)"`)
)

// locate finds the line of each FlowSchema's and PriorityLevelConfiguration's
// metadata.name in data: in YAML by document (kind: at the top level, name:
// under metadata:), in JSON by the first "name" after each "kind". An
// object it cannot place is left out.
func locate(data []byte, file string) map[ObjectRef]Location {
	out := map[ObjectRef]Location{}
	lines := strings.Split(string(data), "\n")
	kind, inMeta, metaIndent := "", false, -1
	var pending *ObjectRef
	pendingLine := 0
	flush := func() {
		if pending != nil && kind != "" {
			ref := ObjectRef{Kind: kind, Name: pending.Name}
			if _, ok := out[ref]; !ok {
				out[ref] = Location{File: file, Line: pendingLine}
			}
		}
		pending, kind, inMeta, metaIndent = nil, "", false, -1
	}
	jsonKindSeen := ""
	for i, l := range lines {
		n := i + 1
		if strings.HasPrefix(l, "---") && strings.TrimSpace(strings.TrimPrefix(l, "---")) == "" {
			flush()
			continue
		}
		if m := jsonKind.FindStringSubmatch(l); m != nil {
			jsonKindSeen = m[1]
		}
		if jsonKindSeen != "" && strings.Contains(l, `"name"`) {
			if m := jsonName.FindStringSubmatch(l); m != nil && !strings.HasPrefix(strings.TrimSpace(l), `"priorityLevelConfiguration"`) {
				ref := ObjectRef{Kind: jsonKindSeen, Name: m[1]}
				if _, ok := out[ref]; !ok {
					out[ref] = Location{File: file, Line: n}
				}
				jsonKindSeen = ""
			}
		}
		if m := kindLine.FindStringSubmatch(l); m != nil {
			kind = m[1]
			continue
		}
		if m := metadataLine.FindStringSubmatch(l); m != nil {
			inMeta, metaIndent = true, -1
			if m2 := inlineName.FindStringSubmatch(l); m2 != nil {
				pending, pendingLine = &ObjectRef{Name: m2[1]}, n
				inMeta = false
			}
			continue
		}
		if inMeta && pending == nil {
			indent := len(l) - len(strings.TrimLeft(l, " "))
			if metaIndent < 0 && strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#") {
				metaIndent = indent
			}
			if m := nameLine.FindStringSubmatch(l); m != nil && indent == metaIndent {
				pending, pendingLine = &ObjectRef{Name: m[1]}, n
				continue
			}
			if l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "#") {
				inMeta = false
			}
		}
	}
	flush()
	return out
}
