package simulate

import (
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// ConcurrencyFrom is where the server concurrency limit of a Result came
// from (Result.ServerConcurrencySource): the state's source, and whether
// each instance of the log was replayed on its own with that limit. It is
// printed and returned in JSON as one phrase ("metrics", "flag, on each
// instance").
type ConcurrencyFrom struct {
	Source       state.ConcurrencySource
	EachInstance bool
}

// eachInstance is the phrase of ConcurrencyFrom.EachInstance.
const eachInstance = ", on each instance"

// String is the phrase printed.
func (c ConcurrencyFrom) String() string {
	if c.EachInstance {
		return string(c.Source) + eachInstance
	}
	return string(c.Source)
}

// MarshalText returns String, so the JSON holds the phrase.
func (c ConcurrencyFrom) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads the phrase back.
func (c *ConcurrencyFrom) UnmarshalText(b []byte) error {
	s, each := strings.CutSuffix(string(b), eachInstance)
	*c = ConcurrencyFrom{Source: state.ConcurrencySource(s), EachInstance: each}
	return nil
}
