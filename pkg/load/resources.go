package load

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
)

// APIResources are the resources a request given by resource type is
// looked up in (engine.LookupResource): the cluster's, by discovery, when
// the source is a cluster; otherwise, or when the discovery fails,
// engine.BuiltinResources, with a note that says so. from names them for
// an error: "the cluster's resources", "the built-in resources of
// Kubernetes 1.37".
func (o *Options) APIResources() (rs []engine.APIResource, from string, notes []string) {
	builtin := "the built-in resources of Kubernetes " + engine.BuiltinResourcesRelease
	cs, ok := o.Source.(*fetch.ClusterSource)
	if !ok {
		return engine.BuiltinResources, builtin, nil
	}
	lists, err := fetch.APIResources(cs.Config)
	if len(lists) == 0 {
		return engine.BuiltinResources, builtin, []string{fmt.Sprintf("note: the cluster's resources could not be listed (%v): %s are used", err, builtin)}
	}
	if err != nil {
		notes = append(notes, fmt.Sprintf("note: %v: their resources are not known", err))
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			rs = append(rs, engine.APIResource{Group: gv.Group, Version: gv.Version, Resource: r.Name, Singular: r.SingularName,
				Kind: r.Kind, ShortNames: r.ShortNames, Namespaced: r.Namespaced})
		}
	}
	return rs, "the cluster's resources", notes
}
