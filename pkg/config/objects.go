package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	// Converted says which objects were read from a beta version and
	// converted to v1 (or had a namespace cleared), one line each, for the
	// user to know.
	Converted []string
	// Callbacks are the APIServices and webhooks of the input (counted in
	// Skipped too); ResolvedCallbacks gives their service accounts from the
	// Services and workloads the input also holds.
	Callbacks []Callback
	services  []service
	workloads []workload
	// Locations are where the objects are written, for SARIF.
	Locations map[ObjectRef]Location
}

// Len is the number of APF objects.
func (o Objects) Len() int { return len(o.FlowSchemas) + len(o.PriorityLevels) }

// Add appends o2's objects to o.
func (o *Objects) Add(o2 Objects) {
	o.FlowSchemas = append(o.FlowSchemas, o2.FlowSchemas...)
	o.PriorityLevels = append(o.PriorityLevels, o2.PriorityLevels...)
	o.Skipped += o2.Skipped
	o.Converted = append(o.Converted, o2.Converted...)
	o.Callbacks = append(o.Callbacks, o2.Callbacks...)
	o.services = append(o.services, o2.services...)
	o.workloads = append(o.workloads, o2.workloads...)
	for k, v := range o2.Locations {
		if o.Locations == nil {
			o.Locations = map[ObjectRef]Location{}
		}
		o.Locations[k] = v
	}
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
// misspelt field is caught rather than silently defaulted. Objects of
// flowcontrol v1alpha1, v1beta1, v1beta2 and v1beta3 are converted to v1 as the server
// does (and listed in Converted). Every object is checked with
// kube-apiserver's validation: one the server would reject is an error, not
// a configuration to reason about (a metadata.namespace, which the server
// clears on these cluster-scoped objects, is dropped with a note). source
// names the input in error messages.
func ParseObjects(data []byte, source string) (Objects, error) {
	out := Objects{Locations: locate(data, source)}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 1; ; doc++ {
		var raw rawJSON
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return Objects{}, documentError(data, source, doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		if err := parseDocument(raw, &out, 0, source, typeMeta{}); err != nil {
			return Objects{}, documentError(data, source, doc, err)
		}
	}
}

// documentError is the error of document doc of data: what the file is
// when it is the objects' text unrendered (unrenderedText), else the
// document's own error.
func documentError(data []byte, source string, doc int, err error) error {
	if isText(data) {
		if why := unrenderedText(data); why != "" {
			return fmt.Errorf("%s is %s", source, why)
		}
	}
	return fmt.Errorf("%s: document %d: %w", source, doc, err)
}

// parseDocument reads one document, or one item of a list. list is the
// type of the list the item is in (none for a document): the items of a
// typed list (FlowSchemaList, as kube-apiserver answers a LIST and a
// bundle keeps it) carry no kind and apiVersion of their own: their type
// is the list's item type, FlowSchema of a FlowSchemaList of the list's
// apiVersion. The items of a kind: List carry their own.
func parseDocument(raw []byte, out *Objects, depth int, source string, list typeMeta) error {
	if depth > 4 {
		return fmt.Errorf("lists nested too deeply")
	}
	var tm typeMeta
	if err := yaml.Unmarshal(raw, &tm); err != nil {
		return notAnObject(raw)
	}
	if item, typed := strings.CutSuffix(list.Kind, "List"); typed && item != "" {
		if tm.Kind == "" {
			tm.Kind = item
		}
		if tm.APIVersion == "" {
			tm.APIVersion = list.APIVersion
		}
	}
	group, version, _ := strings.Cut(tm.APIVersion, "/")
	if !strings.Contains(tm.APIVersion, "/") {
		group, version = "", tm.APIVersion
	}
	if strings.HasSuffix(tm.Kind, "List") {
		for i, item := range tm.Items {
			if err := parseDocument(item, out, depth+1, source, typeMeta{APIVersion: tm.APIVersion, Kind: tm.Kind}); err != nil {
				return fmt.Errorf("%s item %d: %w", tm.Kind, i, err)
			}
		}
		return nil
	}
	if tm.Kind != "FlowSchema" && tm.Kind != "PriorityLevelConfiguration" {
		parseCallbackObject(raw, group, tm.Kind, out)
		out.Skipped++
		return nil
	}
	if group != flowcontrolGroup {
		out.Skipped++
		return nil
	}
	var obj any
	switch version {
	case "v1":
		if tm.Kind == "FlowSchema" {
			obj = &flowcontrolv1.FlowSchema{}
		} else {
			obj = &flowcontrolv1.PriorityLevelConfiguration{}
		}
		if err := strictDecode(raw, obj); err != nil {
			return fmt.Errorf("%s %w", tm.Kind, err)
		}
	default:
		var err error
		if obj, err = convertToV1(raw, tm.Kind, version); err != nil {
			return fmt.Errorf("%s uses apiVersion %s, which this plugin does not read (%s/%v): %w", tm.Kind, tm.APIVersion, flowcontrolGroup, servedVersions, err)
		}
	}
	sharesField := ""
	if version == "v1alpha1" || version == "v1beta1" || version == "v1beta2" {
		sharesField = "assuredConcurrencyShares"
	}
	// FlowSchemas and PriorityLevelConfigurations are cluster-scoped:
	// kube-apiserver clears a metadata.namespace before it validates the
	// object (k8s.io/apiserver pkg/registry/rest/create.go BeforeCreate,
	// meta.go EnsureObjectNamespaceMatchesRequestNamespace), so operators'
	// manifests that carry one are applied as if they did not.
	if m, ok := obj.(interface {
		GetNamespace() string
		GetName() string
		SetNamespace(string)
	}); ok && m.GetNamespace() != "" {
		out.Converted = append(out.Converted, fmt.Sprintf("note: %s: %s %s has metadata.namespace %q, which kube-apiserver clears on a cluster-scoped object",
			source, tm.Kind, m.GetName(), m.GetNamespace()))
		m.SetNamespace("")
	}
	var name string
	var errs field.ErrorList
	switch o := obj.(type) {
	case *flowcontrolv1.FlowSchema:
		if o.Name == "" {
			return fmt.Errorf("FlowSchema without metadata.name")
		}
		name, errs = o.Name, ValidateFlowSchema(o)
		if len(errs) == 0 {
			out.FlowSchemas = append(out.FlowSchemas, o)
		}
	case *flowcontrolv1.PriorityLevelConfiguration:
		if o.Name == "" {
			return fmt.Errorf("PriorityLevelConfiguration without metadata.name")
		}
		name, errs = o.Name, ValidatePriorityLevel(o, sharesField)
		if len(errs) == 0 {
			out.PriorityLevels = append(out.PriorityLevels, o)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s %s is invalid (kube-apiserver would reject it): %s", tm.Kind, name, errs.ToAggregate().Error())
	}
	if version != "v1" {
		out.Converted = append(out.Converted, fmt.Sprintf("note: %s: %s %s converted from %s to %s/v1 as kube-apiserver does%s",
			source, tm.Kind, name, tm.APIVersion, flowcontrolGroup, sharesNote(version, tm.Kind)))
	}
	return nil
}

func sharesNote(version, kind string) string {
	if kind != "PriorityLevelConfiguration" {
		return ""
	}
	switch version {
	case "v1alpha1", "v1beta1", "v1beta2":
		return " (assuredConcurrencyShares is nominalConcurrencyShares in v1)"
	}
	return ""
}

// strictDecode decodes like the API server: field names are case-sensitive,
// and unknown or duplicate fields are errors (sigs.k8s.io/json.UnmarshalStrict).
func strictDecode(raw []byte, into any) error {
	strict, err := sigsjson.UnmarshalStrict(raw, into)
	if err != nil {
		return fmt.Errorf("is malformed: %s", plainDecodeError(err))
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

// RequireObjects is the one rule for an -f argument (a file, a directory or
// stdin) that holds no FlowSchema or PriorityLevelConfiguration: it is an
// error, in every command, rather than a silently empty change.
func RequireObjects(source string, o Objects) error {
	if o.Len() > 0 {
		return nil
	}
	if o.Skipped > 0 {
		return fmt.Errorf("-f %s holds no FlowSchema or PriorityLevelConfiguration (%d other %s): nothing to apply", source, o.Skipped, map[bool]string{true: "object", false: "objects"}[o.Skipped == 1])
	}
	return fmt.Errorf("-f %s holds no FlowSchema or PriorityLevelConfiguration: nothing to apply", source)
}

// notAnObject says what a document that is no object with apiVersion and
// kind is, without the decoder's Go type names: above all the table that
// "kubectl get flowschemas" prints, which users give for its objects.
func notAnObject(raw []byte) error {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if isGetTable(text) {
			return fmt.Errorf(`a "kubectl get" table, not objects: give the objects themselves, as "kubectl get flowschemas,prioritylevelconfigurations -o yaml" prints them`)
		}
		return fmt.Errorf("not a Kubernetes object: text, where a YAML or JSON object with apiVersion and kind is expected")
	}
	what := "a value"
	var v any
	if json.Unmarshal(raw, &v) == nil {
		switch v.(type) {
		case []any:
			what = "a list"
		case float64:
			what = "a number"
		case bool:
			what = "true or false"
		case map[string]any:
			return fmt.Errorf("not a Kubernetes object: its apiVersion, kind or items is not of the right form (apiVersion and kind are strings, items a list)")
		}
	}
	return fmt.Errorf("not a Kubernetes object: %s, where a YAML or JSON object with apiVersion and kind is expected", what)
}

// getTableHeader is the header of a "kubectl get" table: NAME, then
// upper-case column names. YAML folds the lines of a plain text document
// into one, so it is looked for among the words.
var getTableHeader = regexp.MustCompile(`(^|\s)NAME(\s+[A-Z][A-Z0-9-]+)+(\s|$)`)

func isGetTable(text string) bool { return getTableHeader.MatchString(text) }

// goTypeError is the decoder's message for a value of the wrong type.
var goTypeError = regexp.MustCompile(`json: cannot unmarshal (\w+) into Go (?:struct field \w+\.(\S+)|value) of type (\S+)`)

// plainDecodeError rewrites the decoder's "cannot unmarshal X into Go
// struct field F of type T" as the field and the kinds of value, the way a
// manifest's author reads them.
func plainDecodeError(err error) string {
	m := goTypeError.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	where := "the object"
	if m[2] != "" {
		where = m[2]
	}
	return fmt.Sprintf("%s: %s where %s is expected", where, jsonValueKind(m[1]), goKind(m[3]))
}

func jsonValueKind(k string) string {
	switch k {
	case "array":
		return "a list"
	case "object":
		return "a mapping"
	case "bool":
		return "true or false"
	}
	return "a " + k
}

func goKind(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), strings.HasPrefix(t, "float"):
		return "a number"
	}
	return "a mapping"
}

// CleanYAML writes an object as YAML for a user to apply, without the
// empty status and creationTimestamp that the API types always serialize
// (explain's advice, tune's candidates: "status: {}" on each).
func CleanYAML(obj any) (string, error) {
	j, err := yaml.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("writing YAML: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(j, &m); err != nil {
		return "", fmt.Errorf("writing YAML: %w", err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("writing YAML: %w", err)
	}
	return string(out), nil
}
