package vlogs

import (
	"context"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// Workload is every event of s's window as a workload, read as a file of
// audit events is (Reader): leniently unless strict, its counts under the
// name "VictoriaLogs <client>", and what was pulled in pulled.
func (s *Source) Workload(ctx context.Context, strict bool, pulled *Pulled) *workload.Files {
	st := &workload.Stats{}
	rd := s.Reader(ctx, []Window{{Start: s.Start, End: s.End}}, "VictoriaLogs", input.Options{Lenient: !strict}, st, pulled)
	name := "VictoriaLogs " + s.Client.Describe()
	return &workload.Files{Reader: rd, Stats: map[string]*workload.Stats{name: st}, Formats: map[string]workload.Format{name: workload.FormatAudit}}
}
