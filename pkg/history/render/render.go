// Package render prints the level table of "top levels --since" and of
// capacity's observed window (pkg/history's LevelWindow). The incidents of
// "explain 429 --prometheus" print through pkg/rejections/render, as every
// source of explain 429 does.
package render

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"

	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// WriteLevelWindows prints the table of "top levels --since".
func WriteLevelWindows(w io.Writer, rows []history.LevelWindow, noHeaders bool) error {
	tw := textfmt.NewTable(w)
	perInstance := false
	for _, r := range rows {
		perInstance = perInstance || r.Instance != history.MergedInstance
	}
	if !noHeaders {
		h := "LEVEL\tNOMINAL\tCURRENT\tSEATS-AVG\tSEATS-MAX\tWAITING-MAX\tDISPATCHED\tREJECTED\tWAIT-P99"
		if perInstance {
			h = "INSTANCE\t" + h
		}
		fmt.Fprintln(tw, h)
	}
	for _, r := range rows {
		cur := rejections.Count(float64(r.CurrentLimitMin))
		if r.CurrentLimitMax != r.CurrentLimitMin && !math.IsNaN(float64(r.CurrentLimitMax)) {
			cur += "-" + rejections.Count(float64(r.CurrentLimitMax))
		}
		rej := "0"
		if r.RejectedTotal > 0 {
			keys := make([]string, 0, len(r.Rejected))
			for k := range r.Rejected {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, sanitize.Line(k)+"="+rejections.Count(r.Rejected[k]))
			}
			rej = rejections.Count(r.RejectedTotal) + " (" + strings.Join(parts, ",") + ")"
		}
		wait := "-"
		if v := float64(r.WaitP99Seconds); !math.IsNaN(v) {
			wait = time.Duration(v * float64(time.Second)).Round(time.Millisecond).String()
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", sanitize.Line(r.Name), rejections.Count(float64(r.NominalLimit)), cur,
			rejections.Count(float64(r.SeatsInUseAvg)), rejections.Count(float64(r.SeatsInUseMax)), rejections.Count(float64(r.WaitingMax)), rejections.Count(float64(r.Dispatched)), rej, wait)
		if perInstance {
			line = sanitize.Line(r.Instance) + "\t" + line
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}
