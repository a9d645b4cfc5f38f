package levels

import "sort"

// This file is how a Row is viewed: the figures the views derive from it
// and its columns, defined once. "top levels" and "capacity" print Rows in
// tables, the live view draws them; each picks its columns from these and
// formats their cells its own way.

// Kind says how a column's figure reads, so that a view formats it.
type Kind int

// The kinds of figures.
const (
	// Count is a number of requests or seats.
	Count Kind = iota
	// Ratio is a fraction (a percentage in a table).
	Ratio
	// Rate is a rate per second; absent without two scrapes (HasRates).
	Rate
	// Seconds is a duration in seconds.
	Seconds
	// Reasons is the rejection rate by reason (RejectedPerSec), whose
	// figure is their sum.
	Reasons
	// Name is the level's name, which has no figure.
	Name
)

// Column is one column of a view of Rows: its title in a table, its
// shorter title and width in the live view, and its figure.
type Column struct {
	Title string
	// Short and Width head the column in the live view, when it shows it
	// on its own.
	Short string
	Width int
	Kind  Kind
	// Figure reads the column's figure from a row: NaN when absent.
	Figure func(Row) float64
}

// The columns of a Row.
var (
	ColLevel        = Column{Title: "LEVEL", Short: "LEVEL", Kind: Name}
	ColNominalLimit = Column{Title: "NOMINAL", Short: "NOM", Width: 4, Figure: func(r Row) float64 { return r.NominalLimit }}
	ColCurrentLimit = Column{Title: "CURRENT", Figure: func(r Row) float64 { return r.CurrentLimit }}
	// The live view shows the seats in use of the current limit.
	ColSeatsInUse   = Column{Title: "SEATS-IN-USE", Short: "USE/LIM", Width: 7, Figure: func(r Row) float64 { return r.SeatsInUse }}
	ColUtilisation  = Column{Title: "UTIL", Short: "SEATS", Kind: Ratio, Figure: func(r Row) float64 { return r.Utilisation }}
	ColWaiting      = Column{Title: "WAITING", Short: "WAIT", Width: 7, Figure: func(r Row) float64 { return r.Waiting }}
	ColWaitingSeats = Column{Title: "WAITING-SEATS", Figure: func(r Row) float64 { return r.WaitingSeats }}
	ColExecuting    = Column{Title: "EXECUTING", Figure: func(r Row) float64 { return r.Executing }}
	ColDispatched   = Column{Title: "DISPATCHED/S", Short: "DISP/S", Width: 6, Kind: Rate, Figure: func(r Row) float64 { return r.DispatchedPerSec }}
	ColRejected     = Column{Title: "REJECTED/S", Short: "REJ/S", Width: 6, Kind: Reasons, Figure: func(r Row) float64 { return r.RejectedTotal }}
	ColWaitP99      = Column{Title: "WAIT-P99", Short: "P99", Width: 6, Kind: Seconds, Figure: func(r Row) float64 { return r.WaitP99 }}
)

// TopColumns are the columns of "kubectl apf top levels".
var TopColumns = []Column{ColLevel, ColNominalLimit, ColCurrentLimit, ColSeatsInUse, ColUtilisation, ColWaiting,
	ColWaitingSeats, ColExecuting, ColDispatched, ColRejected, ColWaitP99}

// NowColumns are the columns of the levels now in "kubectl apf capacity".
var NowColumns = []Column{ColLevel, ColNominalLimit, ColCurrentLimit, ColSeatsInUse, ColWaiting, ColExecuting}

// Titles are the titles of cols in a table.
func Titles(cols []Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Title
	}
	return out
}

// Lending returns the seats the level borrows (its current limit above
// its nominal one) or lends (below): the periodic borrowing of the config
// controller (apf_controller.go: updateBorrowingLocked) moves seats between
// levels, and the current limit is what admission uses. Both are 0 for
// exempt, which neither lends nor borrows, and when a limit is absent.
func (r Row) Lending() (borrowed, lent float64) {
	if r.Exempt {
		return 0, 0
	}
	switch d := r.CurrentLimit - r.NominalLimit; {
	case d > 0:
		return d, 0
	case d < 0:
		return 0, -d
	}
	return 0, 0
}

// Reason is the rejection rate of one reason of rejected_requests_total.
type Reason struct {
	Reason string
	PerSec float64
}

// Reasons returns the rejection rates by reason, sorted by reason.
func (r Row) Reasons() []Reason {
	out := make([]Reason, 0, len(r.RejectedPerSec))
	for reason, v := range r.RejectedPerSec {
		out = append(out, Reason{Reason: reason, PerSec: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Reason < out[j].Reason })
	return out
}

// Rejecting says whether the level rejected requests over the scrapes'
// interval.
func (r Row) Rejecting() bool { return r.HasRates && r.RejectedTotal > 0 }
