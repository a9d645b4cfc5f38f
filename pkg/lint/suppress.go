package lint

import (
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/yaml"
)

// SuppressAnnotationPrefix starts the annotation that suppresses a rule on
// a FlowSchema or PriorityLevelConfiguration; the rule's ID follows, and
// the value is the reason, which is required:
//
//	ignore-check.kubectl-apf.io/exempt-beyond-masters: "on-call break-glass, reviewed quarterly"
const SuppressAnnotationPrefix = "ignore-check.kubectl-apf.io/"

// Config is the file given with --config.
type Config struct {
	Suppressions []Suppression `json:"suppressions"`
}

// Suppression silences a rule on the objects whose name matches Name.
type Suppression struct {
	// Rule is a rule ID.
	Rule string `json:"rule"`
	// Name is a shell pattern (path.Match) over object names; "*" for all.
	Name string `json:"name"`
	// Kind, when set, is FlowSchema or PriorityLevelConfiguration.
	Kind string `json:"kind,omitempty"`
	// Reason says why the finding is accepted; required.
	Reason string `json:"reason"`
}

// ParseConfig reads a --config file: unknown fields, unknown rules, bad
// patterns and missing reasons are errors. source names the file in them.
func ParseConfig(data []byte, source string) (Config, error) {
	var cfg Config
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return Config{}, fmt.Errorf("--config %s: %w", source, err)
	}
	for i, s := range cfg.Suppressions {
		where := fmt.Sprintf("--config %s: suppressions[%d]", source, i)
		if _, ok := RuleByID(s.Rule); !ok {
			return Config{}, fmt.Errorf("%s: %w", where, UnknownRuleError(s.Rule))
		}
		if s.Name == "" {
			return Config{}, fmt.Errorf("%s: name is required (a pattern such as \"team-*\", or \"*\")", where)
		}
		if _, err := path.Match(s.Name, ""); err != nil {
			return Config{}, fmt.Errorf("%s: name %q is not a valid pattern: %w", where, s.Name, err)
		}
		if s.Kind != "" && s.Kind != kindFS && s.Kind != kindPL {
			return Config{}, fmt.Errorf("%s: kind must be %s or %s, not %q", where, kindFS, kindPL, s.Kind)
		}
		if strings.TrimSpace(s.Reason) == "" {
			return Config{}, fmt.Errorf("%s: reason is required: say why %s is accepted", where, s.Rule)
		}
	}
	return cfg, nil
}

// Suppressed is a finding silenced by an annotation or a --config entry.
type Suppressed struct {
	Finding
	// By is where the suppression is: the annotation on an object, or the
	// config file's entry.
	By     string `json:"by"`
	Reason string `json:"reason"`
}

// Suppress splits findings into those kept and those an annotation on one
// of their objects (in) or an entry of cfg silences. An annotation without
// a reason silences nothing and gets a note.
func Suppress(findings []Finding, in Input, cfg Config) (kept []Finding, suppressed []Suppressed, notes []string) {
	annotations := map[ObjectRef]map[string]string{}
	for _, fs := range in.FlowSchemas {
		annotations[fsRef(fs.Name)] = fs.Annotations
	}
	for _, pl := range in.PriorityLevels {
		annotations[plRef(pl.Name)] = pl.Annotations
	}
	noted := map[string]bool{}
	for _, f := range findings {
		s, ok := suppression(f, annotations, cfg, func(n string) {
			if !noted[n] {
				noted[n] = true
				notes = append(notes, n)
			}
		})
		if ok {
			suppressed = append(suppressed, s)
			continue
		}
		kept = append(kept, f)
	}
	return kept, suppressed, notes
}

func suppression(f Finding, annotations map[ObjectRef]map[string]string, cfg Config, note func(string)) (Suppressed, bool) {
	key := SuppressAnnotationPrefix + f.Rule
	for _, o := range f.Objects {
		reason, ok := annotations[o][key]
		if !ok {
			continue
		}
		if strings.TrimSpace(reason) == "" {
			note(fmt.Sprintf("note: %s: annotation %s has no reason, so it suppresses nothing (give the reason as its value)", o, key))
			continue
		}
		return Suppressed{Finding: f, By: fmt.Sprintf("annotation %s on %s", key, o), Reason: reason}, true
	}
	for i, s := range cfg.Suppressions {
		if s.Rule != f.Rule {
			continue
		}
		for _, o := range f.Objects {
			if s.Kind != "" && s.Kind != o.Kind {
				continue
			}
			if ok, _ := path.Match(s.Name, o.Name); ok {
				return Suppressed{Finding: f, By: fmt.Sprintf("--config suppressions[%d] (%s %s)", i, s.Rule, s.Name), Reason: s.Reason}, true
			}
		}
	}
	return Suppressed{}, false
}
