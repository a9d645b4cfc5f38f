package config

import (
	"strings"
	"testing"
)

const twoDocs = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: batch
spec:
  priorityLevelConfiguration:
    name: batch
  rules:
  - subjects:
    - kind: Group
      group: {name: batch}
    resourceRules:
    - verbs: ["*"]
      apiGroups: ["*"]
      resources: ["*"]
      namespaces: ["*"]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: batch
spec:
  type: Limited
  limited:
    limitResponse:
      type: Queue
      queuing: {queues: 16}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: unrelated
`

func TestParseObjects(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		fss, pls int
		skipped  int
		wantErr  string
	}{
		{name: "yaml stream with an unrelated object", in: twoDocs, fss: 1, pls: 1, skipped: 1},
		{name: "json list", in: `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"x"},"spec":{"type":"Limited","limited":{"limitResponse":{"type":"Reject"}}}}]}`, pls: 1},
		{name: "empty documents", in: "---\n---\n", fss: 0},
		{name: "misspelt field", in: "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {name: x}\nspec: {type: Limited, limited: {limitResponse: {type: Queue, queuing: {handsize: 4}}}}\n", wantErr: `f.yaml: document 1: PriorityLevelConfiguration has unknown field "spec.limited.limitResponse.queuing.handsize"`},
		{name: "unknown api version", in: "apiVersion: flowcontrol.apiserver.k8s.io/v2alpha1\nkind: FlowSchema\nmetadata: {name: x}\n", wantErr: "which this plugin does not read"},
		{name: "field of another version", in: "apiVersion: flowcontrol.apiserver.k8s.io/v1beta2\nkind: PriorityLevelConfiguration\nmetadata: {name: x}\nspec: {type: Limited, limited: {nominalConcurrencyShares: 5, limitResponse: {type: Reject}}}\n", wantErr: `unknown field "spec.limited.nominalConcurrencyShares"`},
		{name: "invalid as the server says", in: "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: x}\nspec: {priorityLevelConfiguration: {name: p}, rules: [{subjects: [{kind: User, user: {name: a}}], resourceRules: [{verbs: [frobnicate], apiGroups: ['*'], resources: ['*'], clusterScope: true}]}]}\n", wantErr: "FlowSchema x is invalid (kube-apiserver would reject it): spec.rules[0].resourceRules[0].verbs: Unsupported value"},
		{name: "v1alpha1 level", in: "apiVersion: flowcontrol.apiserver.k8s.io/v1alpha1\nkind: PriorityLevelConfiguration\nmetadata: {name: x}\nspec: {type: Limited, limited: {assuredConcurrencyShares: 5, limitResponse: {type: Reject}}}\n", pls: 1},
		{name: "v1alpha1 schema", in: "apiVersion: flowcontrol.apiserver.k8s.io/v1alpha1\nkind: FlowSchema\nmetadata: {name: x}\nspec: {priorityLevelConfiguration: {name: p}, matchingPrecedence: 500, rules: [{subjects: [{kind: User, user: {name: a}}], nonResourceRules: [{verbs: ['*'], nonResourceURLs: ['*']}]}]}\n", fss: 1},
		{name: "v1alpha1 had no lendablePercent", in: "apiVersion: flowcontrol.apiserver.k8s.io/v1alpha1\nkind: PriorityLevelConfiguration\nmetadata: {name: x}\nspec: {type: Limited, limited: {lendablePercent: 5, limitResponse: {type: Reject}}}\n", wantErr: `unknown field "spec.limited.lendablePercent"`},
		{name: "namespaced FlowSchema as operators ship it", in: "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: x, namespace: kueue-system}\nspec: {priorityLevelConfiguration: {name: p}, rules: [{subjects: [{kind: User, user: {name: a}}], nonResourceRules: [{verbs: ['*'], nonResourceURLs: ['*']}]}]}\n", fss: 1},
		{name: "namespaced level", in: "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: PriorityLevelConfiguration\nmetadata: {name: x, namespace: kueue-system}\nspec: {type: Limited, limited: {limitResponse: {type: Reject}}}\n", pls: 1},
		{name: "no name", in: "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nspec: {}\n", wantErr: "FlowSchema without metadata.name"},
		{name: "not yaml", in: "a: [", wantErr: "f.yaml: document 1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseObjects([]byte(tt.in), "f.yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.FlowSchemas) != tt.fss || len(got.PriorityLevels) != tt.pls || got.Skipped != tt.skipped {
				t.Fatalf("got %d FlowSchemas, %d levels, %d skipped", len(got.FlowSchemas), len(got.PriorityLevels), got.Skipped)
			}
		})
	}
}

func TestParseObjectsKeepsFields(t *testing.T) {
	got, err := ParseObjects([]byte(twoDocs), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fs, pl := got.FlowSchemas[0], got.PriorityLevels[0]
	if fs.Spec.Rules[0].Subjects[0].Group.Name != "batch" || fs.Spec.Rules[0].ResourceRules[0].Namespaces[0] != "*" {
		t.Fatalf("FlowSchema decoded as %+v", fs.Spec)
	}
	if pl.Spec.Limited.LimitResponse.Queuing.Queues != 16 || pl.Spec.Limited.LimitResponse.Queuing.HandSize != 0 {
		t.Fatalf("level decoded as %+v", pl.Spec.Limited.LimitResponse.Queuing)
	}
}

// TestParseObjectsClearsNamespace: kube-apiserver clears metadata.namespace
// on a cluster-scoped object before validating it
// (k8s.io/apiserver pkg/registry/rest/meta.go
// EnsureObjectNamespaceMatchesRequestNamespace), so lint reads the object as
// the server stores it and says so in a note.
func TestParseObjectsClearsNamespace(t *testing.T) {
	in := strings.Replace(twoDocs, "  name: batch\nspec:\n  priorityLevelConfiguration", "  name: batch\n  namespace: kueue-system\nspec:\n  priorityLevelConfiguration", 1)
	got, err := ParseObjects([]byte(in), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ns := got.FlowSchemas[0].Namespace; ns != "" {
		t.Errorf("namespace %q kept", ns)
	}
	if len(got.Converted) != 1 || !strings.Contains(got.Converted[0], `FlowSchema batch has metadata.namespace "kueue-system"`) {
		t.Errorf("notes %q", got.Converted)
	}
}

// typedList is a FlowSchemaList as kube-apiserver answers a LIST
// ("kubectl get --raw /apis/flowcontrol.apiserver.k8s.io/v1/flowschemas")
// and a bundle keeps it: its items carry no kind and apiVersion.
const typedList = `{"kind":"FlowSchemaList","apiVersion":"flowcontrol.apiserver.k8s.io/v1","metadata":{"resourceVersion":"1"},"items":[` +
	`{"metadata":{"name":"a"},"spec":{"priorityLevelConfiguration":{"name":"p"},"matchingPrecedence":500,"rules":[{"subjects":[{"kind":"User","user":{"name":"a"}}],"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}},` +
	`{"metadata":{"name":"b"},"spec":{"priorityLevelConfiguration":{"name":"p"},"matchingPrecedence":600,"rules":[{"subjects":[{"kind":"User","user":{"name":"b"}}],"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}]}`

// TestParseObjectsTypedList: the items of a typed list take their kind and
// apiVersion from the list (lint -f on the apiserver's list said "holds no
// FlowSchema or PriorityLevelConfiguration (13 other objects)"), in JSON
// and YAML and from a beta version; a kind: List's items keep theirs.
func TestParseObjectsTypedList(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		fss, pls int
		skipped  int
		wantErr  string
	}{
		{name: "the apiserver's FlowSchemaList", in: typedList, fss: 2},
		{name: "its YAML", in: "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchemaList\nmetadata: {}\nitems:\n" +
			"- metadata: {name: a}\n  spec: {priorityLevelConfiguration: {name: p}, rules: [{subjects: [{kind: User, user: {name: a}}], nonResourceRules: [{verbs: ['*'], nonResourceURLs: ['*']}]}]}\n" +
			"- metadata: {name: b}\n  spec: {priorityLevelConfiguration: {name: p}}\n", fss: 2},
		{name: "a beta level list, converted", in: `{"kind":"PriorityLevelConfigurationList","apiVersion":"flowcontrol.apiserver.k8s.io/v1beta2","items":[{"metadata":{"name":"x"},"spec":{"type":"Limited","limited":{"assuredConcurrencyShares":5,"limitResponse":{"type":"Reject"}}}}]}`, pls: 1},
		{name: "an item of a typed list checked as its kind", in: `{"kind":"FlowSchemaList","apiVersion":"flowcontrol.apiserver.k8s.io/v1","items":[{"metadata":{"name":"a"},"spec":{"priorityLevelConfiguration":{"name":"p"},"bogus":1}}]}`,
			wantErr: `FlowSchemaList item 0: FlowSchema has unknown field "spec.bogus"`},
		{name: "an item with its own kind", in: `{"kind":"FlowSchemaList","apiVersion":"flowcontrol.apiserver.k8s.io/v1","items":[{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"x"},"spec":{"type":"Limited","limited":{"limitResponse":{"type":"Reject"}}}}]}`, pls: 1},
		{name: "a list of another kind", in: `{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}`, skipped: 2},
		{name: "kind List with typed items", in: `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"x"},"spec":{"type":"Limited","limited":{"limitResponse":{"type":"Reject"}}}}]}`, pls: 1},
		{name: "kind List with untyped items", in: `{"apiVersion":"v1","kind":"List","items":[{"metadata":{"name":"a"}}]}`, skipped: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseObjects([]byte(tt.in), "f.json")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.FlowSchemas) != tt.fss || len(got.PriorityLevels) != tt.pls || got.Skipped != tt.skipped {
				t.Fatalf("got %d FlowSchemas, %d levels, %d skipped", len(got.FlowSchemas), len(got.PriorityLevels), got.Skipped)
			}
		})
	}
}

func FuzzParseObjects(f *testing.F) {
	f.Add([]byte(twoDocs))
	f.Add([]byte(typedList))
	f.Add([]byte("$ kubectl get flowschemas\nNAME   PRIORITYLEVEL   MATCHINGPRECEDENCE\nexempt   exempt   1\n"))
	f.Add([]byte(`{"kind":"List","items":[{"kind":"List","items":[]}]}`))
	f.Add([]byte("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: x}\nspec: {rules: [{subjects: [{kind: User}]}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := ParseObjects(data, "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: ") {
				t.Fatalf("error without its source: %v", err)
			}
			return
		}
		// Whatever parses must overlay the defaults and resolve its
		// callbacks without panicking (pkg/lint's FuzzLintParsed lints it).
		fss, pls := UpstreamDefaults()
		Overlay(fss, pls, objs)
		objs.ResolvedCallbacks()
	})
}

// TestParseObjectsPlainErrors: a document that is no object says what it
// is, and names no Go type: above all the table "kubectl get flowschemas"
// prints (the EKS guide's, testdata/field/get-flowschemas-eks.txt), whose
// fix is -o yaml; a field of the wrong type is named with the kinds of
// value (issue 47's field test, N6).
func TestParseObjectsPlainErrors(t *testing.T) {
	table := "$ kubectl get flowschemas\nNAME                           PRIORITYLEVEL     MATCHINGPRECEDENCE   DISTINGUISHERMETHOD   AGE     MISSINGPL\n" +
		"exempt                         exempt            1                    <none>                7h19m   False\n"
	for _, tt := range []struct{ name, in, want string }{
		{"kubectl get table", table, `f.yaml: document 1: a "kubectl get" table, not objects: give the objects themselves, as "kubectl get flowschemas,prioritylevelconfigurations -o yaml" prints them`},
		{"plain text", "hello world\n", "not a Kubernetes object: text, where a YAML or JSON object with apiVersion and kind is expected"},
		{"a list", "- a\n- b\n", "not a Kubernetes object: a list, where"},
		{"a field of the wrong type", "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: x}\nspec: {rules: x, priorityLevelConfiguration: {name: p}}\n",
			"FlowSchema is malformed: spec.rules: a string where a list is expected"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseObjects([]byte(tt.in), "f.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "typeMeta") {
				t.Errorf("a Go type in %q", err)
			}
		})
	}
}
