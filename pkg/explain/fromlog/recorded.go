package fromlog

import (
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// RecordedIdentity is the identity of an audit record, with the groups the
// impersonation filter adds when the record is of an impersonated user
// (filters/impersonation.go adds system:authenticated to every
// non-anonymous user).
func RecordedIdentity(r *workload.Request) engine.Identity {
	id := engine.Identity{User: r.User, Groups: append([]string(nil), r.Groups...)}
	if r.User == user.Anonymous {
		return id
	}
	for _, g := range id.Groups {
		if g == user.AllAuthenticated || g == user.AllUnauthenticated {
			return id
		}
	}
	id.Groups = append(id.Groups, user.AllAuthenticated)
	return id
}
