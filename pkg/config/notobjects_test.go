package config

import (
	"strings"
	"testing"
)

// A Helm template and a shell script with a here-document hold the
// objects' text but are not objects: each is named, with the kinds in it
// and what to give instead. They were "document 1: json: offset 2: invalid
// character '{' looking for beginning of object key string" and
// "document 1: not a Kubernetes object: text" (testdata/field's
// deckhouse-helm-lib-flow-schema.tpl and karpenter-docs-apply-flowschemas.sh).
func TestUnrenderedTextNamed(t *testing.T) {
	tpl := "{{- /* Usage: {{ include \"x\" . }} */ -}}\n{{- define \"x\" }}\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: {{ .Chart.Name }}-fs\n{{- end }}\n"
	sh := "cat <<'EOF' | envsubst | kubectl apply -f -\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata:\n  name: p\n---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: f-${CLUSTER}\nspec:\n  x: $NS\nEOF\n"
	for _, c := range []struct{ name, in, want string }{
		{"t.tpl", tpl, "t.tpl is a Helm (Go) template, not objects: 1 FlowSchema with 4 {{ }} actions not rendered: render it"},
		{"s.sh", sh, "s.sh is a shell script, not objects: its here-document (cat <<'EOF' | envsubst | kubectl apply -f -) holds 1 PriorityLevelConfiguration and 1 FlowSchema: give the lines between <<EOF and EOF as a file, with ${CLUSTER}, $NS replaced by their values"},
	} {
		_, err := ParseObjects([]byte(c.in), c.name)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// Objects whose strings hold {{ }} (a PrometheusRule's annotations)
	// are read as before: skipped, not refused.
	rule := "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: r\nspec:\n  groups:\n  - name: g\n    rules:\n    - alert: A\n      expr: up == 0\n      annotations:\n        summary: '{{ $labels.instance }} is down'\n"
	o, err := ParseObjects([]byte(rule), "rule.yaml")
	if err != nil || o.Skipped != 1 {
		t.Errorf("a PrometheusRule: %v, skipped %d", err, o.Skipped)
	}
}
