// Package state is the APF state as a value: the configuration (before and
// after -f), the snapshots of every instance, the release replayed and the
// server concurrency limit, each with where it came from. The compute
// packages (simulate, explain, reconstruct, tune, ...) take a *State; the
// loader that fills one from a cluster, a bundle, files or a store is
// package load. This package reads no flags, opens nothing and talks to no
// server.
package state

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// Where the server concurrency limit came from.
const (
	SourceFlag    = "flag"
	SourceMetrics = "metrics"
	SourceDefault = "default"
)

// Where the release replayed came from (State.ReleaseFrom is one of these,
// or "server " followed by the server's gitVersion).
const (
	ReleaseFromFlag    = "--kube-version"
	ReleaseFromDefault = "default"
)

// State is what Load returns.
type State struct {
	// BaseFlowSchemas and BasePriorityLevels are the configuration read
	// (or the defaults), before -f.
	BaseFlowSchemas    []*flowcontrolv1.FlowSchema
	BasePriorityLevels []*flowcontrolv1.PriorityLevelConfiguration
	// FlowSchemas and PriorityLevels have the -f files applied.
	FlowSchemas    []*flowcontrolv1.FlowSchema
	PriorityLevels []*flowcontrolv1.PriorityLevelConfiguration
	// Overlay is what -f held (empty without -f).
	Overlay config.Objects
	// Snapshots are the instances that answered (nil with --defaults).
	Snapshots []*dump.Snapshot
	// Live are the snapshots with live state (dumps or metrics).
	Live []*dump.Snapshot
	// ServerVersion is the first snapshot's version, nil when unknown.
	ServerVersion string
	// Release is the Kubernetes release the engine replays: --kube-version,
	// else the server's, else engine.NewestRelease; ReleaseFrom says which
	// (ReleaseFromFlag, "server vX.Y.Z", ReleaseFromDefault).
	Release     engine.Release
	ReleaseFrom string
	// ServerConcurrency is the server concurrency limit: the flag, else
	// inferred from the metrics, else engine.DefaultServerConcurrencyLimit;
	// ServerConcurrencySource says which (SourceFlag, SourceMetrics,
	// SourceDefault). InferredConcurrency is what the metrics gave (0:
	// nothing).
	ServerConcurrency       int
	ServerConcurrencySource string
	InferredConcurrency     int
	// Notes are diagnostics for stderr, "note: ..." each, sanitised
	// (internal/sanitize): one safe line each.
	Notes []string
	// NoObjects is true when the input held no FlowSchema or
	// PriorityLevelConfiguration (a raw dump, a bundle without them): the
	// base configuration is then empty, not the cluster's.
	NoObjects bool
	// MetricsError says why the metrics Request.Metrics asked for could
	// not be read (nil when they were, or were not asked for).
	MetricsError error
}

// Config returns the engine's view of the configuration with -f applied.
func (s *State) Config() *engine.Config { return engine.NewConfig(s.FlowSchemas, s.PriorityLevels) }

// InferServerConcurrency returns the server concurrency limit the newest
// scrape of s reveals, 0 when it has none. Only a level without
// borrowingLimitPercent reveals it (upper - nominal), and exempt never has
// one (engine.InferServerConcurrencyLimit).
func InferServerConcurrency(s *dump.Snapshot) (int, error) {
	_, cur := s.LatestMetrics()
	if cur == nil {
		return 0, nil
	}
	nominal := cur.SumBy("apiserver_flowcontrol_nominal_limit_seats", "priority_level")
	upper := cur.SumBy("apiserver_flowcontrol_upper_limit_seats", "priority_level")
	n, ok1 := nominal[flowcontrolv1.PriorityLevelConfigurationNameExempt]
	u, ok2 := upper[flowcontrolv1.PriorityLevelConfigurationNameExempt]
	if !ok1 || !ok2 {
		return 0, nil
	}
	return engine.InferServerConcurrencyLimit(n, u)
}
