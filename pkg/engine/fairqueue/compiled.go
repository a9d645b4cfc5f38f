package fairqueue

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// Compiled is a workload read once, in memory, for replaying many
// configurations: what Replay does to a record that does not depend on the
// configuration (reading and parsing it, the bypass, the execution time,
// the wait limit, the arrival of a 429 moved to when it was answered, the
// order in which the requests reach the simulator) is done once, by
// Compile. What does depend on it, the classification, is done once per
// class of requests (those classification cannot tell apart: the fields a
// ClassifyMemo key holds, or for a request without identity its recorded
// FlowSchema and level, user agent, host and namespace), not once per
// request.
//
// Compiled.Replay(cfg) gives the Result and the WorkloadStats' Skipped that
// Replay(src, cfg, nil, opts) gives, and the same outcomes in the same
// order, over the same records (the tests compare them). It does not give
// the Agreement, FirstSkip, or the records to OnOutcome. It is safe for
// concurrent use once compiled.
type Compiled struct {
	opts ReplayOptions
	// base is the configuration-free part of each emitted request, in the
	// order Replay hands them to the simulator; at its arrival before
	// the running maximum, class its class, work its work key (-1 when
	// ReplayConfig.Work cannot change it), noWait when its wait limit is
	// refused
	base   []Request
	at     []int64
	class  []int32
	work   []int32
	noWait []bool
	// classes, in the order of their first record
	classes []compiledClass
	works   []compiledWork
	stats   WorkloadStats
	// timeout is the request timeout the wait limits were computed with
	timeout time.Duration
}

type compiledClass struct {
	w  workload.Request // the fields ClassifyRecorded reads
	er engine.Request
	// workOld is the level the compiling configuration gives the class,
	// as ReplayConfig.Work reads it (the recorded one without identity)
	workOld string
}

type compiledWork struct {
	w  workload.Request
	er engine.Request
}

// Len is how many requests reach the simulator.
func (c *Compiled) Len() int { return len(c.base) }

// Compile reads src as Replay reads it under cfg (cfg.Work's "before"
// configuration must be cfg.Config: the level it reads of a request is
// cfg's).
func Compile(src workload.Reader, cfg ReplayConfig, opts ReplayOptions) (*Compiled, error) {
	rp, err := newReplayer(cfg, nil, opts)
	if err != nil {
		return nil, err
	}
	cm := &Compiled{opts: opts, timeout: requestTimeout(cfg)}
	rp.compile = &compiling{c: cm, classIx: map[string]int32{}, workIx: map[string]int32{}, cfg: cfg.Config, timeout: cm.timeout}
	if err := rp.read(src); err != nil {
		return nil, err
	}
	if err := rp.flush(); err != nil {
		return nil, err
	}
	cm.stats = rp.rep.Workload
	return cm, nil
}

// compiling is Compile's state in the replayer.
type compiling struct {
	c       *Compiled
	cfg     *engine.Config
	classIx map[string]int32
	workIx  map[string]int32
	timeout time.Duration
	memo    engine.ClassifyMemo
	key     strings.Builder
}

// record keeps a parsed record: its class and work key go to p.
func (cp *compiling) record(w *workload.Request, er *engine.Request, p *pendingReq, base Request) {
	k := &cp.key
	k.Reset()
	if w.UserKnown {
		k.WriteString("K\x00")
		k.WriteString(er.Identity.User)
		for _, g := range er.Identity.Groups {
			k.WriteString("\x00g")
			k.WriteString(g)
		}
		k.WriteString("\x01")
		in := &er.Info
		if in.IsResourceRequest {
			fmt.Fprintf(k, "R\x00%s\x00%s\x00%s\x00%s\x00%s", in.Verb, in.Namespace, in.APIGroup, in.Resource, in.Subresource)
		} else {
			fmt.Fprintf(k, "N\x00%s\x00%s\x00%s", in.Verb, in.Namespace, in.Path)
		}
	} else {
		fmt.Fprintf(k, "U\x00%s\x00%s\x00%s\x00%s\x00%s", w.FlowSchema, w.PriorityLevel, w.UserAgent, hostOf(w.SourceIP), er.Info.Namespace)
	}
	ck := k.String()
	ci, ok := cp.classIx[ck]
	if !ok {
		ci = int32(len(cp.c.classes))
		cp.classIx[ck] = ci
		cc := compiledClass{w: classFields(w), er: *er}
		cc.workOld = w.PriorityLevel
		if w.UserKnown {
			cc.workOld = cp.memo.Classify(cp.cfg, er).PriorityLevel.Name
		}
		cp.c.classes = append(cp.c.classes, cc)
	}
	p.class = ci
	p.work = -1
	switch er.Info.Verb {
	case "list", "watch", "create", "update", "patch", "delete":
		wk := ck + "\x02" + w.Method + "\x00" + w.URI
		wi, ok := cp.workIx[wk]
		if !ok {
			wi = int32(len(cp.c.works))
			cp.workIx[wk] = wi
			cp.c.works = append(cp.c.works, compiledWork{w: classFields(w), er: *er})
		}
		p.work = wi
	}
	if wl, err := engine.RequestWaitLimit(*er, cp.timeout); err == nil {
		base.WaitLimit = wl
	} else {
		p.noWait = true
	}
	p.reqs[0] = base
}

// classFields is the part of a record ClassifyRecorded and
// ReplayConfig.Work read.
func classFields(w *workload.Request) workload.Request {
	return workload.Request{UserKnown: w.UserKnown, User: w.User, Groups: append([]string(nil), w.Groups...), FlowSchema: w.FlowSchema,
		PriorityLevel: w.PriorityLevel, UserAgent: w.UserAgent, SourceIP: w.SourceIP, Source: w.Source, Method: w.Method, URI: w.URI}
}

func requestTimeout(cfg ReplayConfig) time.Duration {
	if cfg.RequestTimeout == 0 {
		return engine.DefaultServerRequestTimeout
	}
	return cfg.RequestTimeout
}

// emit keeps p's request in the order the simulator would get it.
func (cp *compiling) emit(p *pendingReq) {
	c := cp.c
	c.base = append(c.base, p.reqs[0])
	c.at = append(c.at, int64(p.at))
	c.class = append(c.class, p.class)
	c.work = append(c.work, p.work)
	c.noWait = append(c.noWait, p.noWait)
}

// classified is one class under the replayed configuration.
type classified struct {
	ok        bool
	level     int
	flow      int32
	hash      uint64
	levelName string
	// sameWork: Work leaves its requests as they are
	sameWork bool
}

// Replay replays the compiled workload against cfg, as Replay(src, cfg,
// nil, opts) would (see Compiled). onOutcome, if set, receives every
// outcome as it is decided (the pointer is valid during the call).
func (c *Compiled) Replay(ctx context.Context, cfg ReplayConfig, onOutcome func(*Outcome)) (*Report, error) {
	if requestTimeout(cfg) != c.timeout {
		return nil, fmt.Errorf("the workload was compiled for a request timeout of %v, not %v", c.timeout, requestTimeout(cfg))
	}
	ru, err := newRun(cfg, onOutcome)
	if err != nil {
		return nil, fmt.Errorf("preparing the replay: %w", err)
	}
	// the skips of Compile are those of unparsable records; those of
	// classification are counted here
	rep := &Report{Workload: c.stats}
	// each class under cfg, its flows numbered in the order of their
	// first request, as toSim numbers them
	cls := make([]classified, len(c.classes))
	var memo engine.ClassifyMemo
	for i := range c.classes {
		cc := &c.classes[i]
		rf, err := ClassifyRecordedMemo(&memo, cfg.Config, &cc.w, &cc.er)
		if err != nil {
			continue
		}
		li, ok := ru.levelIx[rf.PriorityLevel]
		if !ok {
			continue
		}
		cls[i] = classified{ok: true, level: li, hash: rf.Hash, levelName: rf.PriorityLevel, flow: ru.flow(li, rf.FlowSchema, rf.Distinguisher)}
		cls[i].sameWork = cfg.Work == nil || (cfg.SameWork != nil && cfg.SameWork(cc.workOld, rf.PriorityLevel))
	}
	var lastAdded int64
	sp := cfg.Speed
	// one request, filled again for each: Add copies it
	var sr Request
	for i := range c.base {
		if i&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		k := &cls[c.class[i]]
		if !k.ok || c.noWait[i] {
			rep.Workload.Skipped++
			continue
		}
		sr = c.base[i]
		sr.Level, sr.Flow, sr.Hash = k.level, k.flow, k.hash
		if !k.sameWork && c.work[i] >= 0 {
			wk := &c.works[c.work[i]]
			cfg.Work(&wk.w, &wk.er, k.levelName, &sr)
		}
		if cfg.Unstretch {
			sr.unstretch()
		}
		if sp > 0 && sp != 1 {
			sr.ServiceTime = time.Duration(float64(sr.ServiceTime) / sp)
			sr.QueuedOverhead = time.Duration(float64(sr.QueuedOverhead) / sp)
		}
		at := max(c.at[i], lastAdded)
		lastAdded = at
		sr.Arrival = time.Duration(at)
		if err := ru.sim.Add(&sr); err != nil {
			return nil, err
		}
	}
	ru.sim.Drain()
	rep.Result = *ru.sim.Result()
	return rep, nil
}
