package fetch

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// APIResources lists the resources the cluster serves, by discovery (GET
// /api and /apis, aggregated where the server serves it so): the preferred
// version of each group, in the server's order of groups, subresources
// left out. Groups whose discovery failed (an aggregated API that is down)
// are left out and named in the error returned beside the others; an
// error with no lists is one actionable line.
func APIResources(cfg *rest.Config) ([]*metav1.APIResourceList, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a discovery client for %s: %w", cfg.Host, err)
	}
	lists, err := dc.ServerPreferredResources()
	var failed *discovery.ErrGroupDiscoveryFailed
	switch {
	case err == nil:
	case errors.As(err, &failed) && len(lists) > 0:
		groups := make([]string, 0, len(failed.Groups))
		for gv := range failed.Groups {
			groups = append(groups, gv.String())
		}
		slices.Sort(groups)
		err = fmt.Errorf("the discovery of %s failed", strings.Join(groups, ", "))
	default:
		return nil, ExplainFetchError(cfg.Host, "/apis", cfg.Timeout, err)
	}
	for _, l := range lists {
		rs := l.APIResources[:0:0]
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") {
				rs = append(rs, r)
			}
		}
		l.APIResources = rs
	}
	return lists, err
}
