package tune

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/fairqueue"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
)

// A client is what the goal speaks of: one identity as the log names it
// (a user or service account), in the FlowSchema and priority level the
// recorded configuration gives its requests. A client whose requests fall
// in several FlowSchemas is one client per FlowSchema.
type client struct {
	User       string
	Groups     []string
	FlowSchema string
	Level      string
	// Recorded429 are the 429s the server answered it in the incident.
	Recorded429 int64
	Requests    int64
	// SeatSeconds are the seats it held × the time it held them in the
	// replay of the recorded configuration: who held the seats.
	SeatSeconds float64
	// rules are the requests it made, for a FlowSchema of its own
	rules profile
}

// profile is what a client's requests were: the resource rules and
// non-resource paths a FlowSchema needs to match them all.
type profile struct {
	verbs, groups, resources, namespaces, paths map[string]bool
	clusterScope                                bool
}

func (p *profile) add(er *engine.Request) {
	if p.verbs == nil {
		p.verbs, p.groups, p.resources, p.namespaces, p.paths = map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	}
	in := &er.Info
	p.verbs[in.Verb] = true
	if !in.IsResourceRequest {
		p.paths[in.Path] = true
		return
	}
	p.groups[in.APIGroup] = true
	r := in.Resource
	if in.Subresource != "" {
		r += "/" + in.Subresource
	}
	p.resources[r] = true
	if in.Namespace == "" {
		p.clusterScope = true
	} else {
		p.namespaces[in.Namespace] = true
	}
}

// key is a client's identity in the maps.
func (c *client) key() string { return c.User + "\x00" + c.FlowSchema }

// Name is how tables name the client.
func (c *client) Name() string {
	if c.User == "" {
		return "(no user) in " + c.FlowSchema
	}
	return c.User
}

// serviceAccount returns NAMESPACE, NAME when the client is a service
// account.
func (c *client) serviceAccount() (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(c.User, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok && ns != "" && name != ""
}

// matches says whether t names the client.
func (c *client) matches(t Target) bool {
	switch t.Kind {
	case TargetUser:
		return c.User == t.Name
	case TargetServiceAccount:
		ns, name, _ := strings.Cut(t.Name, "/")
		return c.User == "system:serviceaccount:"+ns+":"+name
	case TargetGroup:
		return slices.Contains(c.Groups, t.Name)
	case TargetFlowSchema:
		return c.FlowSchema == t.Name
	case TargetLevel:
		return c.Level == t.Name
	}
	return false
}

// census is the clients of the workload, found in the replay of the
// recorded configuration, and each request's client by its replay ID.
type census struct {
	clients []*client
	// of maps a request's ID (fairqueue.Outcome.ID, the same in every
	// replay of the prepared tape) to its client's index, -1 for none
	of []int32
	// anyStatus says whether the workload records what the server
	// answered
	anyStatus bool
}

// censusObserver builds the census from the baseline replay.
type censusObserver struct {
	cfg    *engine.Config
	parsed engine.RequestCache
	memo   engine.ClassifyMemo
	index  map[string]int32
	c      *census
	t      *tally
}

func newCensusObserver(cfg *engine.Config) *censusObserver {
	return &censusObserver{cfg: cfg, index: map[string]int32{}, c: &census{}, t: newTally(nil)}
}

func (o *censusObserver) Observe(w *workload.Request, out *fairqueue.Outcome) {
	for int64(len(o.c.of)) <= out.ID {
		o.c.of = append(o.c.of, -1)
	}
	er, err := o.parsed.Parse(w.Method, w.URI, engine.Identity{User: w.User, Groups: w.Groups})
	if err != nil {
		return
	}
	rf, err := fairqueue.ClassifyRecordedMemo(&o.memo, o.cfg, w, &er)
	if err != nil {
		return
	}
	user := w.User
	if !w.UserKnown {
		user = ""
	}
	k := user + "\x00" + rf.FlowSchema
	i, ok := o.index[k]
	if !ok {
		i = int32(len(o.c.clients))
		o.index[k] = i
		o.c.clients = append(o.c.clients, &client{User: user, Groups: slices.Clone(w.Groups), FlowSchema: rf.FlowSchema, Level: rf.PriorityLevel})
	}
	cl := o.c.clients[i]
	o.c.of[out.ID] = i
	cl.Requests++
	if w.Status != 0 {
		o.c.anyStatus = true
	}
	if w.Status == 429 {
		cl.Recorded429++
	}
	if out.Reason == fairqueue.Executed {
		seats := float64(max(w.InitialSeats, 1))
		cl.SeatSeconds += seats * (w.ServiceTime + w.QueuedOverhead).Seconds()
	}
	if w.UserKnown {
		cl.rules.add(&er)
	}
	o.t.observeAs(i, out)
}

// tally is one replay's figures per client: 429s and the waits of the
// dispatched requests.
type tally struct {
	of       []int32
	rejected []int64
	served   []int64
	waits    [][]time.Duration
}

func newTally(c *census) *tally {
	t := &tally{}
	if c != nil {
		t.of = c.of
		t.rejected = make([]int64, len(c.clients))
		t.served = make([]int64, len(c.clients))
		t.waits = make([][]time.Duration, len(c.clients))
		for i, cl := range c.clients {
			// room for every request of the client: no growing
			t.waits[i] = make([]time.Duration, 0, cl.Requests)
		}
	}
	return t
}

// Observe implements simulate.Observer.
func (t *tally) Observe(_ *workload.Request, out *fairqueue.Outcome) {
	if out.ID < 0 || out.ID >= int64(len(t.of)) {
		return
	}
	if i := t.of[out.ID]; i >= 0 {
		t.observeAs(i, out)
	}
}

// ObserveOutcome implements simulate.OutcomeObserver.
func (t *tally) ObserveOutcome(out *fairqueue.Outcome) { t.Observe(nil, out) }

func (t *tally) observeAs(i int32, out *fairqueue.Outcome) {
	for int(i) >= len(t.rejected) {
		t.rejected = append(t.rejected, 0)
		t.served = append(t.served, 0)
		t.waits = append(t.waits, nil)
	}
	if out.Reason == fairqueue.Executed {
		t.served[i]++
		t.waits[i] = append(t.waits[i], out.Start-out.Arrival)
	} else {
		t.rejected[i]++
	}
}

// figures are one client's figures in one replay.
type figures struct {
	Rejected int64 `json:"rejected"`
	Served   int64 `json:"served"`
	// WaitP99Seconds is the p99 of the queue waits of its dispatched
	// requests (nil when none was dispatched: printed "-").
	WaitP99Seconds *float64 `json:"waitP99Seconds"`
}

// figures returns each client's figures.
func (t *tally) figures(n int) []figures {
	out := make([]figures, n)
	for i := range n {
		if i >= len(t.rejected) {
			continue
		}
		out[i] = figures{Rejected: t.rejected[i], Served: t.served[i]}
		if ws := t.waits[i]; len(ws) > 0 {
			slices.Sort(ws)
			// the nearest rank
			k := int(math.Ceil(0.99*float64(len(ws)))) - 1
			v := ws[max(k, 0)].Seconds()
			out[i].WaitP99Seconds = &v
		}
	}
	return out
}

// observer adapts a tally to simulate.Observer.
var _ simulate.OutcomeObserver = (*tally)(nil)

// sortedClients returns the indexes of the clients, busiest seat holders
// first, then by name.
func sortedClients(cs []*client, keep func(*client) bool) []int {
	var out []int
	for i, c := range cs {
		if keep(c) {
			out = append(out, i)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		x, y := cs[out[a]], cs[out[b]]
		if x.SeatSeconds != y.SeatSeconds {
			return x.SeatSeconds > y.SeatSeconds
		}
		return x.key() < y.key()
	})
	return out
}
