package levels

import (
	"encoding/json"
	"errors"
	"math"
	"sort"
)

// This file is how a Row is viewed: the figures the views derive from it
// and its columns, defined once. "top levels" and "capacity" print Rows in
// tables and in JSON and YAML (View), the live view draws them; each picks
// its columns from these and formats their cells its own way.

// Kind says how a column's figure reads, so that a view formats it, or
// which of a row's other fields the column shows.
type Kind int

// The kinds of columns.
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
	// Instance is the row's apiserver instance, which has no figure; the
	// tables print it in their own INSTANCE column.
	Instance
	// Flag is whether the row has rates (HasRates).
	Flag
	// Sources names the input of each figure present (From).
	Sources
)

// Column is one column of a view of Rows: its title in a table, its
// shorter title and width in the live view, its name in JSON and its
// figure. The columns of Kind Instance, Flag and Sources are fields of the
// JSON alone.
type Column struct {
	Title string
	// JSON names the column's field in JSON and YAML (View).
	JSON string
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
	ColInstance     = Column{JSON: "instance", Kind: Instance}
	ColLevel        = Column{Title: "LEVEL", Short: "LEVEL", JSON: "level", Kind: Name}
	ColNominalLimit = Column{Title: "NOMINAL", Short: "NOM", Width: 4, JSON: FigureNominalLimit, Figure: func(r Row) float64 { return r.NominalLimit }}
	ColCurrentLimit = Column{Title: "CURRENT", JSON: FigureCurrentLimit, Figure: func(r Row) float64 { return r.CurrentLimit }}
	// The live view shows the seats in use of the current limit.
	ColSeatsInUse   = Column{Title: "SEATS-IN-USE", Short: "USE/LIM", Width: 7, JSON: FigureSeatsInUse, Figure: func(r Row) float64 { return r.SeatsInUse }}
	ColUtilisation  = Column{Title: "UTIL", Short: "SEATS", JSON: "utilisation", Kind: Ratio, Figure: func(r Row) float64 { return r.Utilisation }}
	ColWaiting      = Column{Title: "WAITING", Short: "WAIT", Width: 7, JSON: "waitingRequests", Figure: func(r Row) float64 { return r.Waiting }}
	ColWaitingSeats = Column{Title: "WAITING-SEATS", JSON: FigureWaitingSeats, Figure: func(r Row) float64 { return r.WaitingSeats }}
	ColExecuting    = Column{Title: "EXECUTING", JSON: "executingRequests", Figure: func(r Row) float64 { return r.Executing }}
	ColHasRates     = Column{JSON: "hasRates", Kind: Flag}
	ColDispatched   = Column{Title: "DISPATCHED/S", Short: "DISP/S", Width: 6, JSON: "dispatchedPerSecond", Kind: Rate, Figure: func(r Row) float64 { return r.DispatchedPerSec }}
	// In JSON, the rejections are an object of each reason's rate
	// (RejectedPerSec).
	ColRejected = Column{Title: "REJECTED/S", Short: "REJ/S", Width: 6, JSON: "rejectedPerSecond", Kind: Reasons, Figure: func(r Row) float64 { return r.RejectedTotal }}
	ColWaitP99  = Column{Title: "WAIT-P99", Short: "P99", Width: 6, JSON: "waitP99Seconds", Kind: Seconds, Figure: func(r Row) float64 { return r.WaitP99 }}
	ColFrom     = Column{JSON: "from", Kind: Sources}
	// ColMeanUtilisation and ColFullFraction are the seats in use over the
	// scrapes' interval (apiserver_flowcontrol_priority_level_seat_utilization),
	// where UTIL is one moment: a level that dispatches in bursts reads 0%
	// between them.
	ColMeanUtilisation = Column{Title: "UTIL-AVG", JSON: "meanUtilisation", Kind: Ratio, Figure: func(r Row) float64 { return r.MeanUtilisation }}
	ColFullFraction    = Column{Title: "FULL", JSON: "fullFraction", Kind: Ratio, Figure: func(r Row) float64 { return r.FullFraction }}
)

// Named is c under another name in JSON, for a view whose JSON has always
// named it so.
func (c Column) Named(name string) Column {
	c.JSON = name
	return c
}

// TopColumns are the columns of "kubectl apf top levels".
var TopColumns = []Column{ColLevel, ColNominalLimit, ColCurrentLimit, ColSeatsInUse, ColUtilisation, ColWaiting,
	ColWaitingSeats, ColExecuting, ColDispatched, ColRejected, ColWaitP99}

// TopWideColumns are the columns of "top levels -o wide": the seats'
// utilisation over the interval beside UTIL's moment.
var TopWideColumns = append(append([]Column{}, TopColumns...), ColMeanUtilisation, ColFullFraction)

// TopFields are the fields of a row of "top levels" in JSON and YAML.
var TopFields = []Column{ColInstance, ColLevel, ColNominalLimit, ColCurrentLimit, ColSeatsInUse, ColUtilisation, ColWaiting,
	ColWaitingSeats, ColExecuting, ColHasRates, ColDispatched, ColRejected, ColWaitP99, ColMeanUtilisation, ColFullFraction}

// NowColumns are the columns of the levels now in "kubectl apf capacity",
// after an instance.
var NowColumns = []Column{ColLevel, ColNominalLimit, ColCurrentLimit, ColSeatsInUse, ColWaiting, ColExecuting}

// NowFields are the fields of a level now in the JSON and YAML of
// "kubectl apf capacity", which names the requests' figures as Row.From
// does.
var NowFields = []Column{ColInstance, ColLevel, ColWaiting.Named(FigureWaiting), ColExecuting.Named(FigureExecuting),
	ColSeatsInUse, ColNominalLimit, ColCurrentLimit, ColFrom}

// Titles are the titles of cols in a table.
func Titles(cols []Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Title
	}
	return out
}

// View is a row as a view shows it in JSON, and in YAML, which
// sigs.k8s.io/yaml writes from the JSON: an object of the fields' JSON
// names, in their order. An absent figure is null; the rejections without
// any and From without a figure are left out.
type View struct {
	Row    Row
	Fields []Column
}

// Views are rows, each shown by fields.
func Views(rows []Row, fields []Column) []View {
	out := make([]View, 0, len(rows))
	for _, r := range rows {
		out = append(out, View{Row: r, Fields: fields})
	}
	return out
}

// ErrViewOnly is the error of decoding a view: a view writes a row, and
// does not read one back (null is an absent figure, a field may be left
// out). A program that reads the JSON decodes it into a struct of the
// fields it needs, by their names.
var ErrViewOnly = errors.New("levels: a view of rows is written, not read back: decode its JSON into a struct of the fields needed")

// MarshalJSON writes the fields of the view's row.
func (v View) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for _, c := range v.Fields {
		val, err := c.value(v.Row)
		if err != nil {
			return nil, err
		}
		if val == nil {
			continue
		}
		name, err := json.Marshal(c.JSON)
		if err != nil {
			return nil, err
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(b, name...), ':'), val...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON fails with ErrViewOnly.
func (v *View) UnmarshalJSON([]byte) error { return ErrViewOnly }

// value is the JSON of column c in row r; nil when the view leaves it out.
func (c Column) value(r Row) ([]byte, error) {
	switch c.Kind {
	case Instance:
		return json.Marshal(r.Instance)
	case Name:
		return json.Marshal(r.Name)
	case Flag:
		return json.Marshal(r.HasRates)
	case Sources:
		if len(r.From) == 0 {
			return nil, nil
		}
		return json.Marshal(r.From)
	case Reasons:
		if len(r.RejectedPerSec) == 0 {
			return nil, nil
		}
		m := make(map[string]json.RawMessage, len(r.RejectedPerSec))
		for reason, v := range r.RejectedPerSec {
			m[reason] = figureJSON(v)
		}
		return json.Marshal(m)
	}
	return figureJSON(c.Figure(r)), nil
}

// figureJSON is figure v in JSON: null when absent (NaN); JSON has no NaN
// or infinity.
func figureJSON(v float64) json.RawMessage {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return json.RawMessage("null")
	}
	b, _ := json.Marshal(v) // a finite float64 always marshals
	return b
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
