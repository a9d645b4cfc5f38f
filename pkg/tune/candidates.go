package tune

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// The families of remedies (docs/tune.md).
const (
	FamilyShares    = "shares"
	FamilyBorrowing = "borrowing"
	FamilyLending   = "lending"
	FamilyIsolate   = "isolate"
	FamilyMove      = "move"
	FamilyQueues    = "queues"
)

// edit is one remedy applied to a draft of the configuration.
type edit struct {
	family string
	// words say the change as the table prints it
	words string
	// level is the level the remedy is for, client the client it routes
	// (isolate), schema the FlowSchema it moves (move)
	level, client, schema string
	apply                 func(*draft) error
	// steps are the numbers it moves, for a remedy of numbers alone
	// (borrowing, lending, queues): another of the same knobs moving each
	// no further is a smaller step of it (markRedundant)
	steps []step
}

// step is one number a remedy moves: a field of an object, from → to.
type step struct {
	knob     string
	from, to int32
}

// within says whether step a moves its knob no further than b moves the
// same knob, from the same value in the same direction.
func (a step) within(b step) bool {
	da, db := int64(a.to)-int64(a.from), int64(b.to)-int64(b.from)
	return a.knob == b.knob && a.from == b.from && (da > 0) == (db > 0) && abs64(da) <= abs64(db)
}

func abs64(v int64) int64 { return max(v, -v) }

// draft is a configuration being changed: copies of the objects a remedy
// touches, the others shared with the recorded configuration.
type draft struct {
	fs      []*flowcontrolv1.FlowSchema
	pl      []*flowcontrolv1.PriorityLevelConfiguration
	changed map[ObjectKey]bool
	created map[ObjectKey]bool
}

func newDraft(w *world) *draft {
	return &draft{fs: slices.Clone(w.fs), pl: slices.Clone(w.pl), changed: map[ObjectKey]bool{}, created: map[ObjectKey]bool{}}
}

// level returns a copy of the level to change, nil when there is none.
func (d *draft) level(name string) *flowcontrolv1.PriorityLevelConfiguration {
	for i, pl := range d.pl {
		if pl.Name == name {
			k := ObjectKey{KindPriorityLevel, name}
			if !d.changed[k] {
				d.pl[i] = pl.DeepCopy()
				d.changed[k] = true
			}
			return d.pl[i]
		}
	}
	return nil
}

// schema returns a copy of the FlowSchema to change, nil when there is none.
func (d *draft) schema(name string) *flowcontrolv1.FlowSchema {
	for i, fs := range d.fs {
		if fs.Name == name {
			k := ObjectKey{KindFlowSchema, name}
			if !d.changed[k] {
				d.fs[i] = fs.DeepCopy()
				d.changed[k] = true
			}
			return d.fs[i]
		}
	}
	return nil
}

func (d *draft) addLevel(pl *flowcontrolv1.PriorityLevelConfiguration) error {
	if slices.ContainsFunc(d.pl, func(o *flowcontrolv1.PriorityLevelConfiguration) bool { return o.Name == pl.Name }) {
		return fmt.Errorf("priority level %s exists", pl.Name)
	}
	k := ObjectKey{KindPriorityLevel, pl.Name}
	d.pl = append(d.pl, pl)
	d.changed[k], d.created[k] = true, true
	return nil
}

func (d *draft) addSchema(fs *flowcontrolv1.FlowSchema) error {
	if slices.ContainsFunc(d.fs, func(o *flowcontrolv1.FlowSchema) bool { return o.Name == fs.Name }) {
		return fmt.Errorf("FlowSchema %s exists", fs.Name)
	}
	k := ObjectKey{KindFlowSchema, fs.Name}
	d.fs = append(d.fs, fs)
	d.changed[k], d.created[k] = true, true
	return nil
}

// world is what the candidates are written from: the recorded
// configuration, the server, the incident's levels and clients.
type world struct {
	fs  []*flowcontrolv1.FlowSchema
	pl  []*flowcontrolv1.PriorityLevelConfiguration
	cfg *engine.Config
	scl int
	// limits are the recorded configuration's seats per level
	limits map[string]engine.LevelLimits
	// peak is each level's most seats in use in the replay of the
	// recorded configuration, rejected its rejections
	peak     map[string]int
	rejected map[string]int64
	// starved are the levels of the protected clients that were rejected
	// or waited, most 429s first
	starved []string
	// noisy are, per starved level, the clients not protected that held
	// its seats, most seat-seconds first
	noisy   map[string][]*client
	clients []*client
	// fixed are the objects a candidate may not change: --keep and the
	// mandatory objects
	fixed map[ObjectKey]string
}

func (w *world) plByName(name string) *flowcontrolv1.PriorityLevelConfiguration {
	for _, pl := range w.pl {
		if pl.Name == name {
			return pl
		}
	}
	return nil
}

func limited(pl *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.LimitedPriorityLevelConfiguration {
	if pl == nil || pl.Spec.Type != flowcontrolv1.PriorityLevelEnablementLimited {
		return nil
	}
	return pl.Spec.Limited
}

func shares(l *flowcontrolv1.LimitedPriorityLevelConfiguration) int32 {
	if l.NominalConcurrencyShares == nil {
		return 30 // upstream's default
	}
	return *l.NominalConcurrencyShares
}

// donors are the levels that may give shares or lend seats to level:
// limited, neither fixed nor starved, the idlest in the recorded replay
// first (its peak seats in use against its nominal seats), then by name.
func (w *world) donors(level string) []string {
	var out []string
	for _, pl := range w.pl {
		l := limited(pl)
		if l == nil || pl.Name == level || slices.Contains(w.starved, pl.Name) || w.fixed[ObjectKey{KindPriorityLevel, pl.Name}] != "" || shares(l) < 2 || w.rejected[pl.Name] > 0 {
			continue
		}
		out = append(out, pl.Name)
	}
	use := func(n string) float64 {
		return float64(w.peak[n]) / float64(max(w.limits[n].NominalCL, 1))
	}
	sort.SliceStable(out, func(a, b int) bool {
		if ua, ub := use(out[a]), use(out[b]); ua != ub {
			return ua < ub
		}
		// the largest first: a half of its shares leaves it the most seats
		if sa, sb := w.limits[out[a]].Shares, w.limits[out[b]].Shares; sa != sb {
			return sa > sb
		}
		return out[a] < out[b]
	})
	return out
}

// totalShares sums the shares of every level (as engine.Limits).
func (w *world) totalShares() int64 {
	var n int64
	for _, l := range w.limits {
		n += int64(l.Shares)
	}
	return n
}

// sharesEdit moves shares to level from the donors until it gets seats
// nominal seats: each donor gives at most half of its shares, the idlest
// first. ok is false when the donors cannot give enough.
func (w *world) sharesEdit(level string, seats int) (edit, bool) {
	pl := limited(w.plByName(level))
	if pl == nil {
		return edit{}, false
	}
	s := int64(shares(pl))
	sum := w.totalShares()
	// ceil(scl × (s+Δ) / Σ) ≥ seats when scl × (s+Δ) / Σ > seats−1
	need := (int64(seats)-1)*sum/int64(w.scl) + 1 - s
	if need <= 0 {
		return edit{}, false
	}
	give := map[string]int32{}
	left := need
	var from []string
	for _, d := range w.donors(level) {
		if left == 0 {
			break
		}
		ds := int64(shares(limited(w.plByName(d))))
		g := min(ds/2, left)
		if g <= 0 {
			continue
		}
		give[d] = int32(g)
		left -= g
		from = append(from, fmt.Sprintf("%s %d→%d", d, ds, ds-g))
	}
	if left > 0 {
		return edit{}, false
	}
	words := fmt.Sprintf("%s: %d→%d shares (%d→%d nominal seats), taken from %s", level, s, s+need, w.limits[level].NominalCL, seats, strings.Join(from, ", "))
	return edit{family: FamilyShares, level: level, words: words, apply: func(d *draft) error {
		p := d.level(level)
		p.Spec.Limited.NominalConcurrencyShares = ptr.To(int32(s + need))
		for _, name := range slices.Sorted(maps.Keys(give)) {
			q := d.level(name)
			q.Spec.Limited.NominalConcurrencyShares = ptr.To(shares(q.Spec.Limited) - give[name])
		}
		return nil
	}}, true
}

// borrowingEdit lets level borrow up to pct percent of its nominal seats.
func (w *world) borrowingEdit(level string, pct int32) (edit, bool) {
	l := limited(w.plByName(level))
	if l == nil || l.BorrowingLimitPercent == nil || *l.BorrowingLimitPercent >= pct {
		return edit{}, false
	}
	words := fmt.Sprintf("%s: borrowingLimitPercent %d→%d", level, *l.BorrowingLimitPercent, pct)
	return edit{family: FamilyBorrowing, level: level, words: words, steps: []step{{level + ".borrowingLimitPercent", *l.BorrowingLimitPercent, pct}}, apply: func(d *draft) error {
		d.level(level).Spec.Limited.BorrowingLimitPercent = ptr.To(pct)
		return nil
	}}, true
}

// lendingEdit has the n idlest donors of level lend pct percent of their
// seats.
func (w *world) lendingEdit(level string, n int, pct int32) (edit, bool) {
	var names, words []string
	var steps []step
	for _, dn := range w.donors(level) {
		if len(names) == n {
			break
		}
		l := limited(w.plByName(dn))
		cur := int32(0)
		if l.LendablePercent != nil {
			cur = *l.LendablePercent
		}
		if cur >= pct {
			continue
		}
		names = append(names, dn)
		words = append(words, fmt.Sprintf("%s %d→%d", dn, cur, pct))
		steps = append(steps, step{dn + ".lendablePercent", cur, pct})
	}
	if len(names) == 0 {
		return edit{}, false
	}
	return edit{family: FamilyLending, level: level, words: "lendablePercent " + strings.Join(words, ", "), steps: steps, apply: func(d *draft) error {
		for _, n := range names {
			d.level(n).Spec.Limited.LendablePercent = ptr.To(pct)
		}
		return nil
	}}, true
}

// queuesEdit changes level's queuing.
func (w *world) queuesEdit(level string, queues, hand, length int32) (edit, bool) {
	l := limited(w.plByName(level))
	if l == nil || l.LimitResponse.Queuing == nil {
		return edit{}, false
	}
	q := *l.LimitResponse.Queuing
	if q.Queues == queues && q.HandSize == hand && q.QueueLengthLimit == length {
		return edit{}, false
	}
	var parts []string
	var steps []step
	for _, f := range []struct {
		name     string
		from, to int32
	}{{"queues", q.Queues, queues}, {"handSize", q.HandSize, hand}, {"queueLengthLimit", q.QueueLengthLimit, length}} {
		if f.from != f.to {
			parts = append(parts, fmt.Sprintf("%s %d→%d", f.name, f.from, f.to))
			steps = append(steps, step{level + "." + f.name, f.from, f.to})
		}
	}
	return edit{family: FamilyQueues, level: level, words: level + ": " + strings.Join(parts, ", "), steps: steps, apply: func(d *draft) error {
		d.level(level).Spec.Limited.LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: length}
		return nil
	}}, true
}

var nameUnsafe = regexp.MustCompile(`[^a-z0-9.-]+`)

// objectName makes a DNS subdomain name of "tune-" and s.
func objectName(s string) string {
	s = strings.Trim(nameUnsafe.ReplaceAllString(strings.ToLower(s), "-"), "-.")
	s = strings.TrimPrefix(s, "system-serviceaccount-")
	if len(s) > 50 {
		s = strings.Trim(s[:50], "-.")
	}
	if s == "" {
		s = "client"
	}
	return "tune-" + s
}

// schemaFor writes a FlowSchema that matches the client's requests alone,
// as the log shows them: its identity as the subject, the verbs, API
// groups, resources and namespaces (or paths) it used, ahead of the
// FlowSchema that matched it, distinguished by user.
func (w *world) schemaFor(c *client, name, level string) (*flowcontrolv1.FlowSchema, bool) {
	var matched *flowcontrolv1.FlowSchema
	for _, fs := range w.cfg.FlowSchemas {
		if fs.Name == c.FlowSchema {
			matched = fs
		}
	}
	if matched == nil || c.User == "" || len(c.rules.verbs) == 0 {
		return nil, false
	}
	prec := matched.Spec.MatchingPrecedence - 1
	if prec < 1 {
		return nil, false
	}
	// no tie with another FlowSchema's precedence
	for taken := true; taken && prec >= 1; {
		taken = false
		for _, fs := range w.cfg.FlowSchemas {
			if fs.Spec.MatchingPrecedence == prec {
				taken = true
				prec--
				break
			}
		}
	}
	if prec < 1 {
		return nil, false
	}
	subj := flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: c.User}}
	if ns, sa, ok := c.serviceAccount(); ok {
		subj = flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: ns, Name: sa}}
	}
	rule := flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{subj}}
	p := c.rules
	verbs := slices.Sorted(maps.Keys(p.verbs))
	if len(p.resources) > 0 {
		rr := flowcontrolv1.ResourcePolicyRule{Verbs: verbs, APIGroups: slices.Sorted(maps.Keys(p.groups)), Resources: slices.Sorted(maps.Keys(p.resources)),
			ClusterScope: p.clusterScope, Namespaces: slices.Sorted(maps.Keys(p.namespaces))}
		rule.ResourceRules = []flowcontrolv1.ResourcePolicyRule{rr}
	}
	if len(p.paths) > 0 {
		rule.NonResourceRules = []flowcontrolv1.NonResourcePolicyRule{{Verbs: verbs, NonResourceURLs: slices.Sorted(maps.Keys(p.paths))}}
	}
	fs := &flowcontrolv1.FlowSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: "flowcontrol.apiserver.k8s.io/v1", Kind: "FlowSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         prec,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules:                      []flowcontrolv1.PolicyRulesWithSubjects{rule},
		},
	}
	return fs, true
}

// isolateEdit routes the client to a new level of its own with the given
// shares, queued as its current level.
func (w *world) isolateEdit(c *client, sh int32) (edit, bool) {
	name := objectName(c.User)
	fs, ok := w.schemaFor(c, name, name)
	if !ok {
		return edit{}, false
	}
	from := limited(w.plByName(c.Level))
	if from == nil || from.LimitResponse.Queuing == nil {
		return edit{}, false
	}
	// the queuing of upstream's global-default: many queues, so that
	// the client's flows do not crowd each other (the linter's crush
	// risk), and long enough for its bursts
	q := flowcontrolv1.QueuingConfiguration{Queues: 128, HandSize: 6, QueueLengthLimit: max(from.LimitResponse.Queuing.QueueLengthLimit, 50)}
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "flowcontrol.apiserver.k8s.io/v1", Kind: "PriorityLevelConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To(sh),
				LendablePercent:          ptr.To(int32(0)),
				BorrowingLimitPercent:    ptr.To(int32(0)),
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &q},
			},
		},
	}
	words := fmt.Sprintf("route %s (%s) to a new level %s of %d shares, by a FlowSchema %s at precedence %d", c.Name(), strings.Join(fs.Spec.Rules[0].ResourceRules[0].Verbs, ","), name, sh, name, fs.Spec.MatchingPrecedence)
	if len(fs.Spec.Rules[0].ResourceRules) == 0 {
		words = fmt.Sprintf("route %s to a new level %s of %d shares, by a FlowSchema %s at precedence %d", c.Name(), name, sh, name, fs.Spec.MatchingPrecedence)
	}
	return edit{family: FamilyIsolate, level: c.Level, client: c.User, words: words, apply: func(d *draft) error {
		if err := d.addLevel(pl.DeepCopy()); err != nil {
			return err
		}
		return d.addSchema(fs.DeepCopy())
	}}, true
}

// routeEdit routes the client to an existing level by a new FlowSchema.
func (w *world) routeEdit(c *client, level string) (edit, bool) {
	name := objectName(c.User)
	fs, ok := w.schemaFor(c, name, level)
	if !ok {
		return edit{}, false
	}
	words := fmt.Sprintf("route %s to %s, by a new FlowSchema %s at precedence %d", c.Name(), level, name, fs.Spec.MatchingPrecedence)
	return edit{family: FamilyIsolate, level: c.Level, client: c.User, words: words, apply: func(d *draft) error {
		return d.addSchema(fs.DeepCopy())
	}}, true
}

// moveEdit moves a FlowSchema to another level.
func (w *world) moveEdit(schema, from, to string) (edit, bool) {
	if w.fixed[ObjectKey{KindFlowSchema, schema}] != "" {
		return edit{}, false
	}
	return edit{family: FamilyMove, level: from, schema: schema, words: fmt.Sprintf("move FlowSchema %s from %s to %s", schema, from, to), apply: func(d *draft) error {
		d.schema(schema).Spec.PriorityLevelConfiguration.Name = to
		return nil
	}}, true
}

// remedies are the single remedies for the incident, in a fixed order.
func (w *world) remedies() []edit {
	var out []edit
	add := func(e edit, ok bool) {
		if ok {
			out = append(out, e)
		}
	}
	for _, level := range w.starved {
		l := limited(w.plByName(level))
		if l == nil || w.fixed[ObjectKey{KindPriorityLevel, level}] != "" {
			continue
		}
		n := w.limits[level].NominalCL
		seen := map[int]bool{}
		for _, t := range []int{n + 1, n + 2, n + 3, n + 5, int(math.Ceil(1.25 * float64(n))), int(math.Ceil(1.5 * float64(n))), 2 * n, 3 * n, 4 * n} {
			if t > n && !seen[t] {
				seen[t] = true
				add(w.sharesEdit(level, t))
			}
		}
		for _, p := range []int32{50, 100, 200, 400} {
			add(w.borrowingEdit(level, p))
		}
		for _, p := range []int32{50, 90, 100} {
			add(w.lendingEdit(level, 2, p))
		}
		if q := l.LimitResponse.Queuing; q != nil {
			for _, f := range []int32{2, 4, 8} {
				add(w.queuesEdit(level, q.Queues, q.HandSize, min(q.QueueLengthLimit*f, 1000)))
			}
			for _, f := range []int32{2, 4} {
				add(w.queuesEdit(level, min(q.Queues*f, 512), q.HandSize, q.QueueLengthLimit))
			}
			if q.HandSize+1 <= q.Queues {
				add(w.queuesEdit(level, q.Queues, q.HandSize+1, q.QueueLengthLimit))
			}
			add(w.queuesEdit(level, min(q.Queues*2, 512), q.HandSize, min(q.QueueLengthLimit*2, 1000)))
		}
		for i, c := range w.noisy[level] {
			if i == 3 {
				break
			}
			sh := shares(l)
			add(w.isolateEdit(c, sh))
			if sh > 1 {
				add(w.isolateEdit(c, max(sh/2, 1)))
			}
			for j, d := range w.donors(level) {
				if j == 2 {
					break
				}
				add(w.routeEdit(c, d))
			}
		}
		// the FlowSchemas that feed the level, to the idlest levels
		schemas := map[string]bool{}
		for _, c := range w.clients {
			if c.Level == level {
				schemas[c.FlowSchema] = true
			}
		}
		for _, s := range slices.Sorted(maps.Keys(schemas)) {
			for j, d := range w.donors(level) {
				if j == 2 {
					break
				}
				add(w.moveEdit(s, level, d))
			}
		}
	}
	return out
}

// compatible says whether two remedies may be combined: different
// families, and not two that write the same field.
func compatible(a, b edit) bool {
	if a.family == b.family {
		return false
	}
	// routing a client away and moving its FlowSchema are two answers to
	// the same question
	pair := map[string]bool{a.family: true, b.family: true}
	return !(pair[FamilyIsolate] && pair[FamilyMove])
}
