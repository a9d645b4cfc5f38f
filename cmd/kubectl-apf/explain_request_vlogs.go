package main

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/vlogs"
)

// vlogsRequestFlags are the flags of "explain request --victorialogs
// --audit-id ID": the request is the audit event of that ID in a
// VictoriaLogs, and its moment is reconstructed from the events within
// --victorialogs-margin of it.
type vlogsRequestFlags struct {
	vlogs429Flags
	// Since is how far back from Until the audit ID is looked for.
	Since time.Duration
	// Until ends that window ("" is now).
	Until string
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
	f.Var(daysDuration{&v.Since}, "victorialogs-since", "With --victorialogs: how far back from --victorialogs-until the audit ID is looked for (24h, 7d).")
	f.StringVar(&v.Until, "victorialogs-until", "", "With --victorialogs: the end of the window the audit ID is looked for in, RFC 3339 or relative (-2h); now when empty.")
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

// source is the store over the window the audit ID is looked for in, the
// --victorialogs-since before --victorialogs-until (a minute past now when
// that is empty, for the clocks of the store and of this machine).
func (v *vlogsRequestFlags) source(now time.Time) (*vlogs.Source, error) {
	win, err := vlogsWindow(v.Since, v.Until, now)
	if err != nil {
		return nil, err
	}
	if v.Until == "" {
		win.End = win.End.Add(time.Minute)
	}
	client, err := v.open()
	if err != nil {
		return nil, err
	}
	return v.over(client, win), nil
}

// recordedFromVLogs reads the request of --audit-id from the store, which
// it keeps, with --victorialogs-margin, as the one its moment is
// reconstructed from (explainRecorded).
func (o *ExplainRequestOptions) recordedFromVLogs() error {
	if err := o.VLogs.validate(o); err != nil {
		return err
	}
	src, err := o.VLogs.source(o.ClockOrReal().Now())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.VLogs.Timeout+10*time.Second)
	defer cancel()
	r, _, err := src.Event(ctx, o.AuditID)
	if err != nil {
		return err
	}
	o.recorded.Request, o.recorded.VLogs, o.recorded.Margin = r, src, o.VLogs.Margin
	return nil
}
