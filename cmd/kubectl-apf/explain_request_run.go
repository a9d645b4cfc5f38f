package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
)

// Run explains the request and prints the explanation.
func (o *ExplainRequestOptions) Run(ctx context.Context) error {
	if o.messageOnly() {
		if o.message.APF {
			// about APF, but naming no request to classify: say what the
			// message means, and what to add for the request's level
			fmt.Fprintf(o.ErrOut, "note: %s\n", explain.MessageNeedsRequest(o.message))
		}
		return o.print(o.message, func(w io.Writer) error { return explain.WriteMessageText(w, o.message) })
	}
	r, err := engine.ParseRequest(o.verb, o.path, *o.identity)
	if err != nil {
		return err
	}
	st, err := o.Load(ctx, load.Request{Parts: dump.PartPriorityLevels | dump.PartQueues | dump.PartRequests | dump.PartMetrics,
		ConfigOnlyFallback: true, ServerConcurrency: o.Server.Concurrency, InferConcurrency: true, Stdin: o.In, NeedObjects: "requests cannot be classified", AtWatchEnd: true})
	if err != nil {
		return err
	}
	for _, n := range append(o.resourceNotes, st.Notes...) {
		fmt.Fprintln(o.ErrOut, n)
	}
	in := explain.Input{Config: st.Config(), ServerConcurrencyLimit: st.ServerConcurrency, ServerRequestTimeout: o.Server.RequestTimeout,
		Release: st.Release, ReleaseFrom: st.ReleaseFrom}
	lives := st.Live
	if len(lives) == 0 {
		// a dump_requests alone (a paste from an issue) is state too: the
		// requests waiting and executing in the request's level
		for _, s := range st.Snapshots {
			if len(s.RequestDump) > 0 {
				lives = append(lives, s)
			}
		}
	}
	ex := explain.ExplainOnEach(in, lives, r, o.givenGroups)
	if o.From != "" && len(lives) > 0 {
		ex.StateFrom = capturedIn(o.From, lives[0])
	}
	if o.message != nil {
		ex.Notes = append(ex.Notes, o.message.Explanation)
		if o.recorded.Request == nil && !o.Probe {
			explain.CompareTrace(ex, o.message, namesByUID(st.BaseFlowSchemas, st.BasePriorityLevels))
		}
	}
	if o.recorded.Request != nil {
		if err := o.explainRecorded(ctx, st, ex); err != nil {
			return err
		}
	}
	if o.Probe {
		if err := o.probe(ctx, r, ex, namesByUID(st.BaseFlowSchemas, st.BasePriorityLevels)); err != nil {
			return err
		}
	}
	return o.print(ex, func(w io.Writer) error { return explain.WriteText(w, ex) })
}

func (o *ExplainRequestOptions) print(v any, text func(io.Writer) error) error {
	return printObject(o.Out, o.Flags, v, text)
}

// probe sends r impersonating its identity (pkg/fetch) and records the
// server's classification headers in ex.
func (o *ExplainRequestOptions) probe(ctx context.Context, r engine.Request, ex *explain.Explanation, names map[string]string) error {
	res, err := fetch.Probe(ctx, o.ProbeConfig, fetch.ProbeRequest{Method: r.Method, URL: r.URL, List: r.Info.Verb == "list",
		User: r.Identity.User, Groups: r.Identity.Groups})
	if err != nil {
		return err
	}
	ex.CompareUIDs("probe", res.FlowSchemaUID, res.PriorityLevelUID, res.Present, res.Status, names)
	return nil
}

// capturedIn names the --from input a snapshot was read from and when it
// was captured (and, for a raw dump, where that time comes from).
func capturedIn(from string, s *dump.Snapshot) string {
	name := from
	if from == dump.StdinPath {
		name = "standard input"
	}
	if s.CapturedAt.IsZero() {
		return name
	}
	at := name + ", captured " + s.CapturedAt.UTC().Format(time.RFC3339)
	if s.CapturedAtFrom != "" {
		at += " (" + s.CapturedAtFrom + ")"
	}
	return at
}
