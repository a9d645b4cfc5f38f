package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
	"github.com/kubectl-apf/kubectl-apf/pkg/vlogs"
)

// vlogsRequestFlags are the flags of "explain request --victorialogs
// --audit-id ID": the request is the audit event of that ID in a
// VictoriaLogs, and its moment is reconstructed from the events within
// --victorialogs-margin of it.
type vlogsRequestFlags struct {
	vlogs429Flags
	// Since is how far back the audit ID is looked for.
	Since time.Duration
}

func (v *vlogsRequestFlags) addFlags(f *pflag.FlagSet, configFlags *genericclioptions.ConfigFlags) {
	v.configFlags = configFlags
	f.StringVar(&v.URL, "victorialogs", "", "Read the request of --audit-id, and the requests around it, from this VictoriaLogs (http://victorialogs:9428).")
	f.StringVar(&v.Service, "victorialogs-service", "", "Reach an in-cluster VictoriaLogs through the apiserver's service proxy: NAMESPACE/NAME:PORT.")
	f.StringVar(&v.Query, "victorialogs-query", "", "With --victorialogs: a LogsQL filter that selects the cluster's audit events.")
	f.StringVar(&v.Prefix, "victorialogs-prefix", "", "With --victorialogs: the prefix of the audit event's fields ('log.').")
	f.StringVar(&v.InstanceField, "victorialogs-instance-field", "", "With --victorialogs: the field that names the apiserver instance; then only the request's instance is pulled.")
	f.StringArrayVar(&v.Headers, "victorialogs-header", nil, "With --victorialogs: a header NAME=VALUE sent with every query (repeatable).")
	f.DurationVar(&v.Timeout, "victorialogs-timeout", time.Minute, "With --victorialogs: the longest a query may take.")
	f.DurationVar(&v.Margin, "victorialogs-margin", 2*time.Minute, "With --victorialogs: the events pulled before and after the request.")
	v.Since = 7 * 24 * time.Hour
	f.Var(daysDuration{&v.Since}, "victorialogs-since", "With --victorialogs: how far back from now the audit ID is looked for (24h, 7d).")
}

// validate checks the flags of --victorialogs.
func (v *vlogsRequestFlags) validate(o *ExplainRequestOptions) error {
	switch {
	case o.AuditID == "":
		return errors.New("--victorialogs reads one request: give its --audit-id")
	case o.FromLog != "" || o.FromAudit != "" || len(o.Workloads) > 0:
		return errors.New("--victorialogs is the log: give it without --from-log, --from-audit and --workload")
	case v.Since <= 0:
		return errors.New("--victorialogs-since must be positive")
	}
	return v.check()
}

// source is the store over the window the audit ID is looked for in.
func (v *vlogsRequestFlags) source() (*vlogs.Source, error) {
	client, err := v.open()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &vlogs.Source{Client: client, Mapping: vlogs.Mapping{Prefix: v.Prefix, Instance: v.InstanceField}, Filter: v.Query,
		Start: now.Add(-v.Since), End: now.Add(time.Minute)}, nil
}

// recordedFromVLogs reads the request of --audit-id from the store.
func (o *ExplainRequestOptions) recordedFromVLogs() error {
	if err := o.VLogs.validate(o); err != nil {
		return err
	}
	src, err := o.VLogs.source()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.VLogs.Timeout+10*time.Second)
	defer cancel()
	r, _, err := src.Event(ctx, o.AuditID)
	if err != nil {
		return err
	}
	o.recorded = r
	return nil
}

// explainPastVLogs reconstructs the request's moment from the events the
// store holds around it, as explainPast does from files.
func (o *ExplainRequestOptions) explainPastVLogs(ctx context.Context, st *state.State, ex *explain.Explanation) (bool, error) {
	src, err := o.VLogs.source()
	if err != nil {
		return false, err
	}
	rec := o.recorded
	var found *reconstruct.Fate
	match := func(w *workload.Request) bool { return w.AuditID == rec.AuditID }
	// the request is reconstructed with explain's identity, as explainPast
	// does for files
	identify := o.identifyLike(rec, match)
	opts := reconstruct.Options{Config: st.Config(), ServerConcurrencyLimit: st.ServerConcurrency, RequestTimeout: o.Server.RequestTimeout,
		Release: st.Release, Counts: objectCounts(st), Focus: match, Identify: identify,
		OnFate: func(f *reconstruct.Fate) {
			if found == nil && f.Snapshot != nil {
				g := *f
				g.Record = nil
				found = &g
			}
		}}
	res, pull, err := vlogs.ReconstructAround(ctx, src, rec, vlogs.ReconstructOptions{Margin: o.VLogs.Margin, Reconstruct: opts,
		Wrap: func(r workload.Reader) workload.Reader { return logs.Cancellable(ctx, r) }})
	if err != nil {
		return false, err
	}
	if pull.Partial {
		ex.Notes = append(ex.Notes, fmt.Sprintf("partial: a storage node of %s did not answer (%s): the events it holds are missing from the reconstruction", pull.Where, pull.PartialCause))
	}
	ex.Notes = append(ex.Notes, fmt.Sprintf("note: %s: pulled the %d events within %s of the request (%d bytes)", pull.Where, pull.Pulled.Events, o.VLogs.Margin, pull.Bytes))
	ex.Notes = append(ex.Notes, resultNotes(res)...)
	if found == nil {
		if reconstruct.AnsweredBeforeAPF(rec) {
			ex.Notes = append(ex.Notes, fmt.Sprintf("the server answered %d ahead of APF (authentication, or a refused impersonation), which never saw this request", rec.Status))
			return true, nil
		}
		return false, nil
	}
	// audit events carry the year
	ex.SetPast(pastOf(found, true))
	return true, nil
}
