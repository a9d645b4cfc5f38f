package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/monitoring"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

const monitoringLong = `Print monitoring as code for API Priority and Fairness.

"rules" prints a Prometheus rule file: recording rules for the priority
levels' rates, seats, utilisation, demand and queue waits, and alerts for
sustained rejections, time-outs, queue waits near the wait limit, saturated
levels that cannot borrow, traffic in catch-all or global-default, and
apiservers that disagree about the configuration. "dashboard" prints a
Grafana dashboard with a row per priority level of the configuration.

Both query every metric family under the names of each Kubernetes release from
1.20 to today, so one fleet may mix releases.`

const monitoringRulesExample = `  # A rule file for Prometheus's rule_files
  kubectl apf monitoring rules --selector 'job="apiserver"' > apf-rules.yaml

  # A PrometheusRule for the prometheus-operator, picked up by its ruleSelector
  kubectl apf monitoring rules -o prometheusrule -n monitoring --labels release=prometheus

  # Several clusters in one store (Thanos, Mimir), stricter thresholds
  kubectl apf monitoring rules --cluster-label k8s_cluster --rejected-rate 0 --rejected-for 5m`

const monitoringDashboardExample = `  # A dashboard for the cluster's priority levels, to import into Grafana
  kubectl apf monitoring dashboard > apf-dashboard.json

  # For a configuration repository, without a cluster
  kubectl apf monitoring dashboard --defaults -f deploy/apf/`

// MonitoringOptions holds the flags shared by "kubectl apf monitoring rules"
// and "dashboard": which series to query.
type MonitoringOptions struct {
	Selector      string
	ClusterLabel  string
	InstanceLabel string
	// Server is --wait-limit.
	Server *load.ServerOptions

	opts monitoring.Options
}

func (o *MonitoringOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Selector, "selector", o.Selector, `Label matchers that select the apiservers' series, for example 'job="apiserver"'.`)
	fs.StringVar(&o.ClusterLabel, "cluster-label", o.ClusterLabel, "Label that tells clusters apart in the store ('' when it holds one cluster).")
	fs.StringVar(&o.InstanceLabel, "instance-label", o.InstanceLabel, "Label that names one apiserver instance.")
	o.Server.AddFlags(fs)
}

// complete parses the shared flags into o.opts, over defaults.
func (o *MonitoringOptions) complete(defaults monitoring.Options) error {
	ms, err := history.ParseMatchers(o.Selector)
	if err != nil {
		return fmt.Errorf("--selector: %w", err)
	}
	defaults.Selector, defaults.ClusterLabel, defaults.InstanceLabel, defaults.WaitLimit = strings.Join(ms, ", "), o.ClusterLabel, o.InstanceLabel, o.Server.WaitLimit()
	o.opts = defaults
	return nil
}

func newMonitoringOptions() MonitoringOptions {
	d := monitoring.DefaultOptions()
	return MonitoringOptions{ClusterLabel: d.ClusterLabel, InstanceLabel: d.InstanceLabel, Server: load.NewServerOptionsOf(load.ServerWaitLimit)}
}

// validateMonitoring names the flags in the messages of Options.Validate.
func validateMonitoring(o monitoring.Options) error {
	if err := o.Validate(); err != nil {
		r := strings.NewReplacer("cluster label", "--cluster-label", "instance label", "--instance-label",
			"rate window", "--rate-window", "wait limit", "--wait-limit")
		return fmt.Errorf("%s", r.Replace(err.Error()))
	}
	return nil
}

// NewMonitoringCommand builds "kubectl apf monitoring".
func NewMonitoringCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "monitoring",
		Short: "Print Prometheus rules and a Grafana dashboard for APF",
		Long:  monitoringLong,
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { _ = cmd.Help() },
	}
	cmd.AddCommand(NewMonitoringRulesCommand(configFlags, streams), NewMonitoringDashboardCommand(configFlags, streams))
	return cmd
}

// MonitoringRulesOptions holds the flags of "kubectl apf monitoring rules".
type MonitoringRulesOptions struct {
	configFlags *genericclioptions.ConfigFlags
	MonitoringOptions

	// Flags are -o.
	*output.Flags
	RateWindow time.Duration
	Name       string
	Labels     map[string]string
	alerts     monitoring.Options
	namespace  string

	genericiooptions.IOStreams
}

// NewMonitoringRulesOptions returns the defaults of "kubectl apf monitoring rules".
func NewMonitoringRulesOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *MonitoringRulesOptions {
	d := monitoring.DefaultOptions()
	return &MonitoringRulesOptions{configFlags: configFlags, MonitoringOptions: newMonitoringOptions(), RateWindow: d.RateWindow,
		Flags: output.NewFlags(false, "", "json", "prometheusrule"), Name: "kubectl-apf", alerts: d, IOStreams: streams}
}

// NewMonitoringRulesCommand builds "kubectl apf monitoring rules".
func NewMonitoringRulesCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewMonitoringRulesOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Print Prometheus recording and alerting rules for APF",
		Long: monitoringLong + `

The thresholds are per priority level; every alert has a --...-for duration
the condition must hold. Recorded series carry the cluster label (when set),
the instance label and priority_level.`,
		Example: monitoringRulesExample,
		Args:    noArgs(""),
		RunE:    runOptions(o),
	}
	fs := cmd.Flags()
	o.addFlags(fs)
	fs.DurationVar(&o.RateWindow, "rate-window", o.RateWindow, "Window of the rates in the recording rules.")
	a := &o.alerts
	for _, f := range []struct {
		threshold, duration string
		alert               *monitoring.Alert
		when                string
	}{
		{"rejected-rate", "rejected-for", &a.Rejected, "a level rejects more requests per second than this (queue-full, concurrency-limit)"},
		{"timeout-rate", "timeout-for", &a.TimedOut, "more requests per second than this time out in a level's queues"},
		{"wait-ratio", "wait-for", &a.WaitNearLimit, "a level's p99 queue wait on an instance exceeds this fraction of --wait-limit"},
		{"saturation", "saturation-for", &a.Saturated, "a level keeps this fraction of its seats busy on average and cannot borrow more"},
		{"catch-all-rate", "catch-all-for", &a.CatchAll, "more requests per second than this match the catch-all FlowSchema"},
		{"global-default-share", "global-default-for", &a.GlobalDefault, "more than this fraction of a cluster's requests match the global-default FlowSchema"},
	} {
		fs.Float64Var(&f.alert.Threshold, f.threshold, f.alert.Threshold, "Alert when "+f.when+" for --"+f.duration+".")
		fs.DurationVar(&f.alert.For, f.duration, f.alert.For, "How long the condition of --"+f.threshold+" must hold.")
	}
	fs.DurationVar(&a.Disagreement.For, "disagreement-for", a.Disagreement.For, "Alert when apiservers disagree about a level's limits for this long.")
	o.Flags.AddFlags(fs)
	fs.StringVar(&o.Name, "name", o.Name, "Name of the PrometheusRule (-o prometheusrule).")
	fs.StringToStringVar(&o.Labels, "labels", nil, "Labels of the PrometheusRule, as the operator's ruleSelector wants them (-o prometheusrule).")
	return cmd
}

// Complete resolves the flags.
func (o *MonitoringRulesOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.alerts.RateWindow = o.RateWindow
	if err := o.complete(o.alerts); err != nil {
		return err
	}
	if f := cmd.Flags().Lookup("namespace"); f != nil && f.Changed && o.configFlags != nil && o.configFlags.Namespace != nil {
		o.namespace = *o.configFlags.Namespace
	}
	return nil
}

// Validate checks the flags.
func (o *MonitoringRulesOptions) Validate() error {
	if err := validateMonitoring(o.opts); err != nil {
		return fmt.Errorf("%s", strings.NewReplacer(
			"the rejected ", "--rejected-rate/--rejected-for: the ", "the timed-out ", "--timeout-rate/--timeout-for: the ",
			"the wait ", "--wait-ratio/--wait-for: the ", "the saturation ", "--saturation/--saturation-for: the ",
			"the catch-all ", "--catch-all-rate/--catch-all-for: the ", "the global-default ", "--global-default-share/--global-default-for: the ",
			"the disagreement ", "--disagreement-for: the ").Replace(err.Error()))
	}
	if err := o.Flags.Validate(); err != nil {
		return err
	}
	if format, _ := o.Own(); format != "prometheusrule" && (len(o.Labels) > 0 || o.namespace != "") {
		return fmt.Errorf("--labels and --namespace only apply to -o prometheusrule")
	}
	return nil
}

// Run prints the rules: a rule file (YAML, or JSON with -o json), or a
// PrometheusRule.
func (o *MonitoringRulesOptions) Run(_ context.Context) error {
	f := monitoring.Rules(o.opts)
	return o.PrintObject(o.Out, f, output.Writers{
		"": output.Document(func() ([]byte, error) { return monitoring.MarshalYAML(f) }),
		"prometheusrule": output.Document(func() ([]byte, error) {
			return monitoring.MarshalYAML(monitoring.NewPrometheusRule(o.Name, o.namespace, o.Labels, f))
		}),
	})
}

// MonitoringDashboardOptions holds the flags of "kubectl apf monitoring dashboard".
type MonitoringDashboardOptions struct {
	// Options are the state flags: --from, --defaults, -f, -R.
	*load.Options
	// Flags are -o.
	*output.Flags
	MonitoringOptions

	Title string
	UID   string

	genericiooptions.IOStreams
}

// NewMonitoringDashboardOptions returns the defaults of "kubectl apf monitoring dashboard".
func NewMonitoringDashboardOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *MonitoringDashboardOptions {
	d := monitoring.DefaultDashboardOptions()
	return &MonitoringDashboardOptions{Options: newOptions(configFlags, load.Config), Flags: output.NewFlags(false, "json"),
		MonitoringOptions: newMonitoringOptions(), Title: d.Title, UID: d.UID, IOStreams: streams}
}

// NewMonitoringDashboardCommand builds "kubectl apf monitoring dashboard".
func NewMonitoringDashboardCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewMonitoringDashboardOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Print a Grafana dashboard with a row per priority level",
		Long: monitoringLong + `

The priority levels are read from the cluster, from a bundle (--from) or from
the upstream defaults (--defaults), with files given with -f applied on top.
The dashboard has datasource, cluster and instance variables; its JSON model
is imported with Grafana's "Import dashboard" or provisioned from a file.`,
		Example: monitoringDashboardExample,
		Args:    noArgs(""),
		RunE:    runOptions(o),
	}
	o.Options.AddFlags(cmd.Flags())
	o.Flags.AddFlags(cmd.Flags())
	o.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.Title, "title", o.Title, "Title of the dashboard.")
	cmd.Flags().StringVar(&o.UID, "uid", o.UID, "UID of the dashboard (Grafana replaces a dashboard of the same UID on import).")
	return cmd
}

// Complete resolves the flags and the source of the configuration.
func (o *MonitoringDashboardOptions) Complete(_ *cobra.Command, _ []string) error {
	if err := o.complete(monitoring.DefaultOptions()); err != nil {
		return err
	}
	return o.Options.Complete()
}

// Validate checks the flags.
func (o *MonitoringDashboardOptions) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if err := o.Flags.Validate(); err != nil {
		return err
	}
	if strings.TrimSpace(o.UID) == "" || len(o.UID) > 40 {
		return fmt.Errorf("--uid must have 1 to 40 characters (Grafana's limit), not %q", o.UID)
	}
	return validateMonitoring(o.opts)
}

// Run reads the configuration and prints the dashboard.
func (o *MonitoringDashboardOptions) Run(ctx context.Context) error {
	st, err := o.Load(ctx, load.Request{Stdin: o.In})
	if err != nil {
		return err
	}
	for _, n := range st.Notes {
		fmt.Fprintln(o.ErrOut, n)
	}
	if len(st.PriorityLevels) == 0 {
		return fmt.Errorf("the configuration has no PriorityLevelConfiguration to make rows of")
	}
	d := monitoring.NewDashboard(st.PriorityLevels, o.opts, monitoring.DashboardOptions{Title: o.Title, UID: o.UID})
	return o.PrintObject(o.Out, d, output.Writers{"json": output.Document(func() ([]byte, error) { return monitoring.MarshalDashboard(d) })})
}
