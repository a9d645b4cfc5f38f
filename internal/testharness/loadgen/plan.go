package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// PlanFlow is one identity of a Plan: it sends bursts of GETs of Path at
// random (Poisson) times.
type PlanFlow struct {
	// Config authenticates the flow's identity.
	Config *rest.Config
	// Path is requested with GET (default: the load namespace's ConfigMaps).
	Path string
	// Rate is the mean number of bursts per second.
	Rate float64
	// Burst is the largest burst; each burst sends 1 to Burst requests at once.
	Burst int
}

// PlanOptions describe an open-loop load: every request has a time of its
// own, drawn from Seed, so that running the same plan twice sends the same
// requests at the same offsets whatever the server answers. This is what a
// what-if needs: a prediction made from one run is checked by re-running the
// same plan on the changed configuration.
type PlanOptions struct {
	Seed     uint64
	Duration time.Duration
	Flows    []PlanFlow
	// Names resolves PF header UIDs to object names (see Names).
	Names map[string]string
	// Start, when set, is the plan's time zero (RunPlan waits for it);
	// zero means when RunPlan is called.
	Start time.Time
	// Schedule, when set, is called once the load is ready to leave (the
	// client processes started) and returns the plan's time zero, in place
	// of Start.
	Schedule func() (time.Time, error)
	// Processes, when above zero, sends the shots from that many client
	// processes (this program re-executed, see RunChildIfAsked), dealt to
	// them in turn, instead of from goroutines of this process: clients
	// that compete for the CPU as separate processes do. The processes
	// inherit this process's cgroup.
	Processes int
}

// Shot is one planned request.
type Shot struct {
	At   time.Duration
	Flow int
}

// Shots returns the plan's requests in time order. It depends only on the
// seed, the duration and the flows' rates and bursts.
func (o PlanOptions) Shots() []Shot {
	var shots []Shot
	for f, fl := range o.Flows {
		if fl.Rate <= 0 {
			continue
		}
		// one stream per flow, so that adding a flow leaves the others' times alone
		rng := rand.New(rand.NewPCG(o.Seed, uint64(f)+1))
		burst := max(fl.Burst, 1)
		for at := time.Duration(rng.ExpFloat64() / fl.Rate * float64(time.Second)); at < o.Duration; at += time.Duration(rng.ExpFloat64() / fl.Rate * float64(time.Second)) {
			n := 1 + rng.IntN(burst)
			for range n {
				shots = append(shots, Shot{At: at, Flow: f})
			}
		}
	}
	sort.SliceStable(shots, func(i, j int) bool { return shots[i].At < shots[j].At })
	return shots
}

// PlanReport is what the server answered to a plan.
type PlanReport struct {
	Report
	// RejectedByPriority counts the 429s per priority level (from the
	// X-Kubernetes-PF-PriorityLevel-UID header).
	RejectedByPriority map[string]int
	// Late counts requests that left more than 50 ms after their planned
	// time (the load generator itself was starved of CPU).
	Late int
	// Started is the plan's time zero.
	Started time.Time
}

// count adds one response, late or not.
func (r *PlanReport) count(res Result, late bool) {
	r.add(res)
	if late {
		r.Late++
	}
	if res.Err == nil && res.Status == http.StatusTooManyRequests {
		r.RejectedByPriority[res.Priority]++
	}
}

// RunPlan sends the plan's requests, each at its time and in a goroutine of
// its own (or of a client process, with Processes), and waits for every
// answer (bounded by the duration plus 2 minutes, the client timeout).
func RunPlan(ctx context.Context, o PlanOptions) (*PlanReport, error) {
	urls := make([]string, len(o.Flows))
	for i, fl := range o.Flows {
		p := fl.Path
		if p == "" {
			p = "/api/v1/namespaces/" + Namespace + "/configmaps"
		}
		urls[i] = fl.Config.Host + p
	}
	shots := o.Shots()
	rep := &PlanReport{Report: Report{ByStatus: map[int]int{}, RetryAfter: map[string]int{}, ByPriority: map[string]int{}, ByFlowSched: map[string]int{}}, RejectedByPriority: map[string]int{}}
	if o.Processes > 0 {
		if err := runPlanProcesses(ctx, o, urls, shots, rep); err != nil {
			return nil, err
		}
	} else if err := runPlanGoroutines(ctx, o, urls, shots, rep); err != nil {
		return nil, err
	}
	rep.Rounds = 1
	rep.Elapsed = time.Since(rep.Started)
	if rep.Sent != len(shots) {
		return rep, fmt.Errorf("sent %d of %d planned requests", rep.Sent, len(shots))
	}
	return rep, nil
}

func runPlanGoroutines(ctx context.Context, o PlanOptions, urls []string, shots []Shot, rep *PlanReport) error {
	clients := make([]*http.Client, len(o.Flows))
	for i, fl := range o.Flows {
		rt, err := rest.TransportFor(fl.Config)
		if err != nil {
			return err
		}
		clients[i] = &http.Client{Transport: rt, Timeout: 2 * time.Minute}
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	start := time.Now()
	switch {
	case o.Schedule != nil:
		var err error
		if start, err = o.Schedule(); err != nil {
			return err
		}
	case !o.Start.IsZero():
		start = o.Start
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(start)):
	}
	rep.Started = start
	for _, s := range shots {
		if d := time.Until(start.Add(s.At)); d > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		late := time.Since(start.Add(s.At)) > lateAfter
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := send(ctx, clients[s.Flow], urls[s.Flow], s.Flow, o.Names)
			mu.Lock()
			defer mu.Unlock()
			rep.count(r, late)
		}()
	}
	wg.Wait()
	return nil
}
