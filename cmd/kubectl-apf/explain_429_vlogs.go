package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/explain/fromlog"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	rejrender "github.com/kubectl-apf/kubectl-apf/pkg/rejections/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/vlogs"
)

// vlogs429Flags are the flags of "explain 429 --victorialogs": the
// incidents of the audit events a VictoriaLogs holds, reconstructed as
// --workload's files are (package vlogs pulls only the events around the
// 429s).
type vlogs429Flags struct {
	URL, Service  string
	Query         string
	Prefix        string
	InstanceField string
	Headers       []string
	Timeout       time.Duration
	Margin        time.Duration

	configFlags *genericclioptions.ConfigFlags
}

// explain429VLogsHelp is added to explain 429's help.
const explain429VLogsHelp = `

With --victorialogs URL (or --victorialogs-service NAMESPACE/NAME:PORT,
through the apiserver's service proxy), the audit events of --since/--until
(1h by default) are read from VictoriaLogs, as --workload reads them from
files, and give the same report. The 429s are counted in the store by
second; only the events within --victorialogs-margin of each burst are
pulled and reconstructed. The events are kube-apiserver audit events shipped
as JSON lines (_time from stageTimestamp; VictoriaLogs flattens them into
user.username, objectRef.resource, responseStatus.code, ...);
--victorialogs-prefix names the key a pipeline put them under, and
--victorialogs-query (LogsQL) selects the cluster or stream.`

func (v *vlogs429Flags) addFlags(f *pflag.FlagSet, configFlags *genericclioptions.ConfigFlags) {
	v.configFlags = configFlags
	f.StringVar(&v.URL, "victorialogs", "", "Explain the 429s of the audit events in this VictoriaLogs (http://victorialogs:9428; a single node or a cluster's select node) over --since/--until.")
	f.StringVar(&v.Service, "victorialogs-service", "", "Reach an in-cluster VictoriaLogs through the apiserver's service proxy: NAMESPACE/NAME:PORT (read-only GETs, as the kubectl identity).")
	f.StringVar(&v.Query, "victorialogs-query", "", "With --victorialogs: a LogsQL filter that selects the cluster's audit events ('cluster:=prod', '{stream=\"audit\"}').")
	f.StringVar(&v.Prefix, "victorialogs-prefix", "", "With --victorialogs: the prefix of the audit event's fields, for a pipeline that stored the event under a key ('log.').")
	f.StringVar(&v.InstanceField, "victorialogs-instance-field", "", "With --victorialogs: the field that names the apiserver instance (such as kubernetes.pod_name); then only the instances that answered 429 are pulled.")
	f.StringArrayVar(&v.Headers, "victorialogs-header", nil, "With --victorialogs: a header NAME=VALUE sent with every query (AccountID=1, ProjectID=2 select a tenant; repeatable).")
	f.DurationVar(&v.Timeout, "victorialogs-timeout", time.Minute, "With --victorialogs: the longest a query may take.")
	f.DurationVar(&v.Margin, "victorialogs-margin", 2*time.Minute, "With --victorialogs: the events pulled before and after each burst of 429s (the requests queued and in flight when it began; at least the request timeout).")
}

func (v *vlogs429Flags) enabled() bool { return v.URL != "" || v.Service != "" }

// check checks the flags of the store itself.
func (v *vlogs429Flags) check() error {
	switch {
	case v.URL != "" && v.Service != "":
		return errors.New("--victorialogs and --victorialogs-service are mutually exclusive")
	case v.Timeout <= 0 || v.Margin < 0:
		return errors.New("--victorialogs-timeout must be positive, --victorialogs-margin not negative")
	}
	if v.URL != "" {
		if err := vlogs.CheckURL(v.URL); err != nil {
			return err
		}
	}
	if v.Service != "" {
		if _, err := vlogs.ParseService(v.Service); err != nil {
			return err
		}
	}
	for _, h := range v.Headers {
		if k, _, ok := strings.Cut(h, "="); !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("--victorialogs-header %q: want NAME=VALUE, such as AccountID=1", h)
		}
	}
	return nil
}

// open builds the store's client.
func (v *vlogs429Flags) open() (*vlogs.Client, error) {
	vo := vlogs.Options{URL: v.URL, Service: v.Service, Timeout: v.Timeout, Headers: map[string]string{}}
	for _, h := range v.Headers {
		k, val, _ := strings.Cut(h, "=")
		vo.Headers[strings.TrimSpace(k)] = val
	}
	if v.Service != "" {
		rc, err := v.configFlags.ToRESTConfig()
		if err != nil {
			return nil, fmt.Errorf("--victorialogs-service reads the kubeconfig: %w", err)
		}
		vo.REST = rc
	}
	return vlogs.New(vo)
}

// over is the store's source of the audit events of win, read through
// client: the one place the flags make a vlogs.Source.
func (v *vlogs429Flags) over(client *vlogs.Client, win history.Window) *vlogs.Source {
	return &vlogs.Source{Client: client, Mapping: vlogs.Mapping{Prefix: v.Prefix, Instance: v.InstanceField}, Filter: v.Query, Start: win.Start, End: win.End}
}

// vlogsWindow resolves --victorialogs-since and --victorialogs-until at now.
func vlogsWindow(since time.Duration, until string, now time.Time) (history.Window, error) {
	win, err := history.WindowOptions{Since: since, Until: until}.Resolve(now)
	if err != nil {
		return win, fmt.Errorf("--victorialogs-since/--victorialogs-until: %w", err)
	}
	return win, nil
}

// validateVLogs checks the flags of --victorialogs.
func (o *Explain429Options) validateVLogs() error {
	switch {
	case len(o.Workload.Files) > 0 || o.Store.Enabled():
		return errors.New("--victorialogs is a source of its own: give it without --workload and --prometheus")
	case o.Store.At != "":
		return errors.New("--at is one moment: the incidents of --victorialogs take a window (--since, --until)")
	}
	if err := o.VLogs.check(); err != nil {
		return err
	}
	return o.validateWorkload()
}

// runVLogs reads the window's audit events from the store and prints their
// incidents, as runWorkload does for files.
func (o *Explain429Options) runVLogs(ctx context.Context) error {
	v := &o.VLogs
	client, err := v.open()
	if err != nil {
		return err
	}
	since := o.Store.DefaultSince
	if o.Store.Since.IsSet() {
		if since, err = time.ParseDuration(o.Store.Since.String()); err != nil {
			return fmt.Errorf("--since: %w", err)
		}
	}
	win, err := history.WindowOptions{Since: since, Until: o.Store.Until}.Resolve(o.ClockOrReal().Now())
	if err != nil {
		return err
	}
	src := v.over(client, win)
	st, err := o.loadForLog(ctx)
	if err != nil {
		return err
	}
	rep, err := fromlog.IncidentsStore(ctx, fromlog.Config{State: st, RequestTimeout: o.Server.RequestTimeout, Logs: input.Logs{}}, src, o.Workload.Gap, v.Margin)
	if err != nil {
		return err
	}
	return printObject(o.Out, o.Flags, rep, func(w io.Writer) error { return rejrender.WriteText(w, rep, rejrender.Options{}) })
}
