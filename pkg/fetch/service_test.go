package fetch

import (
	"strings"
	"testing"
)

func TestParseService(t *testing.T) {
	tests := []struct {
		in, ns, name, port string
		ok                 bool
	}{
		{"monitoring/prometheus-k8s:9090", "monitoring", "prometheus-k8s", "9090", true},
		{"monitoring/https:thanos:web", "monitoring", "https:thanos", "web", true},
		{"prometheus:9090", "", "", "", false},
		{"monitoring/prometheus", "", "", "", false},
		{"monitoring/prometheus:", "", "", "", false},
		{"/p:9090", "", "", "", false},
		{"m/p:9090/../../secrets", "", "", "", false},
		{"../p:9090", "", "", "", false},
		{"a%2Fb/p:9090", "", "", "", false},
		{"m/p%2F..:9090", "", "", "", false},
	}
	for _, tt := range tests {
		s, err := ParseService("--prometheus-service", "monitoring/prometheus-k8s:9090", tt.in)
		if (err == nil) != tt.ok || s.Namespace != tt.ns || s.Name != tt.name || s.Port != tt.port {
			t.Errorf("ParseService(%q) = %+v %v", tt.in, s, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), `--prometheus-service "`) {
			t.Errorf("ParseService(%q): the error %q does not name the flag and the value", tt.in, err)
		}
	}
	s, _ := ParseService("f", "", "monitoring/https:thanos:web")
	if got := s.ProxyURL("https://10.0.0.1:6443/"); got != "https://10.0.0.1:6443/api/v1/namespaces/monitoring/services/https:thanos:web/proxy" {
		t.Errorf("ProxyURL = %s", got)
	}
}

// FuzzParseService: a service read is the value written back, and its
// proxy URL has the apiserver's path with the service in two segments.
func FuzzParseService(f *testing.F) {
	for _, s := range []string{"monitoring/prometheus-k8s:9090", "monitoring/https:thanos:web", "../p:1", "a/b:c:d", "a/:1", "a/b:%", "ns/svc:80?x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseService("--victorialogs-service", "logging/victorialogs:9428", in)
		if err != nil {
			return
		}
		if s.String() != in || s.Namespace == "" || s.Name == "" || s.Port == "" {
			t.Fatalf("ParseService(%q) = %+v", in, s)
		}
		u := s.ProxyURL("https://h")
		rest, ok := strings.CutPrefix(u, "https://h/api/v1/namespaces/")
		if !ok || !strings.HasSuffix(rest, "/proxy") || strings.Count(rest, "/") != 3 {
			t.Fatalf("ParseService(%q): proxy URL %s", in, u)
		}
	})
}
