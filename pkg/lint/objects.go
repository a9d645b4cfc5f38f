package lint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Objects is a set of APF configuration objects read from files.
type Objects struct {
	FlowSchemas    []*flowcontrolv1.FlowSchema
	PriorityLevels []*flowcontrolv1.PriorityLevelConfiguration
	// Skipped counts documents of other kinds (a configuration repository
	// usually holds more than APF objects).
	Skipped int
}

// Add appends o2's objects to o.
func (o *Objects) Add(o2 Objects) {
	o.FlowSchemas = append(o.FlowSchemas, o2.FlowSchemas...)
	o.PriorityLevels = append(o.PriorityLevels, o2.PriorityLevels...)
	o.Skipped += o2.Skipped
}

const flowcontrolGroup = "flowcontrol.apiserver.k8s.io"

type typeMeta struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Items      []rawJSON `json:"items"`
}

// rawJSON keeps a document or list item as raw JSON for a second, typed
// decoding pass.
type rawJSON []byte

// UnmarshalJSON keeps the raw bytes.
func (r *rawJSON) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// ParseObjects reads FlowSchemas and PriorityLevelConfigurations from a YAML
// or JSON stream (several documents, and List kinds, allowed). Documents of
// other kinds are skipped and counted. Unknown fields are errors, so a
// misspelt field is caught rather than silently defaulted. source names the
// input in error messages.
func ParseObjects(data []byte, source string) (Objects, error) {
	var out Objects
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 1; ; doc++ {
		var raw rawJSON
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return Objects{}, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		if err := parseDocument(raw, &out, 0); err != nil {
			return Objects{}, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
	}
}

func parseDocument(raw []byte, out *Objects, depth int) error {
	if depth > 4 {
		return fmt.Errorf("lists nested too deeply")
	}
	var tm typeMeta
	if err := yaml.Unmarshal(raw, &tm); err != nil {
		return fmt.Errorf("not a Kubernetes object: %w", err)
	}
	group, version, _ := strings.Cut(tm.APIVersion, "/")
	if !strings.Contains(tm.APIVersion, "/") {
		group, version = "", tm.APIVersion
	}
	if strings.HasSuffix(tm.Kind, "List") {
		for i, item := range tm.Items {
			if err := parseDocument(item, out, depth+1); err != nil {
				return fmt.Errorf("%s item %d: %w", tm.Kind, i, err)
			}
		}
		return nil
	}
	if tm.Kind != "FlowSchema" && tm.Kind != "PriorityLevelConfiguration" {
		out.Skipped++
		return nil
	}
	if group != flowcontrolGroup {
		out.Skipped++
		return nil
	}
	if version != "v1" {
		return fmt.Errorf("%s uses apiVersion %s; only %s/v1 is supported (convert it: the fields are the same from v1beta3 on)",
			tm.Kind, tm.APIVersion, flowcontrolGroup)
	}
	switch tm.Kind {
	case "FlowSchema":
		fs := &flowcontrolv1.FlowSchema{}
		if err := strictDecode(raw, fs); err != nil {
			return fmt.Errorf("FlowSchema %w", err)
		}
		if fs.Name == "" {
			return fmt.Errorf("FlowSchema without metadata.name")
		}
		out.FlowSchemas = append(out.FlowSchemas, fs)
	default:
		pl := &flowcontrolv1.PriorityLevelConfiguration{}
		if err := strictDecode(raw, pl); err != nil {
			return fmt.Errorf("PriorityLevelConfiguration %w", err)
		}
		if pl.Name == "" {
			return fmt.Errorf("PriorityLevelConfiguration without metadata.name")
		}
		out.PriorityLevels = append(out.PriorityLevels, pl)
	}
	return nil
}

// strictDecode decodes like the API server: field names are case-sensitive,
// and unknown or duplicate fields are errors (sigs.k8s.io/json.UnmarshalStrict).
func strictDecode(raw []byte, into any) error {
	strict, err := sigsjson.UnmarshalStrict(raw, into)
	if err != nil {
		return fmt.Errorf("is malformed: %w", err)
	}
	if len(strict) > 0 {
		var msgs []string
		for _, e := range strict {
			msgs = append(msgs, e.Error())
		}
		return fmt.Errorf("has %s (the API server would reject or drop it)", strings.Join(msgs, "; "))
	}
	return nil
}

// Overlay returns base with the objects of top replacing those of the same
// name and kind, and top's new objects added: what the cluster would hold
// after applying top.
func Overlay(baseFS []*flowcontrolv1.FlowSchema, basePL []*flowcontrolv1.PriorityLevelConfiguration, top Objects) ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	fsIdx := map[string]int{}
	var fss []*flowcontrolv1.FlowSchema
	for _, fs := range baseFS {
		fsIdx[fs.Name] = len(fss)
		fss = append(fss, fs)
	}
	for _, fs := range top.FlowSchemas {
		if i, ok := fsIdx[fs.Name]; ok {
			fss[i] = fs
			continue
		}
		fss = append(fss, fs)
	}
	plIdx := map[string]int{}
	var pls []*flowcontrolv1.PriorityLevelConfiguration
	for _, pl := range basePL {
		plIdx[pl.Name] = len(pls)
		pls = append(pls, pl)
	}
	for _, pl := range top.PriorityLevels {
		if i, ok := plIdx[pl.Name]; ok {
			pls[i] = pl
			continue
		}
		pls = append(pls, pl)
	}
	return fss, pls
}
