package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/vlogs"
)

// vlogsSimulateFlags are the flags of "simulate --victorialogs": the
// workload is every audit event of a window in a VictoriaLogs (the replay
// needs them all).
type vlogsSimulateFlags struct {
	vlogs429Flags
	Since time.Duration
	Until string

	// pulled and client say what was read, for the note.
	pulled vlogs.Pulled
	client *vlogs.Client
}

func (v *vlogsSimulateFlags) addFlags(f *pflag.FlagSet, configFlags *genericclioptions.ConfigFlags) {
	v.configFlags = configFlags
	f.StringVar(&v.URL, "victorialogs", "", "Replay the audit events of this VictoriaLogs (http://victorialogs:9428) over --victorialogs-since/--victorialogs-until instead of --workload files.")
	f.StringVar(&v.Service, "victorialogs-service", "", "Reach an in-cluster VictoriaLogs through the apiserver's service proxy: NAMESPACE/NAME:PORT.")
	f.StringVar(&v.Query, "victorialogs-query", "", "With --victorialogs: a LogsQL filter that selects the cluster's audit events.")
	f.StringVar(&v.Prefix, "victorialogs-prefix", "", "With --victorialogs: the prefix of the audit event's fields ('log.').")
	f.StringArrayVar(&v.Headers, "victorialogs-header", nil, "With --victorialogs: a header NAME=VALUE sent with every query (repeatable).")
	f.DurationVar(&v.Timeout, "victorialogs-timeout", 5*time.Minute, "With --victorialogs: the longest a query may take.")
	v.Since = time.Hour
	f.Var(daysDuration{&v.Since}, "victorialogs-since", "With --victorialogs: the window's length, before --victorialogs-until (30m, 24h, 7d).")
	f.StringVar(&v.Until, "victorialogs-until", "", "With --victorialogs: the window's end (RFC 3339, -2h or \"2h ago\"; default now).")
}

// validate checks the flags of --victorialogs.
func (v *vlogsSimulateFlags) validate(o *SimulateOptions) error {
	switch {
	case len(o.Workloads) > 0:
		return errors.New("--victorialogs is the workload: give it without --workload")
	case v.Since <= 0:
		return errors.New("--victorialogs-since must be positive")
	}
	return v.check()
}

// windowSource opens the store's client and returns the source of the
// window, whose events it counts first: a window without any is an error.
func (v *vlogsSimulateFlags) windowSource(ctx context.Context, now time.Time) func() (*vlogs.Source, error) {
	return func() (*vlogs.Source, error) {
		client, err := v.open()
		if err != nil {
			return nil, err
		}
		v.client = client
		win, err := vlogsWindow(v.Since, v.Until, now)
		if err != nil {
			return nil, err
		}
		src := v.over(client, win)
		t, err := src.Totals(ctx)
		if err != nil {
			return nil, err
		}
		if t.Events == 0 {
			return nil, fmt.Errorf("%s holds no audit event from %s to %s: check --victorialogs-since/--victorialogs-until, --victorialogs-query and --victorialogs-prefix",
				client.Describe(), win.Start.UTC().Format(time.RFC3339), win.End.UTC().Format(time.RFC3339))
		}
		return src, nil
	}
}

// note says what was pulled from the store.
func (v *vlogsSimulateFlags) note() string {
	if v.client == nil {
		return ""
	}
	n := fmt.Sprintf("note: pulled %d audit events from %s (%d bytes)", v.pulled.Events, v.client.Describe(), v.client.Bytes.Load())
	if v.client.Partial.Load() {
		cause, _ := v.client.PartialCause.Load().(string)
		n += fmt.Sprintf("; partial: a storage node did not answer (%s), the events it holds are missing", cause)
	}
	return n
}

// daysDuration is a time.Duration flag that takes history.ParseDuration's
// units (30m, 24h, 7d).
type daysDuration struct{ d *time.Duration }

func (v daysDuration) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v daysDuration) Set(s string) error {
	d, err := history.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func (daysDuration) Type() string { return "duration" }
