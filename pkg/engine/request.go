package engine

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// Identity is the authenticated (or impersonated) user that APF classifies:
// only the user name and groups take part in matching (rule.go:matchesSubject).
type Identity struct {
	// User is the user name, e.g. "alice" or "system:serviceaccount:ns:sa".
	User string
	// Groups are the user's groups, including system:authenticated or
	// system:unauthenticated as the authenticator adds them.
	Groups []string
}

// NewUserIdentity returns an authenticated identity: the given groups plus
// system:authenticated, which every authenticator chain adds
// (k8s.io/apiserver/pkg/authentication/group.AuthenticatedGroupAdder).
func NewUserIdentity(name string, groups ...string) Identity {
	gs := make([]string, 0, len(groups)+1)
	for _, g := range groups {
		if g != user.AllAuthenticated {
			gs = append(gs, g)
		}
	}
	return Identity{User: name, Groups: append(gs, user.AllAuthenticated)}
}

// NewServiceAccountIdentity returns the identity of service account ns/name:
// user system:serviceaccount:NS:NAME in groups system:serviceaccounts,
// system:serviceaccounts:NS and system:authenticated
// (k8s.io/apiserver/pkg/authentication/serviceaccount.UserInfo).
func NewServiceAccountIdentity(ns, name string) Identity {
	return Identity{
		User:   serviceaccount.MakeUsername(ns, name),
		Groups: append(serviceaccount.MakeGroupNames(ns), user.AllAuthenticated),
	}
}

// AnonymousIdentity returns the identity of an anonymous request:
// system:anonymous in group system:unauthenticated.
func AnonymousIdentity() Identity {
	return Identity{User: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
}

// ParseIdentity turns the textual form used by the commands into an
// Identity: "system:anonymous" (or "anonymous"), "serviceaccount:NS:NAME" or
// "system:serviceaccount:NS:NAME", or a user name. Extra groups are added to
// an authenticated user.
func ParseIdentity(s string, groups ...string) (Identity, error) {
	switch {
	case s == "":
		return Identity{}, fmt.Errorf("empty user name: give a user name, system:serviceaccount:NS:NAME or system:anonymous")
	case s == user.Anonymous || s == "anonymous":
		if len(groups) > 0 {
			return Identity{}, fmt.Errorf("anonymous requests carry only group %s, cannot add groups %v", user.AllUnauthenticated, groups)
		}
		return AnonymousIdentity(), nil
	case strings.HasPrefix(s, "serviceaccount:") || strings.HasPrefix(s, serviceaccount.ServiceAccountUsernamePrefix):
		rest := strings.TrimPrefix(strings.TrimPrefix(s, "system:"), "serviceaccount:")
		ns, name, ok := strings.Cut(rest, ":")
		if !ok || ns == "" || name == "" || strings.Contains(name, ":") {
			return Identity{}, fmt.Errorf("service account %q: want system:serviceaccount:NAMESPACE:NAME", s)
		}
		id := NewServiceAccountIdentity(ns, name)
		id.Groups = append(id.Groups[:len(id.Groups)-1:len(id.Groups)-1], groups...)
		id.Groups = append(id.Groups, user.AllAuthenticated)
		return id, nil
	default:
		return NewUserIdentity(s, groups...), nil
	}
}

// Request is one request as APF sees it: the identity and the RequestInfo
// kube-apiserver derives from the method and URL.
type Request struct {
	// Identity is who makes the request (after impersonation: APF runs after
	// WithImpersonation in DefaultBuildHandlerChain).
	Identity Identity
	// Method is the HTTP method (GET, POST, ...).
	Method string
	// URL is the path with its query, as given.
	URL string
	// Info is what k8s.io/apiserver's RequestInfoFactory, configured as in
	// kube-apiserver, makes of Method and URL.
	Info request.RequestInfo
	// Bypass is non-empty when kube-apiserver serves this request without
	// APF (long-running and not a watch); it says why.
	Bypass string
}

// kubeRequestInfoFactory is configured like kube-apiserver's
// (k8s.io/apiserver/pkg/server/config.go:NewRequestInfoResolver with the
// default LegacyAPIGroupPrefixes {"/api"} and APIGroupPrefix "/apis").
var kubeRequestInfoFactory = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// The long-running predicate of kube-apiserver:
// k8s.io/kubernetes@v1.37.1/pkg/controlplane/apiserver/config.go sets
// LongRunningFunc = filters.BasicLongRunningRequestCheck(
//
//	sets.NewString("watch", "proxy"),
//	sets.NewString("attach", "exec", "proxy", "log", "portforward")).
var (
	longRunningVerbs        = sets.NewString("watch", "proxy")
	longRunningSubresources = sets.NewString("attach", "exec", "proxy", "log", "portforward")
)

// bypassReason mirrors BasicLongRunningRequestCheck combined with the
// "&& !isWatchRequest" of server/filters/priority-and-fairness.go:Handle:
// watches stay in APF, other long-running requests skip it entirely.
func bypassReason(ri *request.RequestInfo) string {
	if ri.Verb == "watch" {
		return ""
	}
	if longRunningVerbs.Has(ri.Verb) {
		return fmt.Sprintf("verb %q is long-running on kube-apiserver, which serves it without API Priority and Fairness", ri.Verb)
	}
	if ri.IsResourceRequest && longRunningSubresources.Has(ri.Subresource) {
		return fmt.Sprintf("subresource %q is long-running on kube-apiserver, which serves it without API Priority and Fairness", ri.Resource+"/"+ri.Subresource)
	}
	if !ri.IsResourceRequest && strings.HasPrefix(ri.Path, "/debug/pprof/") {
		return "/debug/pprof/ requests are long-running on kube-apiserver, which serves them without API Priority and Fairness"
	}
	return ""
}

// httpMethods are the spellings accepted as an HTTP method; Kubernetes verbs
// are lower case, so "GET" is a method and "get" a verb.
var httpMethods = sets.NewString("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE")

// verbMethods maps a Kubernetes verb to the HTTP method that produces it
// (RequestInfoFactory.NewRequestInfo).
var verbMethods = map[string]string{
	"get": http.MethodGet, "list": http.MethodGet, "watch": http.MethodGet, "proxy": http.MethodGet,
	"create": http.MethodPost, "update": http.MethodPut, "patch": http.MethodPatch,
	"delete": http.MethodDelete, "deletecollection": http.MethodDelete,
}

// ParseRequest builds a Request from an HTTP method (upper case: GET, POST,
// ...) or a Kubernetes verb (lower case: get, list, watch, create, update,
// patch, delete, deletecollection, proxy) and a path with optional query.
//
// A verb is turned into the method (and, for watch, the ?watch=1 query)
// that makes kube-apiserver derive it; if the path makes the server derive
// another verb (list with an object name, get without one, ...) the error
// says so. For non-resource paths only get, create, update, patch and delete
// make sense, and the request's verb is the lower-cased method as upstream.
func ParseRequest(verbOrMethod, pathWithQuery string, id Identity) (Request, error) {
	if verbOrMethod == "" {
		return Request{}, fmt.Errorf("empty verb: give a Kubernetes verb (get, list, watch, create, ...) or an HTTP method (GET, POST, ...)")
	}
	if u, err := url.Parse(pathWithQuery); err == nil && u.Scheme != "" && u.Host != "" {
		return Request{}, fmt.Errorf("%q is a full URL: give only its path and query, e.g. %q", pathWithQuery, u.RequestURI())
	}
	if pathWithQuery == "" || pathWithQuery[0] != '/' {
		return Request{}, fmt.Errorf("path %q must start with /", pathWithQuery)
	}
	u, err := url.ParseRequestURI(pathWithQuery)
	if err != nil {
		return Request{}, fmt.Errorf("parsing path %q: %w", pathWithQuery, err)
	}
	method, verb := verbOrMethod, ""
	if !httpMethods.Has(method) {
		m, ok := verbMethods[verbOrMethod]
		if !ok {
			return Request{}, fmt.Errorf("unknown verb or method %q: use a Kubernetes verb (get, list, watch, create, update, patch, delete, deletecollection, proxy) or an upper-case HTTP method", verbOrMethod)
		}
		method, verb = m, verbOrMethod
		if verb == "watch" {
			q := u.Query()
			if q.Get("watch") == "" {
				q.Set("watch", "1")
				u.RawQuery = q.Encode()
			}
		}
	}
	hr := &http.Request{Method: method, URL: u}
	ri, err := kubeRequestInfoFactory.NewRequestInfo(hr)
	if err != nil {
		return Request{}, fmt.Errorf("deriving request info for %s %s: %w", method, pathWithQuery, err)
	}
	if verb != "" {
		if ri.IsResourceRequest && ri.Verb != verb {
			return Request{}, fmt.Errorf("verb %q contradicts path %q: kube-apiserver derives verb %q from %s %s%s",
				verb, pathWithQuery, ri.Verb, method, u.Path, verbHint(verb))
		}
		if !ri.IsResourceRequest {
			switch verb {
			case "list", "watch", "deletecollection", "proxy":
				return Request{}, fmt.Errorf("verb %q needs a resource path (/api/... or /apis/...), %q is a non-resource path whose verb is the lower-cased HTTP method", verb, u.Path)
			}
		}
	}
	r := Request{Identity: id, Method: method, URL: u.RequestURI(), Info: *ri}
	r.Bypass = bypassReason(ri)
	return r, nil
}

func verbHint(verb string) string {
	switch verb {
	case "list", "deletecollection":
		return " (drop the object name from the path)"
	case "watch":
		return " (drop the object name and use ?fieldSelector=metadata.name=NAME to watch one object)"
	case "get", "delete", "update", "patch":
		return " (add the object name to the path)"
	}
	return ""
}

// timeoutParam parses the ?timeout= query parameter like
// endpoints/filters/request_deadline.go:parseTimeout (0 when absent).
func timeoutParam(rawURL string) (time.Duration, error) {
	if plainURIWithoutTimeout(rawURL) {
		return 0, nil
	}
	return timeoutParamParsed(rawURL)
}

// plainURIWithoutTimeout reports whether rawURL is a path (with or
// without a query) that url.ParseRequestURI accepts and whose query has no
// timeout: it starts with '/', holds no control character and no '%'
// (nothing to unescape, so no key that unescapes to "timeout"), and no
// "timeout" at all. A replay asks this of every request: this saves the
// parse of the URL and its query for nearly all of them.
func plainURIWithoutTimeout(rawURL string) bool {
	if rawURL == "" || rawURL[0] != '/' {
		return false
	}
	for i := 0; i < len(rawURL); i++ {
		if c := rawURL[i]; c < 0x20 || c == 0x7f || c == '%' {
			return false
		}
	}
	return !strings.Contains(rawURL, "timeout")
}

// timeoutParamParsed is timeoutParam by url.ParseRequestURI.
func timeoutParamParsed(rawURL string) (time.Duration, error) {
	u, err := url.ParseRequestURI(rawURL)
	if err != nil {
		return 0, fmt.Errorf("parsing path %q: %w", rawURL, err)
	}
	v := u.Query().Get("timeout")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("invalid timeout %q in the URL (the server answers 400 Bad Request): %w", v, err)
	}
	return d, nil
}

// RequestCache memoizes ParseRequest by verb or method and path, whose
// result (but for the identity) depends on nothing else: a replay parses
// the same paths again and again (clients poll the same objects), and the
// replays of a calibration parse every request of the workload several
// times. It holds at most MaxCachedRequests paths; past that it starts
// afresh. The zero value is ready to use; it is not safe for concurrent
// use.
type RequestCache struct {
	m map[requestKey]*cachedRequest
}

// MaxCachedRequests bounds a RequestCache.
const MaxCachedRequests = 1 << 14

type requestKey struct{ verbOrMethod, path string }

type cachedRequest struct {
	r   Request
	err error
}

// Parse is ParseRequest. The requests it returns share their parsed
// request info (Info.Parts) with other requests of the same path: callers
// must not modify it.
func (c *RequestCache) Parse(verbOrMethod, pathWithQuery string, id Identity) (Request, error) {
	k := requestKey{verbOrMethod, pathWithQuery}
	e := c.m[k]
	if e == nil {
		e = new(cachedRequest)
		e.r, e.err = ParseRequest(verbOrMethod, pathWithQuery, Identity{})
		if c.m == nil || len(c.m) >= MaxCachedRequests {
			c.m = make(map[requestKey]*cachedRequest)
		}
		c.m[k] = e
	}
	if e.err != nil {
		return Request{}, e.err
	}
	r := e.r
	r.Identity = id
	return r, nil
}
