package lint

import (
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
)

// FuzzLintParsed: whatever config.ParseObjects reads must lint without
// panicking, alone and over the defaults.
func FuzzLintParsed(f *testing.F) {
	f.Add([]byte("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: batch}\nspec:\n  priorityLevelConfiguration: {name: batch}\n  rules:\n  - subjects: [{kind: Group, group: {name: batch}}]\n    resourceRules: [{verbs: [\"*\"], apiGroups: [\"*\"], resources: [\"*\"], namespaces: [\"*\"]}]\n---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {name: batch}\nspec: {type: Limited, limited: {limitResponse: {type: Queue, queuing: {queues: 16}}}}\n"))
	f.Add([]byte(`{"kind":"List","items":[{"kind":"List","items":[]}]}`))
	f.Add([]byte("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: x}\nspec: {rules: [{subjects: [{kind: User}]}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := config.ParseObjects(data, "fuzz")
		if err != nil {
			return
		}
		Lint(Input{FlowSchemas: objs.FlowSchemas, PriorityLevels: objs.PriorityLevels, Callbacks: objs.ResolvedCallbacks()}, DefaultOptions())
		fss, pls := config.UpstreamDefaults()
		fss, pls = config.Overlay(fss, pls, objs)
		Lint(Input{FlowSchemas: fss, PriorityLevels: pls, Reference: config.UpstreamReference(), Callbacks: objs.ResolvedCallbacks()}, DefaultOptions())
	})
}
