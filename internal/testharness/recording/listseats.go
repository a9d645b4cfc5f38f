package recording

import (
	"errors"
	"fmt"
	"io"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// ListSeatsResult is how the LISTs of an apiserver's httplog compare with
// engine.ListSeats.
type ListSeatsResult struct {
	// Total LISTs compared (served, with logged seats and a known count),
	// Agree of them with the same seats, Wide of them logged above 1 seat.
	// Undetermined of them the counts of the scrapes size differently
	// (the resource's count changed between them, and the server, whose
	// count refreshes on its own period, may have used either): each of
	// those agrees where the server's seats are one scrape's; BeforeAgree
	// of them where they are the scrape before's, which simulate and
	// explain size them from.
	Total, Agree, Wide, Undetermined, BeforeAgree int
	// ByServerSeats counts the compared LISTs by the seats the server logged.
	ByServerSeats map[uint64]int
	// Disagreements describe the LISTs whose seats differ.
	Disagreements []string
	// Seats is, per compared LIST, its URI and level with the server's seats.
	Seats []string
}

// LevelLimits are the limits of the levels of snap's objects at the given
// server concurrency limit, by level name.
func LevelLimits(snap *dump.Snapshot, serverCL int) map[string]engine.LevelLimits {
	limits := map[string]engine.LevelLimits{}
	for _, l := range engine.NewConfig(snap.Objects()).Limits(serverCL) {
		limits[l.Name] = l
	}
	return limits
}

// CompareListSeats sizes every LIST of the httplog file that the server
// served with the seats upstream's LIST estimator of rel gives it from
// the counts of the scrape before it (engine.ListSeatsAt, capped by its
// level's max seats in limits) and compares them with the seats the server
// logged (apf_iseats). counts are the object counts of the scrapes around
// the log; a LIST the scrapes around it size differently is Undetermined.
func CompareListSeats(httplog string, rel engine.Release, counts engine.CountsSeries, limits map[string]engine.LevelLimits) (ListSeatsResult, error) {
	res := ListSeatsResult{ByServerSeats: map[uint64]int{}}
	// the year of klog's headers, for the times the scrapes are compared
	// with: where the log tells none, the scrapes' (as simulate takes it,
	// logs.Spec.Year)
	year, known := input.Year([]string{httplog})
	if n := len(counts); !known && n > 0 {
		year = counts[n-1].At.Year()
	}
	files, err := input.OpenFiles([]string{httplog}, input.Options{Year: year})
	if err != nil {
		return res, err
	}
	defer files.Close()
	var w workload.Request
	for {
		err := files.Next(&w)
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		if err != nil {
			return res, err
		}
		if !w.HasSeats || w.Status == 429 {
			continue
		}
		er, err := engine.ParseRequest(w.Method, w.URI, engine.Identity{})
		if err != nil || er.Info.Verb != "list" {
			continue
		}
		maxSeats := limits[w.PriorityLevel].MaxSeats
		got, ok, between := engine.ListSeatsAt(rel, er, counts, w.Arrival, maxSeats)
		if !ok {
			continue
		}
		if between {
			res.Undetermined++
			if got == w.InitialSeats {
				res.BeforeAgree++
			} else if _, after := counts.Around(w.Arrival); after != nil {
				if s, _ := engine.ListSeats(rel, er, after, maxSeats); s == w.InitialSeats {
					got = s
				}
			}
		}
		res.Total++
		res.ByServerSeats[w.InitialSeats]++
		res.Seats = append(res.Seats, fmt.Sprintf("%s in %s: %d", w.URI, w.PriorityLevel, w.InitialSeats))
		if w.InitialSeats > 1 {
			res.Wide++
		}
		if got == w.InitialSeats {
			res.Agree++
		} else {
			res.Disagreements = append(res.Disagreements, fmt.Sprintf("%s: %s in %s: the engine replaying %s says %d seats, the server logged %d",
				w.Source, w.URI, w.PriorityLevel, rel, got, w.InitialSeats))
		}
	}
}
