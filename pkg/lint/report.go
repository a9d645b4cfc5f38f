package lint

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
)

// Report is what the SARIF and JUnit writers render.
type Report struct {
	Findings   []Finding
	Suppressed []Suppressed
	// Locations place objects of -f input (Objects.Locations).
	Locations map[ObjectRef]config.Location
	// FailOn is the least severe severity that fails the run.
	FailOn Severity
	// ToolVersion is the plugin's version.
	ToolVersion string
}

// Fails reports whether f reaches the fail-on threshold.
func (r Report) Fails(f Finding) bool { return f.Severity.Rank() <= r.FailOn.Rank() }

// location is where f is written: its first object placed in the input.
func (r Report) location(f Finding) (config.Location, bool) {
	for _, o := range f.Objects {
		if l, ok := r.Locations[o]; ok {
			return l, true
		}
	}
	return config.Location{}, false
}

// sarifLevel maps a severity to SARIF's result levels.
func sarifLevel(s Severity) string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	}
	return "note"
}

type sarifMessage struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifMessage   `json:"shortDescription"`
	FullDescription      sarifMessage   `json:"fullDescription"`
	HelpURI              string         `json:"helpUri"`
	Help                 sarifMessage   `json:"help"`
	DefaultConfiguration map[string]any `json:"defaultConfiguration"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
	Message          *sarifMessage  `json:"message,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation struct {
		URI string `json:"uri"`
	} `json:"artifactLocation"`
	Region struct {
		StartLine int `json:"startLine"`
	} `json:"region"`
}

type sarifLogical struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

type sarifSuppression struct {
	Kind          string `json:"kind"`
	Justification string `json:"justification"`
}

type sarifResult struct {
	RuleID       string             `json:"ruleId"`
	RuleIndex    int                `json:"ruleIndex"`
	Level        string             `json:"level"`
	Message      sarifMessage       `json:"message"`
	Locations    []sarifLocation    `json:"locations"`
	Suppressions []sarifSuppression `json:"suppressions,omitempty"`
}

// WriteSARIF writes r as a SARIF 2.1.0 log: one run, every rule in the
// driver, one result per finding (suppressed ones carry a suppression),
// located at the file and line of the first object placed in -f input and,
// logically, at every object.
func WriteSARIF(w io.Writer, r Report) error {
	all := Rules()
	index := map[string]int{}
	var rules []sarifRule
	for i, ru := range all {
		index[ru.ID] = i
		rules = append(rules, sarifRule{
			ID: ru.ID, Name: kebabToCamel(ru.ID),
			ShortDescription:     sarifMessage{Text: ru.Summary},
			FullDescription:      sarifMessage{Text: ru.Why},
			HelpURI:              ru.URL(),
			Help:                 sarifMessage{Text: ru.Fix + " " + ru.URL(), Markdown: RulePage(ru)},
			DefaultConfiguration: map[string]any{"level": sarifLevel(ru.Severity)},
		})
	}
	results := []sarifResult{}
	add := func(f Finding, sup *Suppressed) {
		res := sarifResult{RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevel(f.Severity),
			Message: sarifMessage{Text: f.Message + " Why: " + f.Why + " Fix: " + f.Fix}}
		loc := sarifLocation{}
		if l, ok := r.location(f); ok {
			loc.PhysicalLocation = &sarifPhysical{}
			loc.PhysicalLocation.ArtifactLocation.URI = filepath.ToSlash(l.File)
			loc.PhysicalLocation.Region.StartLine = l.Line
		}
		for _, o := range f.Objects {
			loc.LogicalLocations = append(loc.LogicalLocations, sarifLogical{Name: o.Name, FullyQualifiedName: o.String(), Kind: "object"})
		}
		res.Locations = []sarifLocation{loc}
		if sup != nil {
			kind := "external"
			if strings.HasPrefix(sup.By, "annotation") {
				kind = "inSource"
			}
			res.Suppressions = []sarifSuppression{{Kind: kind, Justification: sup.Reason}}
		}
		results = append(results, res)
	}
	for _, f := range r.Findings {
		add(f, nil)
	}
	for i := range r.Suppressed {
		add(r.Suppressed[i].Finding, &r.Suppressed[i])
	}
	version := r.ToolVersion
	if version == "" {
		version = "dev"
	}
	log := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name": "kubectl-apf lint", "informationUri": "https://github.com/kubectl-apf/kubectl-apf",
				"version": version, "rules": rules,
			}},
			"results": results,
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}

func kebabToCamel(id string) string {
	var b strings.Builder
	for _, p := range strings.Split(id, "-") {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes r as JUnit XML: a test suite per rule; a rule with no
// finding is one passing case, each finding a case of its own that fails
// when it reaches the threshold (below it, it passes with the finding in
// its output), and each suppressed finding a skipped case with its reason.
func WriteJUnit(w io.Writer, r Report) error {
	byRule := map[string][]junitCase{}
	caseOf := func(f Finding) junitCase {
		c := junitCase{Name: fmt.Sprintf("%s %s", f.Rule, refsKey(f.Objects)), Classname: "kubectl-apf.lint." + f.Rule}
		if l, ok := r.location(f); ok {
			c.File, c.Line = filepath.ToSlash(l.File), l.Line
		}
		return c
	}
	text := func(f Finding) string {
		return fmt.Sprintf("%s\nwhy: %s\nfix: %s\nsee: %s", f.Message, f.Why, f.Fix, f.URL)
	}
	for _, f := range r.Findings {
		c := caseOf(f)
		if r.Fails(f) {
			c.Failure = &junitFailure{Message: f.Message, Type: string(f.Severity), Text: text(f)}
		} else {
			c.SystemOut = string(f.Severity) + ": " + text(f)
		}
		byRule[f.Rule] = append(byRule[f.Rule], c)
	}
	for _, s := range r.Suppressed {
		c := caseOf(s.Finding)
		c.Skipped = &junitSkipped{Message: fmt.Sprintf("suppressed by %s: %s", s.By, s.Reason)}
		byRule[s.Rule] = append(byRule[s.Rule], c)
	}
	var out junitSuites
	for _, ru := range Rules() {
		cases := byRule[ru.ID]
		if len(cases) == 0 {
			cases = []junitCase{{Name: ru.ID, Classname: "kubectl-apf.lint." + ru.ID}}
		}
		s := junitSuite{Name: "kubectl-apf lint " + ru.ID, Tests: len(cases), Cases: cases}
		for _, c := range cases {
			if c.Failure != nil {
				s.Failures++
			}
			if c.Skipped != nil {
				s.Skipped++
			}
		}
		out.Suites = append(out.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
