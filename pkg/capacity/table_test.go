package capacity

import (
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

func defaultLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	var out []*flowcontrolv1.PriorityLevelConfiguration
	for _, pl := range engine.DefaultPriorityLevels() {
		out = append(out, pl.DeepCopy())
	}
	return out
}

// TestComputeDefaults checks the table of the suggested configuration at the
// default server limit against the figures a running kube-apiserver reports
// in its apiserver_flowcontrol_{nominal,lower,upper}_limit_seats metrics,
// the wait limit (60s/4) and the crush probabilities of 64/6 and 128/6
// computed exactly.
func TestComputeDefaults(t *testing.T) {
	tab, err := Compute(defaultLevels(), 600, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ nominal, lendable, lower, upper int }
	want := map[string]row{
		"exempt":          {0, 0, 0, 600},
		"catch-all":       {13, 0, 13, 613},
		"system":          {74, 24, 50, 674},
		"node-high":       {98, 25, 73, 698},
		"leader-election": {25, 0, 25, 625},
		"workload-high":   {98, 49, 49, 698},
		"workload-low":    {245, 221, 24, 845},
		"global-default":  {49, 25, 24, 649},
	}
	if len(tab.Levels) != len(want) {
		t.Fatalf("got %d levels, want %d", len(tab.Levels), len(want))
	}
	if tab.NominalSum != 602 {
		t.Errorf("nominal sum %d, want 602 (ceil rounding)", tab.NominalSum)
	}
	for _, l := range tab.Levels {
		w := want[l.Name]
		if got := (row{l.NominalCL, l.LendableCL, l.LowerCL, l.UpperCL}); got != w {
			t.Errorf("%s: got %+v, want %+v", l.Name, got, w)
		}
		queuing := l.LimitResponse == "Queue"
		if queuing != (l.WaitLimit == 15*time.Second) {
			t.Errorf("%s: wait limit %v (queuing %v)", l.Name, l.WaitLimit, queuing)
		}
		if queuing != (len(l.Crush) == 3) {
			t.Errorf("%s: crush table %v (queuing %v)", l.Name, l.Crush, queuing)
		}
	}
	for _, l := range tab.Levels {
		if l.Name != "workload-low" {
			continue
		}
		p, _ := CrushProbabilityRat(128, 6, 4)
		f, _ := p.Float64()
		if l.Crush[1].Probability != f || l.Crush[1].Elephants != 4 {
			t.Errorf("workload-low crush %v, want %v for 4 elephants", l.Crush[1], f)
		}
	}
}

func TestParseSetting(t *testing.T) {
	tests := []struct {
		in      string
		want    Setting
		wantErr string
	}{
		{in: "workload-low.shares=200", want: Setting{Level: "workload-low", Field: "nominalConcurrencyShares", Value: ptr(200)}},
		{in: "my.level.queues=256", want: Setting{Level: "my.level", Field: "queues", Value: ptr(256)}},
		{in: "global-default.HandSize=4", want: Setting{Level: "global-default", Field: "handSize", Value: ptr(4)}},
		{in: "x.borrowingLimitPercent=unset", want: Setting{Level: "x", Field: "borrowingLimitPercent"}},
		{in: "x.queues", wantErr: "want LEVEL.FIELD=VALUE"},
		{in: ".queues=1", wantErr: "want LEVEL.FIELD=VALUE"},
		{in: "x.=1", wantErr: "want LEVEL.FIELD=VALUE"},
		{in: "x.colour=1", wantErr: `unknown field "colour"`},
		{in: "x.queues=-1", wantErr: "must be a non-negative integer"},
		{in: "x.queues=unset", wantErr: "only borrowingLimitPercent can be unset"},
		{in: "Bad_Name.queues=1", wantErr: "not a valid priority level name"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSetting(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Level != tt.want.Level || got.Field != tt.want.Field || (got.Value == nil) != (tt.want.Value == nil) ||
				(got.Value != nil && *got.Value != *tt.want.Value) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func ptr(v int32) *int32 { return &v }

func TestApplyChangesSeatsAsExpected(t *testing.T) {
	// Doubling workload-low's shares (100 -> 200) raises the share sum from
	// 245 to 345: workload-low gets ceil(600*200/345) = 348 seats and
	// global-default ceil(600*20/345) = 35.
	pls, err := Apply(defaultLevels(), []Setting{{Level: "workload-low", Field: "nominalConcurrencyShares", Value: ptr(200)}})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Compute(pls, 600, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, l := range tab.Levels {
		got[l.Name] = l.NominalCL
	}
	if got["workload-low"] != 348 || got["global-default"] != 35 {
		t.Fatalf("nominal seats %v", got)
	}
	for _, bad := range []struct {
		s       Setting
		wantErr string
	}{
		{Setting{Level: "nope", Field: "queues", Value: ptr(1)}, `no priority level named "nope"`},
		{Setting{Level: "catch-all", Field: "queues", Value: ptr(8)}, "rejects instead of queuing"},
		{Setting{Level: "exempt", Field: "queues", Value: ptr(8)}, "exempt level has only"},
		{Setting{Level: "system", Field: "handSize", Value: ptr(65)}, "need 1 <= handSize <= queues"},
		{Setting{Level: "system", Field: "lendablePercent", Value: ptr(101)}, "between 0 and 100"},
	} {
		if _, err := Apply(defaultLevels(), []Setting{bad.s}); err == nil || !strings.Contains(err.Error(), bad.wantErr) {
			t.Errorf("%+v: got %v, want error containing %q", bad.s, err, bad.wantErr)
		}
	}
}

func FuzzParseSetting(f *testing.F) {
	for _, s := range []string{"workload-low.shares=200", "a.b.c.queues=1", "x.borrowingLimitPercent=unset", "=", ".", "x.queues=99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := ParseSetting(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--set ") {
				t.Fatalf("error without context: %v", err)
			}
			return
		}
		if set.Level == "" || set.Field == "" || (set.Value == nil && set.Field != "borrowingLimitPercent") {
			t.Fatalf("accepted %q as %+v", s, set)
		}
		// Applying a parsed setting must never panic.
		_, _ = Apply(defaultLevels(), []Setting{set})
	})
}
