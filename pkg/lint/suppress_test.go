package lint

import (
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
)

func TestParseConfig(t *testing.T) {
	tests := []struct{ in, wantErr string }{
		{"suppressions:\n- {rule: precedence-tie, name: 'ci-*', reason: tie reviewed}\n", ""},
		{"suppressions:\n- {rule: precedence-tie, name: 'ci-*', kind: PriorityLevelConfiguration, reason: r}\n", ""},
		{"suppressions:\n- {rule: precedence-tie, name: 'ci-*'}\n", "reason is required"},
		{"suppressions:\n- {rule: precedence-tie, reason: r}\n", "name is required"},
		{"suppressions:\n- {rule: precedence-tie, name: x, kind: Pod, reason: r}\n", "kind must be FlowSchema or PriorityLevelConfiguration"},
		{"suppressions:\n- {rule: nope, name: x, reason: r}\n", `no lint rule "nope"`},
		{"suppresions: []\n", `unknown field "suppresions"`},
		{"suppressions: [", "c.yaml"},
	}
	for _, tt := range tests {
		_, err := ParseConfig([]byte(tt.in), "c.yaml")
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%q: %v, want %q", tt.in, err, tt.wantErr)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("suppressions:\n- {rule: precedence-tie, name: 'ci-*', reason: tie reviewed}\n"))
	f.Add([]byte("suppressions:\n- {rule: precedence-tie, name: '[', reason: r}\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data, "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--config fuzz") {
				t.Fatalf("error without its source: %v", err)
			}
			return
		}
		// What parses suppresses without panicking.
		fss, pls := config.UpstreamDefaults()
		in := Input{FlowSchemas: fss, PriorityLevels: pls, Reference: config.UpstreamReference()}
		Suppress(Lint(in, DefaultOptions()), in, cfg)
	})
}
