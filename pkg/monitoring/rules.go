package monitoring

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// Alert is the threshold of one alert and how long it must hold.
type Alert struct {
	Threshold float64
	For       time.Duration
}

// Options say which series the rules and the dashboard read and when the
// alerts fire.
type Options struct {
	// Selector is put into every series selector: label matchers without
	// braces (history.ParseMatchers, joined by ", "), "" for none.
	Selector string
	// ClusterLabel names the label that tells clusters apart in a store
	// holding several ("" when there is none). A missing label is harmless:
	// grouping by it then yields one empty value.
	ClusterLabel string
	// InstanceLabel names the label of one apiserver instance.
	InstanceLabel string
	// RateWindow is the window of every rate in the recording rules.
	RateWindow time.Duration

	// Rejected: rejections other than time-outs (queue-full and
	// concurrency-limit), requests per second per level, summed over the
	// instances.
	Rejected Alert
	// TimedOut: requests that left their queue without running (time-out,
	// and cancelled on 1.26-1.28), per second per level.
	TimedOut Alert
	// WaitNearLimit: the p99 wait in the queue of one instance's level
	// above Threshold × WaitLimit.
	WaitNearLimit Alert
	// WaitLimit is how long a request may wait in its queue: a quarter of
	// its deadline, the default --request-timeout of 60s giving 15s
	// (k8s.io/apiserver priority-and-fairness.go getRequestWaitContext).
	WaitLimit time.Duration
	// Saturated: the time-averaged seat utilisation of one instance's level
	// at or above Threshold while it cannot borrow more.
	Saturated Alert
	// CatchAll: requests per second matched by the catch-all FlowSchema.
	CatchAll Alert
	// GlobalDefault: the share (0 to 1) of a cluster's requests matched by
	// the global-default FlowSchema.
	GlobalDefault Alert
	// Disagreement: how long apiservers must disagree about a level's
	// limits (Threshold is unused).
	Disagreement Alert
}

// DefaultOptions are the defaults of "kubectl apf monitoring".
func DefaultOptions() Options {
	return Options{
		Selector:      "",
		ClusterLabel:  "cluster",
		InstanceLabel: "instance",
		RateWindow:    5 * time.Minute,
		Rejected:      Alert{Threshold: 0.05, For: 15 * time.Minute},
		TimedOut:      Alert{Threshold: 0.01, For: 10 * time.Minute},
		WaitNearLimit: Alert{Threshold: 0.75, For: 10 * time.Minute},
		WaitLimit:     15 * time.Second,
		Saturated:     Alert{Threshold: 0.95, For: 15 * time.Minute},
		CatchAll:      Alert{Threshold: 0, For: 15 * time.Minute},
		GlobalDefault: Alert{Threshold: 0.2, For: 30 * time.Minute},
		Disagreement:  Alert{For: 15 * time.Minute},
	}
}

// Validate checks the options; the messages name the option as the
// command's flags do.
func (o Options) Validate() error {
	if o.ClusterLabel != "" && !ValidLabelName(o.ClusterLabel) {
		return fmt.Errorf("cluster label %q is not a Prometheus label name", o.ClusterLabel)
	}
	if !ValidLabelName(o.InstanceLabel) {
		return fmt.Errorf("instance label %q is not a Prometheus label name", o.InstanceLabel)
	}
	if o.ClusterLabel == o.InstanceLabel {
		return fmt.Errorf("the cluster and instance labels are both %q", o.InstanceLabel)
	}
	if _, err := history.ParseMatchers(o.Selector); err != nil {
		return err
	}
	if err := promDuration("rate window", o.RateWindow, time.Second); err != nil {
		return err
	}
	if err := promDuration("wait limit", o.WaitLimit, time.Millisecond); err != nil {
		return err
	}
	for _, a := range []struct {
		name string
		a    Alert
		max  float64
	}{
		{"rejected", o.Rejected, -1}, {"timed-out", o.TimedOut, -1}, {"wait", o.WaitNearLimit, 1},
		{"saturation", o.Saturated, 1}, {"catch-all", o.CatchAll, -1}, {"global-default", o.GlobalDefault, 1},
		{"disagreement", o.Disagreement, -1},
	} {
		if a.a.Threshold < 0 || (a.max > 0 && a.a.Threshold > a.max) {
			return fmt.Errorf("the %s threshold %v is outside [0, %v]", a.name, a.a.Threshold, rangeMax(a.max))
		}
		if a.a.For < 0 || a.a.For%time.Second != 0 {
			return fmt.Errorf("the %s duration %v must be a whole number of seconds, 0 or more", a.name, a.a.For)
		}
	}
	return nil
}

func rangeMax(m float64) string {
	if m < 0 {
		return "∞)"
	}
	return strconv.FormatFloat(m, 'g', -1, 64)
}

func promDuration(name string, d, unit time.Duration) error {
	if d <= 0 || d%unit != 0 {
		return fmt.Errorf("the %s %v must be a positive whole number of %v", name, d, unit)
	}
	return nil
}

// RuleFile is a Prometheus rule file.
type RuleFile struct {
	Groups []RuleGroup `yaml:"groups" json:"groups"`
}

// RuleGroup is one group of a rule file.
type RuleGroup struct {
	Name  string `yaml:"name" json:"name"`
	Rules []Rule `yaml:"rules" json:"rules"`
}

// Rule is a recording rule (Record set) or an alerting rule (Alert set).
type Rule struct {
	Record      string            `yaml:"record,omitempty" json:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty" json:"alert,omitempty"`
	Expr        string            `yaml:"expr" json:"expr"`
	For         string            `yaml:"for,omitempty" json:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty" json:"annotations,omitempty"`
}

// Names of the recorded series. They follow the level:metric:operations
// convention of Prometheus; every one carries the cluster label (when
// set), the instance label and priority_level.
const (
	RecRejected       = "instance_priority_level_reason:apiserver_flowcontrol_rejected_requests:rate"
	RecDispatched     = "instance_priority_level:apiserver_flowcontrol_dispatched_requests:rate"
	RecNominal        = "instance_priority_level:apiserver_flowcontrol_nominal_limit_seats:max"
	RecCurrent        = "instance_priority_level:apiserver_flowcontrol_current_limit_seats:max"
	RecLower          = "instance_priority_level:apiserver_flowcontrol_lower_limit_seats:max"
	RecUpper          = "instance_priority_level:apiserver_flowcontrol_upper_limit_seats:max"
	RecSeatsInUse     = "instance_priority_level:apiserver_flowcontrol_current_executing_seats:sum"
	RecWaiting        = "instance_priority_level:apiserver_flowcontrol_current_inqueue_requests:sum"
	RecUtilisation    = "instance_priority_level:apiserver_flowcontrol_seat_utilization:avg_rate"
	RecDemand         = "instance_priority_level:apiserver_flowcontrol_demand_seats:avg_rate"
	RecDemandSmoothed = "instance_priority_level:apiserver_flowcontrol_demand_seats_smoothed:max"
	RecWaitQuantile   = "instance_priority_level_quantile:apiserver_flowcontrol_request_wait_duration_seconds:histogram_quantile_rate"
	RecRejectedRatio  = "priority_level:apiserver_flowcontrol_rejected_requests:ratio_rate"
)

// Names of the alerts.
const (
	AlertRejected      = "APFRequestsRejected"
	AlertTimedOut      = "APFRequestsTimedOut"
	AlertWaitNearLimit = "APFQueueWaitNearLimit"
	AlertSaturated     = "APFSeatsSaturated"
	AlertCatchAll      = "APFCatchAllTraffic"
	AlertGlobalDefault = "APFGlobalDefaultTraffic"
	AlertDisagreement  = "APFConfigurationDisagreement"
)

// WaitQuantiles are the quantiles of the queue wait that are recorded.
var WaitQuantiles = []string{"0.5", "0.9", "0.99"}

// dur formats a duration as Prometheus does (15m, 1h30m).
func dur(d time.Duration) string { return model.Duration(d).String() }

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// keys are the labels of one instance: cluster (when set) and instance.
func (o Options) keys() []string {
	if o.ClusterLabel == "" {
		return []string{o.InstanceLabel}
	}
	return []string{o.ClusterLabel, o.InstanceLabel}
}

// clusterBy is "by (cluster, extra...)", or "by (extra...)".
func (o Options) clusterBy(extra ...string) string {
	var l []string
	if o.ClusterLabel != "" {
		l = append(l, o.ClusterLabel)
	}
	return "by (" + strings.Join(append(l, extra...), ", ") + ")"
}

// clusterOn is "on (cluster, extra...)".
func (o Options) clusterOn(extra ...string) string {
	return "on" + strings.TrimPrefix(o.clusterBy(extra...), "by")
}

// onCluster is the " on cluster {{ $labels.cluster }}" of a description.
func (o Options) onCluster() string {
	if o.ClusterLabel == "" {
		return ""
	}
	return " on cluster {{ $labels." + o.ClusterLabel + " }}"
}

// Rules returns the recording and alerting rules for opts, which must be
// valid.
func Rules(opts Options) RuleFile {
	w := dur(opts.RateWindow)
	sfx := w
	e := q{sel: opts.Selector, window: w, keys: opts.keys()}
	inst := strings.Join(append(opts.keys(), labelLevel), ", ")
	rec := func(name, expr string) Rule { return Rule{Record: name, Expr: expr} }

	records := []Rule{
		rec(RecRejected+sfx, "sum "+e.by(labelLevel, labelReason)+" ("+e.rate(e.m(metrics.RejectedRequestsTotal))+")"),
		rec(RecDispatched+sfx, "sum "+e.by(labelLevel)+" ("+e.rate(e.m(metrics.DispatchedRequestsTotal))+")"),
		rec(RecNominal, e.nominal()),
		rec(RecCurrent, e.limitOrNominal(metrics.CurrentLimitSeats)),
		rec(RecLower, e.limitOrNominal(metrics.LowerLimitSeats)),
		rec(RecUpper, e.limitOrNominal(metrics.UpperLimitSeats)),
		rec(RecSeatsInUse, e.seatsInUse()),
		rec(RecWaiting, "sum "+e.by(labelLevel)+" ("+e.m(metrics.CurrentInqueueRequests)+")"),
		rec(RecUtilisation+sfx, e.utilisation()),
		rec(RecDemand+sfx, e.histAvg(demandSeats)),
		rec(RecDemandSmoothed, "max "+e.by(labelLevel)+" ("+e.m(demandSeatsSmoothed)+")"),
	}
	for _, phi := range WaitQuantiles {
		r := rec(RecWaitQuantile+sfx, e.waitQuantile(phi))
		r.Labels = map[string]string{"quantile": phi}
		records = append(records, r)
	}
	// Rejected over rejected + dispatched, per cluster and level; a level
	// that only rejects (no dispatched series yet) counts 0 dispatches, and
	// a level with neither gets no series rather than 0/0.
	rej := "sum " + opts.clusterBy(labelLevel) + " (" + RecRejected + sfx + ")"
	records = append(records, rec(RecRejectedRatio+sfx,
		rej+"\n/\n(\n  "+rej+"\n  + (sum "+opts.clusterBy(labelLevel)+" ("+RecDispatched+sfx+") or "+rej+" * 0)\n  > 0\n)"))

	oc := opts.onCluster()
	waitAt := opts.WaitNearLimit.Threshold * opts.WaitLimit.Seconds()
	alerts := []Rule{
		{
			Alert:  AlertRejected,
			Expr:   "sum " + opts.clusterBy(labelLevel) + " (" + RecRejected + sfx + `{reason!~"time-out|cancelled"}) > ` + num(opts.Rejected.Threshold),
			For:    dur(opts.Rejected.For),
			Labels: map[string]string{"severity": "warning"},
			Annotations: map[string]string{
				"summary": "API Priority and Fairness keeps rejecting requests of a priority level.",
				"description": "Priority level {{ $labels.priority_level }}" + oc + " rejects {{ $value | humanize }} requests/s " +
					"(queue-full or concurrency-limit; HTTP 429) for " + dur(opts.Rejected.For) + " or more. " +
					"Run `kubectl apf explain 429` to see which flows are rejected and why.",
			},
		},
		{
			Alert:  AlertTimedOut,
			Expr:   "sum " + opts.clusterBy(labelLevel) + " (" + RecRejected + sfx + "{" + leftQueue + "}) > " + num(opts.TimedOut.Threshold),
			For:    dur(opts.TimedOut.For),
			Labels: map[string]string{"severity": "warning"},
			Annotations: map[string]string{
				"summary": "Requests of a priority level time out in their queues.",
				"description": "Priority level {{ $labels.priority_level }}" + oc + " sends {{ $value | humanize }} requests/s " +
					"out of its queues without running them (time-out: the wait limit passed or the client went away) for " +
					dur(opts.TimedOut.For) + " or more. Run `kubectl apf explain 429`.",
			},
		},
		{
			Alert:  AlertWaitNearLimit,
			Expr:   RecWaitQuantile + sfx + `{quantile="0.99"} > ` + num(waitAt),
			For:    dur(opts.WaitNearLimit.For),
			Labels: map[string]string{"severity": "warning"},
			Annotations: map[string]string{
				"summary": "Requests wait in a priority level's queues for nearly as long as they may.",
				"description": "The p99 queue wait of priority level {{ $labels.priority_level }} on {{ $labels." + opts.InstanceLabel + " }}" + oc +
					" is {{ $value | humanizeDuration }}, near the wait limit of " + dur(opts.WaitLimit) +
					" (a quarter of the request deadline; the default --request-timeout 60s gives 15s). Requests beyond it are rejected as time-out. " +
					"Run `kubectl apf top levels` and `kubectl apf explain 429`.",
			},
		},
		{
			Alert: AlertSaturated,
			Expr: RecUtilisation + sfx + " >= " + num(opts.Saturated.Threshold) + "\nand on (" + inst + ")\n(\n  " +
				RecCurrent + " >= " + RecUpper + "\n  or\n  " + RecDemandSmoothed + " > " + RecCurrent + "\n)",
			For:    dur(opts.Saturated.For),
			Labels: map[string]string{"severity": "warning"},
			Annotations: map[string]string{
				"summary": "A priority level uses all its seats and cannot borrow more.",
				"description": "Priority level {{ $labels.priority_level }} on {{ $labels." + opts.InstanceLabel + " }}" + oc +
					" keeps {{ $value | humanizePercentage }} of its seats busy on average, and borrowing gives it no more: " +
					"its current limit has reached its upper limit, or its smoothed seat demand exceeds what the other levels lend. " +
					"Run `kubectl apf top levels` and `kubectl apf capacity`.",
			},
		},
		{
			Alert: AlertCatchAll,
			Expr: "sum " + opts.clusterBy() + " (" + e.rate(e.all(trafficFamilies, eq(labelFlowSchema, "catch-all"))) + ") > " +
				num(opts.CatchAll.Threshold),
			For:    dur(opts.CatchAll.For),
			Labels: map[string]string{"severity": "warning"},
			Annotations: map[string]string{
				"summary": "Requests fall through to the catch-all FlowSchema.",
				"description": "{{ $value | humanize }} requests/s" + oc + " match no FlowSchema but catch-all, whose priority level " +
					"has few seats and no queues: they are rejected quickly under load. " +
					"Find them with `kubectl apf top flows` and give them a FlowSchema; `kubectl apf lint` shows the gaps.",
			},
		},
		{
			Alert: AlertGlobalDefault,
			Expr: "sum " + opts.clusterBy() + " (" + e.rate(e.all(trafficFamilies, eq(labelFlowSchema, "global-default"))) + ")\n/\n" +
				"sum " + opts.clusterBy() + " (" + e.rate(e.all(trafficFamilies)) + ")\n> " + num(opts.GlobalDefault.Threshold),
			For:    dur(opts.GlobalDefault.For),
			Labels: map[string]string{"severity": "info"},
			Annotations: map[string]string{
				"summary": "Much of the traffic falls into the global-default FlowSchema.",
				"description": "{{ $value | humanizePercentage }} of the requests" + oc + " match only the global-default FlowSchema, " +
					"so they share one priority level whatever they are. Give the heavy clients their own FlowSchema " +
					"(`kubectl apf top flows`, `kubectl apf explain request`).",
			},
		},
		{
			Alert:  AlertDisagreement,
			Expr:   disagreement(opts, e),
			For:    dur(opts.Disagreement.For),
			Labels: map[string]string{"severity": "warning"},
			Annotations: map[string]string{
				"summary": "Apiservers disagree about the limits of a priority level.",
				"description": "The apiservers" + oc + " do not agree about priority level {{ $labels.priority_level }}: " +
					"its nominal, lower or upper limit in seats differs between instances, or some instances do not have the level. " +
					"Each apiserver computes these from the APF objects it has read and from its own " +
					"--max-requests-inflight and --max-mutating-requests-inflight, so a difference means a stale configuration, " +
					"a release skew or different flags. Compare the instances with `kubectl apf top levels --all-apiservers`.",
			},
		},
	}
	return RuleFile{Groups: []RuleGroup{
		{Name: "kubectl-apf.rules", Rules: records},
		{Name: "kubectl-apf.alerts", Rules: alerts},
	}}
}

// disagreement is the expression of AlertDisagreement, per cluster and
// level. Two signals:
//
//   - the nominal, lower and upper limits in seats each have one value per
//     level across a cluster's instances when they agree (count_values
//     counts the distinct values). These gauges are what an apiserver
//     derives from the PriorityLevelConfigurations it holds (shares,
//     lendablePercent, borrowingLimitPercent) and its server concurrency
//     limit, so they show the configuration it acts on, which the objects
//     in etcd alone do not. The nominal limit has the same meaning on every
//     release; the lower and upper limits are compared only among the
//     instances that export them (1.26+), since older releases did not
//     borrow and a rolling upgrade from one must not look like a skew;
//   - a level reported by fewer instances than report any level: one
//     instance has not seen a level created or deleted.
//
// Queue settings (queues, handSize, queueLengthLimit) are exported by no
// metric, so a disagreement there alone is not seen.
func disagreement(o Options, e q) string {
	lvl := o.clusterBy(labelLevel)
	distinct := func(expr string) string {
		return "count " + lvl + " (count_values " + lvl + ` ("seats", ` + expr + ")) > 1"
	}
	return distinct(RecNominal) + "\nor\n" +
		distinct("max "+e.by(labelLevel)+" ("+e.m(metrics.LowerLimitSeats)+")") + "\nor\n" +
		distinct("max "+e.by(labelLevel)+" ("+e.m(metrics.UpperLimitSeats)+")") + "\nor\n" +
		"count " + lvl + " (" + RecNominal + ")\n  < " + o.clusterOn() + " group_left ()\n  count " + o.clusterBy() +
		" (count " + o.clusterBy(o.InstanceLabel) + " (" + RecNominal + "))"
}

// PrometheusRule is a prometheus-operator PrometheusRule
// (monitoring.coreos.com/v1) holding a rule file; only the fields written
// here are modelled, to keep the operator's module out of the plugin.
type PrometheusRule struct {
	APIVersion string             `yaml:"apiVersion" json:"apiVersion"`
	Kind       string             `yaml:"kind" json:"kind"`
	Metadata   PrometheusRuleMeta `yaml:"metadata" json:"metadata"`
	Spec       RuleFile           `yaml:"spec" json:"spec"`
}

// PrometheusRuleMeta is the object metadata of a PrometheusRule.
type PrometheusRuleMeta struct {
	Name      string            `yaml:"name" json:"name"`
	Namespace string            `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	Labels    map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
}

// NewPrometheusRule wraps a rule file.
func NewPrometheusRule(name, namespace string, labels map[string]string, f RuleFile) PrometheusRule {
	return PrometheusRule{
		APIVersion: "monitoring.coreos.com/v1",
		Kind:       "PrometheusRule",
		Metadata:   PrometheusRuleMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec:       f,
	}
}

// MarshalYAML writes v (a RuleFile or a PrometheusRule) as YAML with
// two-space indentation; multi-line expressions become literal blocks.
func MarshalYAML(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
