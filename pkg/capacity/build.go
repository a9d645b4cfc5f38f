package capacity

import (
	"fmt"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// Input is what "kubectl apf capacity" computes its report from.
type Input struct {
	// State is the state loaded: the configuration (the input's and the
	// overlay of -f), the snapshots read, the server concurrency limit.
	State *state.State
	// Files says that -f gave configuration files: with no
	// PriorityLevelConfigurations in the input, they are then laid over
	// the levels assumed from it (AssumeBase), and the proposed table is
	// shown.
	Files bool
	// Settings are the --set changes, applied to the proposed
	// configuration.
	Settings []Setting
	// RequestTimeout is the server's request timeout, which bounds the
	// queue wait.
	RequestTimeout time.Duration
}

// Build computes capacity's report from the state: the current table (or
// why there is none), the proposed one when -f or --set change the
// configuration, and what each level of each instance holds now. Observed
// (a store's window) is left to the caller.
func Build(in Input) (Report, error) {
	st := in.State
	scl := st.ServerConcurrency
	rep := Report{ServerConcurrencySource: string(st.ServerConcurrencySource), Release: st.Release.String(), ReleaseFrom: st.ReleaseFrom}
	// The input's own objects, if it holds any: a raw dump or metrics file
	// holds none, and then no level is imagined from the mandatory objects.
	inputHasObjects := len(st.Snapshots) > 0 && st.Snapshots[0].HasObjects()
	basePL, proposedPL := st.BasePriorityLevels, st.PriorityLevels
	var named []string
	for _, s := range st.Live {
		for _, r := range levels.Compute(levels.Input{Snapshot: s}) {
			named = append(named, r.Name)
		}
	}
	switch {
	case !st.NoObjects:
	case !in.Files:
		rep.Unconfigured = "the input holds no PriorityLevelConfigurations (give -f, --defaults for the upstream defaults of its release, a bundle or the cluster for the configured levels' arithmetic)"
	default:
		base, assumed, why := AssumeBase(st.Release, named)
		if base == nil {
			rep.Unconfigured = why
			break
		}
		basePL, rep.Assumed = base, assumed
		_, proposedPL = config.Overlay(nil, base, st.Overlay)
	}
	if rep.Unconfigured == "" {
		cur, err := Compute(basePL, scl, in.RequestTimeout)
		if err != nil {
			return Report{}, err
		}
		rep.Current = &cur
		if in.Files || len(in.Settings) > 0 {
			proposedPL, err := Apply(proposedPL, in.Settings)
			if err != nil {
				return Report{}, err
			}
			p, err := Compute(proposedPL, scl, in.RequestTimeout)
			if err != nil {
				return Report{}, fmt.Errorf("proposed configuration: %w", err)
			}
			rep.Proposed = &p
		}
	}
	// A level without a per-request cap (Reject: no hand), or with one
	// above the work estimator's own, takes the estimator's (width.go:
	// maxSeats 0 or above maximumSeatsLimit is maximumSeatsLimit).
	cap := st.Release.MaxListSeats()
	for _, t := range []*Table{rep.Current, rep.Proposed} {
		if t == nil {
			continue
		}
		for i := range t.Levels {
			if l := &t.Levels[i]; (l.MaxSeats == 0 || l.MaxSeats > cap) && l.Type == string(flowcontrolv1.PriorityLevelEnablementLimited) {
				l.EstimatorCap = cap
			}
		}
	}
	// The configuration's limits fill the figures the input lacks only
	// when the configuration is the input's own.
	var limits []engine.LevelLimits
	if inputHasObjects {
		limits = engine.NewConfig(st.BaseFlowSchemas, st.BasePriorityLevels).Limits(scl)
	}
	for _, s := range st.Live {
		rep.Now = append(rep.Now, levels.Compute(levels.Input{Snapshot: s, Limits: limits})...)
	}
	if rep.Assumed != "" && rep.Current != nil {
		rep.Assumed += CheckAssumed(*rep.Current, rep.Now)
	}
	return rep, nil
}
