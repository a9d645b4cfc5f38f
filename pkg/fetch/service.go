package fetch

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
)

// Service is an in-cluster service reached through the apiserver's
// service proxy (--prometheus-service, --victorialogs-service), given as
// NAMESPACE/NAME:PORT. The name may carry the proxy's scheme
// (https:thanos:web).
type Service struct {
	Namespace, Name, Port string
}

// ParseService reads flag's NAMESPACE/NAME:PORT; example is a value of it
// for the error. The namespace and the name are path segments of the
// proxy's URL, refused as client-go refuses them ("." or "..", a "%").
func ParseService(flag, example, s string) (Service, error) {
	ns, rest, ok := strings.Cut(s, "/")
	i := strings.LastIndex(rest, ":")
	if !ok || ns == "" || i <= 0 || i == len(rest)-1 || strings.ContainsAny(rest, "/?#") {
		return Service{}, fmt.Errorf("%s %q: want NAMESPACE/NAME:PORT, such as %s", flag, s, example)
	}
	svc := Service{Namespace: ns, Name: rest[:i], Port: rest[i+1:]}
	for _, seg := range []string{svc.Namespace, svc.Name + ":" + svc.Port} {
		if msgs := content.IsPathSegmentName(seg); len(msgs) > 0 {
			return Service{}, fmt.Errorf("%s %q: %q %s", flag, s, seg, strings.Join(msgs, ", "))
		}
	}
	return svc, nil
}

func (s Service) String() string { return s.Namespace + "/" + s.Name + ":" + s.Port }

// ProxyURL is the service's proxy on the apiserver at host
// (/api/v1/namespaces/NAMESPACE/services/NAME:PORT/proxy).
func (s Service) ProxyURL(host string) string {
	return strings.TrimRight(host, "/") + "/api/v1/namespaces/" + url.PathEscape(s.Namespace) + "/services/" + url.PathEscape(s.Name+":"+s.Port) + "/proxy"
}
