package monitoring

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
)

func upstreamLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	_, pls := config.UpstreamDefaults()
	return pls
}

func mustDashboard(t *testing.T, d Dashboard) []byte {
	t.Helper()
	b, err := MarshalDashboard(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDashboardGolden(t *testing.T) {
	d := NewDashboard(upstreamLevels(), DefaultOptions(), DefaultDashboardOptions())
	checkGolden(t, "dashboard.golden.json", mustDashboard(t, d))
}

// TestDashboardRows: one row per level of the configuration, sorted by
// name, after the overview; each row has the panels its type can fill.
func TestDashboardRows(t *testing.T) {
	pls := upstreamLevels()
	d := NewDashboard(pls, DefaultOptions(), DefaultDashboardOptions())
	var want []string
	for _, pl := range pls {
		want = append(want, pl.Name)
	}
	slices.Sort(want)
	var got []string
	for _, r := range d.Rows()[1:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(r, "Level "), ":")
		got = append(got, name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rows %v, want the levels %v", got, want)
	}
	panels := map[string][]string{}
	for _, p := range d.Panels[1:] {
		if p.Type != "row" || p.Panels == nil {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(p.Title, "Level "), ":")
		for _, c := range *p.Panels {
			panels[name] = append(panels[name], c.Title)
		}
	}
	for name, want := range map[string][]string{
		"exempt":       {"Requests", "Executing seats"},
		"catch-all":    {"Requests", "Seats", "Utilisation and demand", "Rejections by FlowSchema"},
		"workload-low": {"Requests", "Seats", "Utilisation and demand", "Queue wait", "Queues", "Rejections by FlowSchema"},
	} {
		if !slices.Equal(panels[name], want) {
			t.Errorf("level %s has panels %v, want %v", name, panels[name], want)
		}
	}
}

// TestDashboardEscapesNames: a level name that PromQL or Grafana would
// misread stays one literal label value.
func TestDashboardEscapesNames(t *testing.T) {
	pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: `we"ird$name\`},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}}
	d := NewDashboard([]*flowcontrolv1.PriorityLevelConfiguration{pl}, DefaultOptions(), DefaultDashboardOptions())
	n := 0
	for _, e := range d.Exprs() {
		if strings.Contains(e, `priority_level="we\"ird\x24name\\"`) {
			n++
		}
		if strings.Contains(e, "$name") {
			t.Errorf("a Grafana variable $name in %s", e)
		}
	}
	if n == 0 {
		t.Fatal("no query selects the level by its escaped name")
	}
}

// grafanaVars are the values Grafana puts in place of the dashboard's
// variables; any other $ left in a query is a mistake.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$cluster", ".*", "$instance", ".*")

var leftover = regexp.MustCompile(`\$[a-zA-Z_{]`)

// TestDashboardQueriesParse: every query of the dashboard (and the series
// selectors of its variables) parses with the real Prometheus parser, by
// way of "promtool check rules" on one recording rule per query.
func TestDashboardQueriesParse(t *testing.T) {
	opts := variants()
	for name, o := range map[string]Options{"defaults": opts["defaults"], "no-cluster": opts["no-cluster"], "selector": opts["selector"]} {
		t.Run(name, func(t *testing.T) {
			pls := upstreamLevels()
			d := NewDashboard(pls, o, DefaultDashboardOptions())
			f := RuleFile{Groups: []RuleGroup{{Name: "dashboard"}}}
			for i, e := range d.Exprs() {
				x := grafanaVars.Replace(e)
				if leftover.MatchString(x) {
					t.Errorf("query %d keeps a variable Grafana does not define: %s", i, e)
				}
				f.Groups[0].Rules = append(f.Groups[0].Rules, Rule{Record: fmt.Sprintf("dashboard_query_%d", i), Expr: x})
			}
			if len(f.Groups[0].Rules) < 6+len(pls)*2 {
				t.Fatalf("only %d queries", len(f.Groups[0].Rules))
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "queries.yaml"), mustYAML(t, f), 0o644); err != nil {
				t.Fatal(err)
			}
			out := runPromtool(t, dir, "check", "rules", "queries.yaml")
			if !strings.Contains(out, fmt.Sprintf("SUCCESS: %d rules found", len(f.Groups[0].Rules))) {
				t.Fatalf("promtool check rules: %s", out)
			}
		})
	}
}
