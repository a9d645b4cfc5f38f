package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// RBACHintCommand is the command that prints a ClusterRole granting what
// kubectl-apf reads.
const RBACHintCommand = "kubectl apf rbac"

// DebugURLPattern is the nonResourceURLs entry that grants the three dumps.
const DebugURLPattern = "/debug/api_priority_and_fairness/*"

// rbacRule names the RBAC rule a GET of path needs.
func rbacRule(path string) string {
	switch {
	case strings.HasPrefix(path, "/debug/api_priority_and_fairness/"):
		return fmt.Sprintf("nonResourceURLs [%q] with verb get", DebugURLPattern)
	case path == "/metrics":
		return `nonResourceURLs ["/metrics"] with verb get`
	case strings.Contains(path, "/flowschemas"):
		return `resource flowschemas in API group flowcontrol.apiserver.k8s.io with verb list`
	case strings.Contains(path, "/prioritylevelconfigurations"):
		return `resource prioritylevelconfigurations in API group flowcontrol.apiserver.k8s.io with verb list`
	case strings.Contains(path, "/endpointslices"):
		return `resource endpointslices in API group discovery.k8s.io, namespace default, with verb list`
	}
	return fmt.Sprintf("nonResourceURLs [%q] with verb get", path)
}

// Forbidden is the one line of every 403 the plugin is answered, from a
// cluster or a store: what was refused, and what to grant or check. The
// store clients (pkg/promfetch, pkg/vlogs) say it through this function
// and ServiceProxyForbidden, so the sentence is written once.
func Forbidden(what, remedy string) error {
	return fmt.Errorf("%s: forbidden (403): %s", what, remedy)
}

// ServiceProxyForbidden is the 403 of a store read through the
// apiserver's service proxy (--prometheus-service,
// --victorialogs-service): the kubectl identity lacks get on
// services/proxy. where names the store, service is the flag's
// NAMESPACE/NAME:PORT, for the command that prints the Role.
func ServiceProxyForbidden(where, service string) error {
	return Forbidden(where, fmt.Sprintf("the kubectl identity needs get on services/proxy in that namespace; %q prints a Role that grants it", RBACHintCommand+" --store-service "+service))
}

// ExplainFetchError turns the error of a GET of path on instance into one
// line a person can act on. timeout is the --request-timeout in force (0:
// none), named when the request timed out.
func ExplainFetchError(instance, path string, timeout time.Duration, err error) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf("GET %s on %s", path, instance)
	var se apierrors.APIStatus
	switch {
	case apierrors.IsForbidden(err):
		return Forbidden(what, fmt.Sprintf("your identity lacks the RBAC rule %s; ask an admin to bind the read-only ClusterRole printed by %q", rbacRule(path), RBACHintCommand))
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: unauthorized (401): the apiserver rejected the credentials of the kubeconfig", what)
	case apierrors.IsNotFound(err) && strings.HasPrefix(path, "/debug/api_priority_and_fairness/"):
		return fmt.Errorf("%s: not found (404): API Priority and Fairness is disabled on this apiserver (--enable-priority-and-fairness=false) or its debug endpoints are not served there (is this a kube-apiserver, not an aggregated server or a proxy?)", what)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: not found (404): not served by this apiserver", what)
	case isTimeout(err):
		hint := "raise it with --request-timeout"
		if timeout > 0 {
			hint = fmt.Sprintf("--request-timeout is %s; raise it", timeout)
		}
		return fmt.Errorf("%s: timed out (%s)", what, hint)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: truncated response: the connection closed before the body was complete", what)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%s: connection refused: nothing listens there (is the apiserver up, is the URL right?)", what)
	case errors.As(err, &se):
		st := se.Status()
		return fmt.Errorf("%s: HTTP %d %s: %s", what, st.Code, st.Reason, boundedLine(st.Message))
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Errorf("%s: cannot resolve %s", what, dnsErr.Name)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %s", what, boundedLine(ue.Err.Error()))
	}
	return fmt.Errorf("%s: %s", what, boundedLine(err.Error()))
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// boundedLine keeps one line of a server-supplied message, bounded in length.
func boundedLine(s string) string {
	s = textfmt.FirstLine(s)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
