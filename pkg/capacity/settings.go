package capacity

import (
	"fmt"
	"strconv"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Setting is one "--set LEVEL.FIELD=VALUE" change to a priority level.
type Setting struct {
	Level string
	Field string
	// Value is nil for "unset" (only borrowingLimitPercent may be unset).
	Value *int32
}

// settableFields maps the accepted field names (and short aliases) to the
// canonical spec field name.
var settableFields = map[string]string{
	"nominalconcurrencyshares": "nominalConcurrencyShares",
	"shares":                   "nominalConcurrencyShares",
	"lendablepercent":          "lendablePercent",
	"borrowinglimitpercent":    "borrowingLimitPercent",
	"queues":                   "queues",
	"handsize":                 "handSize",
	"queuelengthlimit":         "queueLengthLimit",
}

// SettableFields lists the fields --set accepts, for help and errors.
const SettableFields = "nominalConcurrencyShares (or shares), lendablePercent, borrowingLimitPercent, queues, handSize, queueLengthLimit"

// ParseSetting parses "LEVEL.FIELD=VALUE". VALUE is a non-negative integer,
// or "unset" for borrowingLimitPercent.
func ParseSetting(s string) (Setting, error) {
	lhs, value, ok := strings.Cut(s, "=")
	if !ok {
		return Setting{}, fmt.Errorf("--set %q: want LEVEL.FIELD=VALUE, for example workload-low.shares=200", s)
	}
	// Level names are DNS subdomains and may contain dots; the field is
	// after the last one.
	i := strings.LastIndex(lhs, ".")
	if i <= 0 || i == len(lhs)-1 {
		return Setting{}, fmt.Errorf("--set %q: want LEVEL.FIELD=VALUE, for example workload-low.shares=200", s)
	}
	level, field := lhs[:i], lhs[i+1:]
	if errs := validation.IsDNS1123Subdomain(level); len(errs) > 0 {
		return Setting{}, fmt.Errorf("--set %q: %q is not a valid priority level name: %s", s, level, strings.Join(errs, "; "))
	}
	canonical, ok := settableFields[strings.ToLower(field)]
	if !ok {
		return Setting{}, fmt.Errorf("--set %q: unknown field %q; settable fields are %s", s, field, SettableFields)
	}
	set := Setting{Level: level, Field: canonical}
	if value == "unset" {
		if canonical != "borrowingLimitPercent" {
			return Setting{}, fmt.Errorf("--set %q: only borrowingLimitPercent can be unset", s)
		}
		return set, nil
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil || n < 0 {
		return Setting{}, fmt.Errorf("--set %q: value %q must be a non-negative integer", s, value)
	}
	v := int32(n)
	set.Value = &v
	return set, nil
}

// Apply returns copies of pls with the settings applied, in order. It fails
// when a setting names a missing level or a field the level does not have
// (queue fields on a Reject level, anything but shares and lendablePercent
// on the exempt level).
func Apply(pls []*flowcontrolv1.PriorityLevelConfiguration, settings []Setting) ([]*flowcontrolv1.PriorityLevelConfiguration, error) {
	out := make([]*flowcontrolv1.PriorityLevelConfiguration, len(pls))
	byName := map[string]*flowcontrolv1.PriorityLevelConfiguration{}
	for i, pl := range pls {
		out[i] = pl.DeepCopy()
		byName[pl.Name] = out[i]
	}
	for _, s := range settings {
		pl, ok := byName[s.Level]
		if !ok {
			return nil, fmt.Errorf("--set %s.%s: no priority level named %q", s.Level, s.Field, s.Level)
		}
		if err := applyOne(pl, s); err != nil {
			return nil, fmt.Errorf("--set %s.%s: %w", s.Level, s.Field, err)
		}
	}
	return out, nil
}

func applyOne(pl *flowcontrolv1.PriorityLevelConfiguration, s Setting) error {
	if e := pl.Spec.Exempt; e != nil {
		switch s.Field {
		case "nominalConcurrencyShares":
			e.NominalConcurrencyShares = s.Value
		case "lendablePercent":
			e.LendablePercent = s.Value
		default:
			return fmt.Errorf("the exempt level has only nominalConcurrencyShares and lendablePercent")
		}
		return nil
	}
	l := pl.Spec.Limited
	if l == nil {
		return fmt.Errorf("level %s has neither limited nor exempt settings", pl.Name)
	}
	if s.Value != nil && s.Field == "lendablePercent" && *s.Value > 100 {
		return fmt.Errorf("lendablePercent must be between 0 and 100, not %d", *s.Value)
	}
	switch s.Field {
	case "nominalConcurrencyShares":
		l.NominalConcurrencyShares = s.Value
	case "lendablePercent":
		l.LendablePercent = s.Value
	case "borrowingLimitPercent":
		l.BorrowingLimitPercent = s.Value
	default:
		q := l.LimitResponse.Queuing
		if l.LimitResponse.Type != flowcontrolv1.LimitResponseTypeQueue || q == nil {
			return fmt.Errorf("level %s rejects instead of queuing, so it has no %s", pl.Name, s.Field)
		}
		switch s.Field {
		case "queues":
			q.Queues = *s.Value
		case "handSize":
			q.HandSize = *s.Value
		case "queueLengthLimit":
			q.QueueLengthLimit = *s.Value
		}
		if q.Queues < 1 || q.HandSize < 1 || q.HandSize > q.Queues {
			return fmt.Errorf("queues %d and handSize %d: need 1 <= handSize <= queues", q.Queues, q.HandSize)
		}
	}
	return nil
}
