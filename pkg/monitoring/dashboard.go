package monitoring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// DashboardOptions name the dashboard.
type DashboardOptions struct {
	Title string
	UID   string
}

// DefaultDashboardOptions are the defaults of "kubectl apf monitoring
// dashboard".
func DefaultDashboardOptions() DashboardOptions {
	return DashboardOptions{Title: "API Priority and Fairness", UID: "kubectl-apf"}
}

// Dashboard is a Grafana dashboard JSON model; only the fields written here
// are modelled.
type Dashboard struct {
	Annotations   List       `json:"annotations"`
	Description   string     `json:"description"`
	Editable      bool       `json:"editable"`
	GraphTooltip  int        `json:"graphTooltip"`
	Links         []any      `json:"links"`
	Panels        []Panel    `json:"panels"`
	Refresh       string     `json:"refresh"`
	SchemaVersion int        `json:"schemaVersion"`
	Tags          []string   `json:"tags"`
	Templating    Templating `json:"templating"`
	Time          TimeRange  `json:"time"`
	Timezone      string     `json:"timezone"`
	Title         string     `json:"title"`
	UID           string     `json:"uid"`
	Version       int        `json:"version"`
}

// List is an empty Grafana list ({"list": []}).
type List struct {
	List []any `json:"list"`
}

// Templating holds the dashboard's variables.
type Templating struct {
	List []Variable `json:"list"`
}

// TimeRange is the dashboard's default time range.
type TimeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Variable is a template variable (type "datasource" or "query").
type Variable struct {
	AllValue   string         `json:"allValue,omitempty"`
	Current    map[string]any `json:"current"`
	Datasource *DatasourceRef `json:"datasource,omitempty"`
	Definition string         `json:"definition,omitempty"`
	Hide       int            `json:"hide"`
	IncludeAll bool           `json:"includeAll"`
	Label      string         `json:"label"`
	Multi      bool           `json:"multi"`
	Name       string         `json:"name"`
	Options    []any          `json:"options"`
	Query      string         `json:"query"`
	Refresh    int            `json:"refresh"`
	Regex      string         `json:"regex"`
	Sort       int            `json:"sort,omitempty"`
	Type       string         `json:"type"`
}

// DatasourceRef points at the datasource variable.
type DatasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// GridPos places a panel.
type GridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// Panel is a row or a time series panel.
type Panel struct {
	Collapsed   *bool          `json:"collapsed,omitempty"`
	Datasource  *DatasourceRef `json:"datasource,omitempty"`
	Description string         `json:"description,omitempty"`
	FieldConfig *FieldConfig   `json:"fieldConfig,omitempty"`
	GridPos     GridPos        `json:"gridPos"`
	ID          int            `json:"id"`
	Options     map[string]any `json:"options,omitempty"`
	// Panels are a row's panels when it is collapsed (an empty list when
	// it is not); nil for other panels.
	Panels  *[]Panel `json:"panels,omitempty"`
	Targets []Target `json:"targets,omitempty"`
	Title   string   `json:"title"`
	Type    string   `json:"type"`
}

// FieldConfig holds a panel's unit and thresholds.
type FieldConfig struct {
	Defaults  FieldDefaults `json:"defaults"`
	Overrides []any         `json:"overrides"`
}

// FieldDefaults are the field defaults of a panel.
type FieldDefaults struct {
	Custom     map[string]any `json:"custom,omitempty"`
	Min        *float64       `json:"min,omitempty"`
	Thresholds *Thresholds    `json:"thresholds,omitempty"`
	Unit       string         `json:"unit"`
}

// Thresholds are absolute threshold steps.
type Thresholds struct {
	Mode  string          `json:"mode"`
	Steps []ThresholdStep `json:"steps"`
}

// ThresholdStep is one step; Value nil is the base.
type ThresholdStep struct {
	Color string   `json:"color"`
	Value *float64 `json:"value"`
}

// Target is one PromQL query of a panel.
type Target struct {
	Datasource   *DatasourceRef `json:"datasource"`
	Expr         string         `json:"expr"`
	LegendFormat string         `json:"legendFormat"`
	RefID        string         `json:"refId"`
}

// Exprs returns every PromQL expression of the dashboard: its panels'
// queries, and the series selectors its variables list label values of.
// Grafana's variables are left in them.
func (d Dashboard) Exprs() []string {
	var out []string
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out = append(out, t.Expr)
			}
			if p.Panels != nil {
				walk(*p.Panels)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if s, ok := strings.CutPrefix(v.Query, "label_values("); ok {
			if i := strings.LastIndex(s, ","); i >= 0 {
				out = append(out, s[:i])
			}
		}
	}
	return out
}

// Rows returns the titles of the dashboard's rows, in order.
func (d Dashboard) Rows() []string {
	var out []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			out = append(out, p.Title)
		}
	}
	return out
}

var dsRef = &DatasourceRef{Type: "prometheus", UID: "${datasource}"}

// builder lays panels out three to a line.
type builder struct {
	id, y, x int
	panels   []Panel
	// row collects the panels of a collapsed row.
	row *[]Panel
}

const (
	panelW = 8
	panelH = 8
)

func (b *builder) addRow(title string, collapsed bool) {
	if b.x > 0 {
		b.y += panelH
		b.x = 0
	}
	b.id++
	ps := []Panel{}
	b.panels = append(b.panels, Panel{Collapsed: &collapsed, GridPos: GridPos{H: 1, W: 24, Y: b.y}, ID: b.id, Panels: &ps, Title: title, Type: "row"})
	b.y++
	b.row = nil
	if collapsed {
		b.row = b.panels[len(b.panels)-1].Panels
	}
}

type series struct{ expr, legend string }

func (b *builder) add(title, unit, description string, s ...series) *Panel {
	b.id++
	zero := 0.0
	p := Panel{
		Datasource:  dsRef,
		Description: description,
		FieldConfig: &FieldConfig{Defaults: FieldDefaults{Unit: unit, Min: &zero, Custom: map[string]any{"fillOpacity": 10, "showPoints": "never"}}, Overrides: []any{}},
		GridPos:     GridPos{H: panelH, W: panelW, X: b.x, Y: b.y},
		ID:          b.id,
		Options: map[string]any{
			"legend":  map[string]any{"displayMode": "table", "placement": "bottom", "calcs": []string{"max", "lastNotNull"}, "showLegend": true},
			"tooltip": map[string]any{"mode": "multi", "sort": "desc"},
		},
		Title: title,
		Type:  "timeseries",
	}
	for i, x := range s {
		p.Targets = append(p.Targets, Target{Datasource: dsRef, Expr: x.expr, LegendFormat: x.legend, RefID: string(rune('A' + i))})
	}
	b.x += panelW
	if b.x >= 24 {
		b.x = 0
		b.y += panelH
	}
	if b.row != nil {
		*b.row = append(*b.row, p)
		return &(*b.row)[len(*b.row)-1]
	}
	b.panels = append(b.panels, p)
	return &b.panels[len(b.panels)-1]
}

// withLimitLine draws a red line at limit on a panel.
func withLimitLine(p *Panel, limit float64) {
	p.FieldConfig.Defaults.Thresholds = &Thresholds{Mode: "absolute", Steps: []ThresholdStep{{Color: "green"}, {Color: "red", Value: &limit}}}
	p.FieldConfig.Defaults.Custom["thresholdsStyle"] = map[string]any{"mode": "line"}
}

// NewDashboard builds the dashboard for the priority levels of a
// configuration: an overview row for all levels, then one row per level
// (sorted by name) with the panels that fit its type: exempt levels have
// no limit and no queues, Limited levels that reject have no queues.
func NewDashboard(levels []*flowcontrolv1.PriorityLevelConfiguration, opts Options, dopts DashboardOptions) Dashboard {
	sel := []string{}
	if opts.Selector != "" {
		sel = append(sel, opts.Selector)
	}
	if opts.ClusterLabel != "" {
		sel = append(sel, opts.ClusterLabel+`=~"$cluster"`)
	}
	sel = append(sel, opts.InstanceLabel+`=~"$instance"`)
	e := q{sel: strings.Join(sel, ", "), window: "$__rate_interval", keys: opts.keys()}
	inst := opts.InstanceLabel
	waitLimit := opts.WaitLimit.Seconds()

	b := &builder{}
	b.addRow("All priority levels", false)
	b.add("Rejected requests by level", "reqps", "HTTP 429s from APF by reason: queue-full and concurrency-limit at arrival, time-out after waiting in a queue.",
		series{"sum by (" + labelLevel + ", " + labelReason + ") (" + e.rate(e.m(metrics.RejectedRequestsTotal)) + ")", "{{priority_level}} {{reason}}"})
	b.add("Dispatched requests by level", "reqps", "Requests that APF let run.",
		series{"sum by (" + labelLevel + ") (" + e.rate(e.m(metrics.DispatchedRequestsTotal)) + ")", "{{priority_level}}"})
	b.add("Seat utilisation by level (busiest instance)", "percentunit",
		"Executing seats over the current limit, averaged over time from the histograms apiservers keep continuously, not from a gauge read once per scrape. Levels whose limit is 0 and exempt have none.",
		series{"max by (" + labelLevel + ") (\n" + e.utilisation() + "\n)", "{{priority_level}}"})
	withLimitLine(b.add("Queue wait p99 by level", "s",
		fmt.Sprintf("How long requests that were queued waited. They are rejected as time-out at the wait limit (%gs by default: a quarter of the request deadline).", waitLimit),
		series{"histogram_quantile(0.99, sum by (" + labelLevel + ", le) (" +
			e.rate(e.m(metrics.RequestWaitDurationSecond+"_bucket", `execute="true"`)) + "))", "{{priority_level}}"}), waitLimit)
	b.add("Requests in catch-all and global-default", "reqps",
		"Requests that no specific FlowSchema matched. catch-all traffic is a gap in the configuration; heavy global-default traffic shares one level whatever it is.",
		series{"sum by (" + labelFlowSchema + ") (" + e.rate(e.all(trafficFamilies, labelFlowSchema+`=~"catch-all|global-default"`)) + ")", "{{flow_schema}}"})
	lvl := "by (" + strings.Join(append(clusterLabels(opts), labelLevel), ", ") + ")"
	b.add("Distinct nominal limits across apiservers", "short",
		"How many different nominal limits the apiservers report for a level: 1 when they agree. More means a stale configuration on an instance, a release skew or different --max-requests-inflight flags.",
		series{"count " + lvl + " (count_values " + lvl + ` ("seats", ` + e.nominal() + "))", clusterLegend(opts) + "{{priority_level}}"})

	sorted := append([]*flowcontrolv1.PriorityLevelConfiguration(nil), levels...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, pl := range sorted {
		m := eq(labelLevel, pl.Name)
		b.addRow("Level "+pl.Name+": "+describeLevel(pl), true)
		limited := pl.Spec.Type != flowcontrolv1.PriorityLevelEnablementExempt
		req := []series{{"sum by (" + inst + ") (" + e.rate(e.m(metrics.DispatchedRequestsTotal, m)) + ")", "dispatched {{" + inst + "}}"}}
		if limited {
			req = append(req, series{"sum by (" + inst + ", " + labelReason + ") (" + e.rate(e.m(metrics.RejectedRequestsTotal, m)) + ")", "rejected {{reason}} {{" + inst + "}}"})
		}
		b.add("Requests", "reqps", "", req...)
		if !limited {
			b.add("Executing seats", "short", "exempt requests run at once and are never limited.",
				series{"sum by (" + inst + ") (\n" + e.seatsInUse(m) + "\n)", "{{" + inst + "}}"})
			continue
		}
		b.add("Seats", "short", "Seats in use against the limits: nominal, lower and upper bound the current limit, which borrowing moves. The upper limit overstates what borrowing can reach: a level borrows only what the other levels lend (kubernetes/kubernetes#129086).",
			series{"sum by (" + inst + ") (\n" + e.seatsInUse(m) + "\n)", "in use {{" + inst + "}}"},
			series{"max by (" + inst + ") (\n" + e.limitOrNominal(metrics.CurrentLimitSeats, m) + "\n)", "current limit {{" + inst + "}}"},
			series{"max by (" + inst + ") (\n" + e.nominal(m) + "\n)", "nominal {{" + inst + "}}"},
			series{"max by (" + inst + ") (" + e.m(metrics.LowerLimitSeats, m) + ")", "lower {{" + inst + "}}"},
			series{"max by (" + inst + ") (" + e.m(metrics.UpperLimitSeats, m) + ")", "upper {{" + inst + "}}"})
		b.add("Utilisation and demand", "percentunit",
			"Time-averaged executing seats and seat demand, both over the current limit. Demand above 100% is what borrowing tries to cover.",
			series{"max by (" + inst + ") (\n" + e.utilisation(m) + "\n)", "utilisation {{" + inst + "}}"},
			series{"max by (" + inst + ") (\n" + e.histAvg(demandSeats, m) + "\n)", "demand {{" + inst + "}}"})
		queuing := pl.Spec.Limited != nil && pl.Spec.Limited.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue
		if queuing {
			var qs []series
			for _, phi := range WaitQuantiles {
				qs = append(qs, series{"max by (" + inst + ") (\n" + e.waitQuantile(phi, m) + "\n)", "p" + strings.TrimPrefix(phi, "0.") + " {{" + inst + "}}"})
			}
			withLimitLine(b.add("Queue wait", "s", fmt.Sprintf("Wait in the queue of the requests that were queued; the line is the default wait limit (%gs).", waitLimit), qs...), waitLimit)
			b.add("Queues", "short",
				"Requests waiting now, and the length of a queue just after a request joined it. A long queue with a short total means one flow floods its queues; long queues everywhere mean the level is short of seats.",
				series{"sum by (" + inst + ") (" + e.m(metrics.CurrentInqueueRequests, m) + ")", "waiting {{" + inst + "}}"},
				series{"histogram_quantile(0.99, sum by (" + inst + ", le) (" + e.rate(e.m(queueLengthAfterEnqueue+"_bucket", m)) + "))", "queue length p99 after enqueue {{" + inst + "}}"})
		}
		b.add("Rejections by FlowSchema", "reqps", "Which flows are rejected, and why.",
			series{"sum by (" + labelFlowSchema + ", " + labelReason + ") (" + e.rate(e.m(metrics.RejectedRequestsTotal, m)) + ")", "{{flow_schema}} {{reason}}"})
	}

	vars := []Variable{{
		Current: map[string]any{}, Label: "Data source", Name: "datasource", Options: []any{}, Query: "prometheus", Refresh: 1, Type: "datasource",
	}}
	base := "apiserver_flowcontrol_dispatched_requests_total"
	baseSel := []string{}
	if opts.Selector != "" {
		baseSel = append(baseSel, opts.Selector)
	}
	if opts.ClusterLabel != "" {
		v := "label_values(" + selector(base, baseSel) + ", " + opts.ClusterLabel + ")"
		vars = append(vars, queryVariable("cluster", v, false))
		baseSel = append(baseSel, opts.ClusterLabel+`=~"$cluster"`)
	}
	vars = append(vars, queryVariable("instance", "label_values("+selector(base, baseSel)+", "+opts.InstanceLabel+")", true))

	return Dashboard{
		Annotations: List{List: []any{}},
		Description: "API Priority and Fairness per priority level, written by kubectl apf monitoring dashboard from the cluster's configuration.",
		Editable:    true, GraphTooltip: 1, Links: []any{},
		Panels:  b.panels,
		Refresh: "30s", SchemaVersion: 39,
		Tags:       []string{"kubernetes", "apiserver", "apf"},
		Templating: Templating{List: vars},
		Time:       TimeRange{From: "now-3h", To: "now"},
		Title:      dopts.Title, UID: dopts.UID, Version: 1,
	}
}

func selector(family string, ms []string) string {
	if len(ms) == 0 {
		return family
	}
	return family + "{" + strings.Join(ms, ", ") + "}"
}

func queryVariable(name, query string, multi bool) Variable {
	return Variable{
		AllValue: ".*", Current: map[string]any{"text": "All", "value": "$__all"}, Datasource: dsRef, Definition: query,
		IncludeAll: true, Label: name, Multi: multi, Name: name, Options: []any{}, Query: query, Refresh: 2, Sort: 1, Type: "query",
	}
}

func clusterLabels(o Options) []string {
	if o.ClusterLabel == "" {
		return nil
	}
	return []string{o.ClusterLabel}
}

func clusterLegend(o Options) string {
	if o.ClusterLabel == "" {
		return ""
	}
	return "{{" + o.ClusterLabel + "}} "
}

// describeLevel summarises a level's spec for its row title.
func describeLevel(pl *flowcontrolv1.PriorityLevelConfiguration) string {
	s := pl.Spec
	if s.Type == flowcontrolv1.PriorityLevelEnablementExempt {
		out := "Exempt"
		if s.Exempt != nil {
			out += ", " + shares(s.Exempt.NominalConcurrencyShares) + ", " + percent("lendable", s.Exempt.LendablePercent)
		}
		return out
	}
	if s.Limited == nil {
		return string(s.Type)
	}
	l := s.Limited
	out := "Limited, " + shares(l.NominalConcurrencyShares) + ", " + percent("lendable", l.LendablePercent) + ", "
	if l.BorrowingLimitPercent == nil {
		out += "no borrowing limit"
	} else {
		out += percent("borrowing limit", l.BorrowingLimitPercent)
	}
	if l.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue && l.LimitResponse.Queuing != nil {
		qc := l.LimitResponse.Queuing
		out += fmt.Sprintf(", %d queues of %d, hand %d", qc.Queues, qc.QueueLengthLimit, qc.HandSize)
	} else if l.LimitResponse.Type == flowcontrolv1.LimitResponseTypeReject {
		out += ", rejects when full"
	}
	return out
}

func shares(p *int32) string {
	if p == nil {
		return "default shares"
	}
	return fmt.Sprintf("%d shares", *p)
}

func percent(what string, p *int32) string {
	if p == nil {
		return what + " default"
	}
	return fmt.Sprintf("%s %d%%", what, *p)
}

// MarshalDashboard writes the dashboard as indented JSON, without HTML escapes
// (PromQL is full of < and >).
func MarshalDashboard(d Dashboard) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
