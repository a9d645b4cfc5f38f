package recording

import (
	"errors"
	"fmt"
	"io"
	"slices"

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
	// those agrees where the server's seats are one scrape's.
	Total, Agree, Wide, Undetermined int
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
// counts (engine.ListSeats, capped by its level's max seats in limits) and
// compares them with the seats the server logged (apf_iseats). counts are
// the object counts of each scrape around the log, in order; a LIST they
// size differently is Undetermined.
func CompareListSeats(httplog string, rel engine.Release, counts []engine.ObjectCounts, limits map[string]engine.LevelLimits) (ListSeatsResult, error) {
	res := ListSeatsResult{ByServerSeats: map[uint64]int{}}
	files, err := input.OpenFiles([]string{httplog}, input.Options{})
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
		var (
			sizes []uint64
			got   uint64
			ok    bool
		)
		for _, c := range counts {
			s, known := engine.ListSeats(rel, er, c, limits[w.PriorityLevel].MaxSeats)
			if !known {
				ok = false
				break
			}
			got, ok = s, true
			if !slices.Contains(sizes, s) {
				sizes = append(sizes, s)
			}
		}
		if !ok {
			continue
		}
		if len(sizes) > 1 {
			res.Undetermined++
			if slices.Contains(sizes, w.InitialSeats) {
				got = w.InitialSeats
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
