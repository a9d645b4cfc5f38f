package engine

import (
	"errors"
	"fmt"
	"sort"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	fcboot "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/util/apihelpers"
)

// Config is a digested APF configuration: what the apiserver's config
// controller (apf_controller.go:lockAndDigestConfigObjects) would match
// requests against. Build it with NewConfig; it is immutable and safe for
// concurrent use.
type Config struct {
	// FlowSchemas are the FlowSchemas used for matching, in matching order:
	// the live ones sorted by matchingPrecedence then name, with the
	// mandatory exempt prepended and catch-all appended when absent.
	FlowSchemas []*flowcontrolv1.FlowSchema
	// PriorityLevels are the live priority levels by name, including the
	// imagined mandatory ones.
	PriorityLevels map[string]*flowcontrolv1.PriorityLevelConfiguration
	// Dangling lists the FlowSchemas skipped because their priority level is
	// missing or broken, in matching order.
	Dangling []DanglingFlowSchema
	// Broken lists the PriorityLevelConfigurations the server ignores.
	Broken []BrokenPriorityLevel
	// Imagined names the mandatory objects the server supplies because no
	// usable API object exists ("FlowSchema/exempt", "PriorityLevelConfiguration/catch-all").
	// Imagined objects have an empty UID, as upstream.
	Imagined []string
	// Duplicates names FlowSchemas or priority levels given more than once;
	// only the first is kept (upstream panics: its informer cannot produce
	// duplicates).
	Duplicates []string

	// all is every FlowSchema in matching order, live or dangling, so the
	// trace can say where a dangling schema was skipped.
	all     []fsEntry
	levels  map[string]*levelInfo
	levelOf []*levelInfo // parallel to FlowSchemas
}

type fsEntry struct {
	fs       *flowcontrolv1.FlowSchema
	dangling bool
}

// levelInfo caches what classification needs of a live priority level.
type levelInfo struct {
	pl        *flowcontrolv1.PriorityLevelConfiguration
	exempt    bool
	numQueues int32 // 0 unless Limited with limitResponse Queue
	dealer    *Dealer
}

// DanglingFlowSchema is a FlowSchema that the server does not use because
// its priority level reference does not resolve to a usable level; the
// server reports it with status condition Dangling=True.
type DanglingFlowSchema struct {
	// Name of the FlowSchema.
	Name string
	// PriorityLevel is the name it references.
	PriorityLevel string
	// Reason says whether the level is missing or broken.
	Reason string
}

// BrokenPriorityLevel is a PriorityLevelConfiguration that the server
// ignores ("Ignoring PriorityLevelConfiguration object %s because its spec
// (%s) is broken") because its spec is inconsistent.
type BrokenPriorityLevel struct {
	// Name of the priority level.
	Name string
	// Reason is the error, worded like upstream's queueSetCompleterForPL.
	Reason string
}

// NewConfig digests FlowSchemas and PriorityLevelConfigurations as the
// server's config controller does (apf_controller.go: digestNewPLsLocked,
// digestFlowSchemasLocked, imaginePL). The inputs are not modified; missing
// fields are defaulted on copies as the API server would (DefaultFlowSchema,
// DefaultPriorityLevel), so hand-written objects behave like stored ones.
//
// Ordering quirks kept from upstream: dangling FlowSchemas are dropped before
// sorting; a FlowSchema referencing a mandatory level (exempt or catch-all)
// for which no usable API object exists is dangling even though the server
// imagines that level, because FlowSchemas are digested before the levels are
// imagined; the imagined catch-all FlowSchema goes last whatever its name.
func NewConfig(fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration) *Config {
	c := &Config{
		PriorityLevels: map[string]*flowcontrolv1.PriorityLevelConfiguration{},
		levels:         map[string]*levelInfo{},
	}
	for _, pl := range pls {
		if pl == nil {
			continue
		}
		if _, dup := c.PriorityLevels[pl.Name]; dup || c.isBroken(pl.Name) {
			c.Duplicates = append(c.Duplicates, "PriorityLevelConfiguration/"+pl.Name)
			continue
		}
		pl = DefaultPriorityLevel(pl)
		li, err := digestPriorityLevel(pl)
		if err != nil {
			c.Broken = append(c.Broken, BrokenPriorityLevel{Name: pl.Name, Reason: err.Error()})
			continue
		}
		c.PriorityLevels[pl.Name] = pl
		c.levels[pl.Name] = li
	}

	seq := make(apihelpers.FlowSchemaSequence, 0, len(fss))
	var all apihelpers.FlowSchemaSequence
	dangling := map[string]bool{}
	seen := map[string]bool{}
	var haveExempt, haveCatchAll bool
	for _, fs := range fss {
		if fs == nil {
			continue
		}
		if seen[fs.Name] {
			c.Duplicates = append(c.Duplicates, "FlowSchema/"+fs.Name)
			continue
		}
		seen[fs.Name] = true
		fs = DefaultFlowSchema(fs)
		all = append(all, fs)
		if c.PriorityLevels[fs.Spec.PriorityLevelConfiguration.Name] == nil {
			dangling[fs.Name] = true
			continue
		}
		seq = append(seq, fs)
		haveExempt = haveExempt || fs.Name == flowcontrolv1.FlowSchemaNameExempt
		haveCatchAll = haveCatchAll || fs.Name == flowcontrolv1.FlowSchemaNameCatchAll
	}
	sort.Sort(seq)
	sort.Sort(all)
	if !haveExempt {
		seq = append(apihelpers.FlowSchemaSequence{fcboot.MandatoryFlowSchemaExempt}, seq...)
		all = append(apihelpers.FlowSchemaSequence{fcboot.MandatoryFlowSchemaExempt}, all...)
		c.Imagined = append(c.Imagined, "FlowSchema/"+flowcontrolv1.FlowSchemaNameExempt)
	}
	if !haveCatchAll {
		seq = append(seq, fcboot.MandatoryFlowSchemaCatchAll)
		all = append(all, fcboot.MandatoryFlowSchemaCatchAll)
		c.Imagined = append(c.Imagined, "FlowSchema/"+flowcontrolv1.FlowSchemaNameCatchAll)
	}
	for _, fs := range all {
		d := dangling[fs.Name] && fs != fcboot.MandatoryFlowSchemaExempt && fs != fcboot.MandatoryFlowSchemaCatchAll
		c.all = append(c.all, fsEntry{fs: fs, dangling: d})
		if d {
			plName := fs.Spec.PriorityLevelConfiguration.Name
			reason := "no such PriorityLevelConfiguration"
			if c.isBroken(plName) {
				reason = "the PriorityLevelConfiguration is broken"
			}
			c.Dangling = append(c.Dangling, DanglingFlowSchema{Name: fs.Name, PriorityLevel: plName, Reason: reason})
		}
	}

	// Imagine the mandatory levels after the FlowSchemas, as
	// lockAndDigestConfigObjects does.
	for _, proto := range []*flowcontrolv1.PriorityLevelConfiguration{
		fcboot.MandatoryPriorityLevelConfigurationExempt, fcboot.MandatoryPriorityLevelConfigurationCatchAll,
	} {
		if c.PriorityLevels[proto.Name] != nil {
			continue
		}
		li, err := digestPriorityLevel(proto)
		if err != nil {
			panic(fmt.Sprintf("mandatory priority level %s is broken: %v", proto.Name, err)) // cannot happen: bootstrap objects are valid
		}
		c.PriorityLevels[proto.Name] = proto
		c.levels[proto.Name] = li
		c.Imagined = append(c.Imagined, "PriorityLevelConfiguration/"+proto.Name)
	}
	c.FlowSchemas = seq
	c.levelOf = make([]*levelInfo, len(seq))
	for i, fs := range seq {
		c.levelOf[i] = c.levels[fs.Spec.PriorityLevelConfiguration.Name]
	}
	return c
}

func (c *Config) isBroken(name string) bool {
	for _, b := range c.Broken {
		if b.Name == name {
			return true
		}
	}
	return false
}

// digestPriorityLevel applies the checks of upstream
// apf_controller.go:queueSetCompleterForPL and, for queuing levels, of
// fairqueuing/queueset/queueset.go:checkConfig (the shuffle-sharding dealer
// must be constructible). Any failure makes the level "broken".
func digestPriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration) (*levelInfo, error) {
	spec := pl.Spec
	if (spec.Type == flowcontrolv1.PriorityLevelEnablementLimited) != (spec.Limited != nil) {
		return nil, errors.New("broken union structure at the top, for Limited")
	}
	if (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) != (spec.Exempt != nil) {
		return nil, errors.New("broken union structure at the top, for Exempt")
	}
	if (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) != (pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt) {
		return nil, errors.New("non-alignment between name and type")
	}
	li := &levelInfo{pl: pl, exempt: spec.Type == flowcontrolv1.PriorityLevelEnablementExempt}
	if spec.Limited != nil {
		if spec.Limited.NominalConcurrencyShares == nil {
			// Upstream dereferences it (plSpecCommons) and would panic;
			// DefaultPriorityLevel always sets it, so this is defensive.
			return nil, errors.New("limited.nominalConcurrencyShares is not set")
		}
		lr := spec.Limited.LimitResponse
		if (lr.Type == flowcontrolv1.LimitResponseTypeReject) != (lr.Queuing == nil) {
			return nil, errors.New("broken union structure for limit response")
		}
		if q := lr.Queuing; q != nil && q.Queues > 0 {
			d, err := NewDealer(int(q.Queues), int(q.HandSize))
			if err != nil {
				return nil, fmt.Errorf("priority level %q has an invalid shuffle sharding config (queues %d, handSize %d): %w", pl.Name, q.Queues, q.HandSize, err)
			}
			li.dealer = d
		}
		if lr.Type == flowcontrolv1.LimitResponseTypeQueue {
			li.numQueues = lr.Queuing.Queues
		}
	}
	return li, nil
}

// DefaultFlowSchema returns fs with the defaults the API server applies
// (k8s.io/kubernetes pkg/apis/flowcontrol/v1/defaults.go:
// SetDefaults_FlowSchemaSpec: matchingPrecedence 0 → 1000). fs is returned
// as is when nothing needs defaulting, otherwise a defaulted copy.
func DefaultFlowSchema(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.FlowSchema {
	if fs.Spec.MatchingPrecedence != 0 {
		return fs
	}
	fs = fs.DeepCopy()
	fs.Spec.MatchingPrecedence = 1000
	return fs
}

// DefaultPriorityLevel returns pl with the defaults the API server applies
// (k8s.io/kubernetes pkg/apis/flowcontrol/v1/defaults.go: exempt shares and
// lendablePercent 0; limited nominalConcurrencyShares 30 and lendablePercent
// 0; queuing handSize 8, queues 64, queueLengthLimit 50). pl is returned as
// is when nothing needs defaulting, otherwise a defaulted copy.
func DefaultPriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
	if !needsDefaults(pl) {
		return pl
	}
	pl = pl.DeepCopy()
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = new(int32)
		}
		if e.LendablePercent == nil {
			e.LendablePercent = new(int32)
		}
	}
	if l := pl.Spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			v := int32(30)
			l.NominalConcurrencyShares = &v
		}
		if l.LendablePercent == nil {
			l.LendablePercent = new(int32)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			if q.HandSize == 0 {
				q.HandSize = 8
			}
			if q.Queues == 0 {
				q.Queues = 64
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = 50
			}
		}
	}
	return pl
}

func needsDefaults(pl *flowcontrolv1.PriorityLevelConfiguration) bool {
	if e := pl.Spec.Exempt; e != nil && (e.NominalConcurrencyShares == nil || e.LendablePercent == nil) {
		return true
	}
	if l := pl.Spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil || l.LendablePercent == nil {
			return true
		}
		if q := l.LimitResponse.Queuing; q != nil && (q.HandSize == 0 || q.Queues == 0 || q.QueueLengthLimit == 0) {
			return true
		}
	}
	return false
}
