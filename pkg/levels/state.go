package levels

import (
	"maps"

	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// State is the row's figures in the schema of explain 429
// (rejections.LevelState, docs/explain-429-schema.md): each figure a
// pointer, nil where the row's is NaN, with the inputs they came from. The
// row's figures are written into the schema here only; the level's
// configuration (limit response, queues, the wait limit) is the caller's.
//
// The two stay two types: the schema omits an absent figure (a nil
// pointer) and orders its keys with the configuration's between the
// figures, where a row keeps NaN and holds what the schema has not (the
// instance, the rates, the dump's counts).
func (r Row) State() rejections.LevelState {
	st := rejections.LevelState{NominalLimit: Figure(r.NominalLimit), CurrentLimit: Figure(r.CurrentLimit), SeatsInUse: Figure(r.SeatsInUse),
		Waiting: Figure(r.Waiting), WaitingSeats: Figure(r.WaitingSeats), Executing: Figure(r.Executing), WaitP99Seconds: Figure(r.WaitP99),
		MeanUtilisation: Figure(r.MeanUtilisation), FullFraction: Figure(r.FullFraction)}
	if len(r.From) > 0 {
		st.From = maps.Clone(r.From)
	}
	return st
}
