package config

import "testing"

func TestLocate(t *testing.T) {
	in := `# comment
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  labels:
    name: not-this
  name: first   # the name
spec: {}
---
kind: PriorityLevelConfiguration
apiVersion: flowcontrol.apiserver.k8s.io/v1
metadata: {name: second, namespace: x}
---
{"apiVersion": "v1", "kind": "List", "items": [
  {"kind": "FlowSchema",
   "metadata": {"name": "third"}}]}
`
	got := locate([]byte(in), "f.yaml")
	want := map[ObjectRef]int{ObjectRef{Kind: kindFS, Name: "first"}: 7, ObjectRef{Kind: kindPL, Name: "second"}: 12, ObjectRef{Kind: kindFS, Name: "third"}: 16}
	for ref, line := range want {
		if got[ref].Line != line || got[ref].File != "f.yaml" {
			t.Errorf("%s at %+v, want line %d", ref, got[ref], line)
		}
	}
	if len(got) != len(want) {
		t.Errorf("located %v", got)
	}
}
