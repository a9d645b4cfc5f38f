package engine

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestIdentities(t *testing.T) {
	tests := []struct {
		name       string
		id         Identity
		wantUser   string
		wantGroups []string
	}{
		{"user", NewUserIdentity("alice", "devs"), "alice", []string{"devs", "system:authenticated"}},
		{"user without extra groups", NewUserIdentity("bob"), "bob", []string{"system:authenticated"}},
		{"authenticated not duplicated", NewUserIdentity("bob", "system:authenticated"), "bob", []string{"system:authenticated"}},
		{"service account", NewServiceAccountIdentity("kube-system", "coredns"), "system:serviceaccount:kube-system:coredns",
			[]string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}},
		{"anonymous", AnonymousIdentity(), "system:anonymous", []string{"system:unauthenticated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.id.User != tt.wantUser || !slices.Equal(tt.id.Groups, tt.wantGroups) {
				t.Errorf("got %q %v, want %q %v", tt.id.User, tt.id.Groups, tt.wantUser, tt.wantGroups)
			}
		})
	}
}

func TestParseIdentity(t *testing.T) {
	tests := []struct {
		in         string
		groups     []string
		wantUser   string
		wantGroups []string
		wantErr    string
	}{
		{in: "alice", groups: []string{"devs"}, wantUser: "alice", wantGroups: []string{"devs", "system:authenticated"}},
		{in: "system:serviceaccount:ns1:sa", wantUser: "system:serviceaccount:ns1:sa", wantGroups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"}},
		{in: "serviceaccount:ns1:sa", groups: []string{"x"}, wantUser: "system:serviceaccount:ns1:sa", wantGroups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "x", "system:authenticated"}},
		{in: "anonymous", wantUser: "system:anonymous", wantGroups: []string{"system:unauthenticated"}},
		{in: "", wantErr: "empty user name"},
		{in: "system:serviceaccount:ns1", wantErr: "want system:serviceaccount:NAMESPACE:NAME"},
		{in: "system:serviceaccount:ns:a:b", wantErr: "want system:serviceaccount:NAMESPACE:NAME"},
		{in: "system:anonymous", groups: []string{"x"}, wantErr: "cannot add groups"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			id, err := ParseIdentity(tt.in, tt.groups...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.User != tt.wantUser || !slices.Equal(id.Groups, tt.wantGroups) {
				t.Errorf("got %q %v, want %q %v", id.User, id.Groups, tt.wantUser, tt.wantGroups)
			}
		})
	}
}

func TestParseRequest(t *testing.T) {
	alice := NewUserIdentity("alice")
	tests := []struct {
		name, verb, path                   string
		wantVerb, wantRes, wantSub, wantNS string
		wantGroup                          string
		wantResource                       bool
		wantBypass                         string
		wantErr                            string
	}{
		{name: "get pod", verb: "get", path: "/api/v1/namespaces/default/pods/p1", wantVerb: "get", wantRes: "pods", wantNS: "default", wantResource: true},
		{name: "list pods", verb: "list", path: "/api/v1/namespaces/default/pods", wantVerb: "list", wantRes: "pods", wantNS: "default", wantResource: true},
		{name: "watch adds watch=1", verb: "watch", path: "/apis/apps/v1/deployments", wantVerb: "watch", wantRes: "deployments", wantGroup: "apps", wantResource: true},
		{name: "watch by field selector", verb: "watch", path: "/api/v1/namespaces/a/configmaps?fieldSelector=metadata.name%3Dx", wantVerb: "watch", wantRes: "configmaps", wantNS: "a", wantResource: true},
		{name: "deletecollection", verb: "deletecollection", path: "/api/v1/namespaces/a/pods", wantVerb: "deletecollection", wantRes: "pods", wantNS: "a", wantResource: true},
		{name: "GET method without name is list", verb: "GET", path: "/api/v1/nodes", wantVerb: "list", wantRes: "nodes", wantResource: true},
		{name: "subresource", verb: "update", path: "/api/v1/namespaces/a/pods/p/status", wantVerb: "update", wantRes: "pods", wantSub: "status", wantNS: "a", wantResource: true},
		{name: "namespace object carries its own namespace", verb: "get", path: "/api/v1/namespaces/foo", wantVerb: "get", wantRes: "namespaces", wantNS: "foo", wantResource: true},
		{name: "namespace list is cluster-scoped", verb: "list", path: "/api/v1/namespaces", wantVerb: "list", wantRes: "namespaces", wantResource: true},
		{name: "namespace status", verb: "update", path: "/api/v1/namespaces/foo/status", wantVerb: "update", wantRes: "namespaces", wantSub: "status", wantNS: "foo", wantResource: true},
		{name: "watch path prefix", verb: "GET", path: "/apis/apps/v1/watch/namespaces/a/deployments", wantVerb: "watch", wantRes: "deployments", wantGroup: "apps", wantNS: "a", wantResource: true},
		{name: "non-resource", verb: "get", path: "/healthz/etcd", wantVerb: "get"},
		{name: "non-resource POST", verb: "POST", path: "/apis", wantVerb: "post"},
		{name: "two segments are non-resource", verb: "GET", path: "/apis/apps", wantVerb: "get"},
		{name: "logs bypass", verb: "get", path: "/api/v1/namespaces/a/pods/p/log", wantVerb: "get", wantRes: "pods", wantSub: "log", wantNS: "a", wantResource: true, wantBypass: "pods/log"},
		{name: "exec bypass", verb: "create", path: "/api/v1/namespaces/a/pods/p/exec?command=ls", wantVerb: "create", wantRes: "pods", wantSub: "exec", wantNS: "a", wantResource: true, wantBypass: "pods/exec"},
		{name: "node proxy bypass", verb: "GET", path: "/api/v1/nodes/n1/proxy/stats", wantVerb: "get", wantRes: "nodes", wantSub: "proxy", wantResource: true, wantBypass: "nodes/proxy"},
		{name: "proxy verb bypass", verb: "proxy", path: "/api/v1/proxy/namespaces/a/services/s", wantVerb: "proxy", wantRes: "services", wantNS: "a", wantResource: true, wantBypass: `verb "proxy"`},
		{name: "pprof bypass", verb: "GET", path: "/debug/pprof/heap", wantVerb: "get", wantBypass: "/debug/pprof/"},
		{name: "watch stays in APF", verb: "watch", path: "/api/v1/pods", wantVerb: "watch", wantRes: "pods", wantResource: true},
		{name: "list with a name", verb: "list", path: "/api/v1/namespaces/a/pods/p", wantErr: `kube-apiserver derives verb "get"`},
		{name: "get without a name", verb: "get", path: "/api/v1/namespaces/a/pods", wantErr: `kube-apiserver derives verb "list"`},
		{name: "delete without a name", verb: "delete", path: "/api/v1/namespaces/a/pods", wantErr: `derives verb "deletecollection"`},
		{name: "watch with a name", verb: "watch", path: "/api/v1/namespaces/a/pods/p", wantErr: "fieldSelector=metadata.name"},
		{name: "list on non-resource", verb: "list", path: "/healthz", wantErr: "needs a resource path"},
		{name: "unknown verb", verb: "fetch", path: "/healthz", wantErr: "unknown verb or method"},
		{name: "relative path", verb: "get", path: "healthz", wantErr: "must start with /"},
		{name: "full URL", verb: "get", path: "https://host:6443/healthz", wantErr: "give only its path"},
		{name: "empty verb", verb: "", path: "/x", wantErr: "empty verb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRequest(tt.verb, tt.path, alice)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ri := r.Info
			if ri.Verb != tt.wantVerb || ri.Resource != tt.wantRes || ri.Subresource != tt.wantSub || ri.Namespace != tt.wantNS ||
				ri.APIGroup != tt.wantGroup || ri.IsResourceRequest != tt.wantResource {
				t.Errorf("got verb %q resource %q/%q ns %q group %q resource-request %v", ri.Verb, ri.Resource, ri.Subresource, ri.Namespace, ri.APIGroup, ri.IsResourceRequest)
			}
			if (tt.wantBypass == "") != (r.Bypass == "") || !strings.Contains(r.Bypass, tt.wantBypass) {
				t.Errorf("bypass = %q, want one mentioning %q", r.Bypass, tt.wantBypass)
			}
		})
	}
}

func TestRequestWaitLimit(t *testing.T) {
	id := NewUserIdentity("alice")
	tests := []struct {
		name, verb, path string
		serverTimeout    time.Duration
		want             time.Duration
		wantErr          string
	}{
		{"default 60s gives 15s", "list", "/api/v1/pods", time.Minute, 15 * time.Second, ""},
		{"timeout=8s gives 2s", "list", "/api/v1/pods?timeout=8s", time.Minute, 2 * time.Second, ""},
		{"timeout above the server's is ignored", "list", "/api/v1/pods?timeout=5m", time.Minute, 15 * time.Second, ""},
		{"timeout=0 means the server's", "get", "/healthz?timeout=0s", time.Minute, 15 * time.Second, ""},
		{"watch has no deadline", "watch", "/api/v1/pods?timeout=8s", time.Minute, 15 * time.Second, ""},
		{"capped at one minute", "list", "/api/v1/pods", 10 * time.Minute, time.Minute, ""},
		{"bad timeout", "list", "/api/v1/pods?timeout=soon", time.Minute, 0, "invalid timeout"},
		{"bad server timeout", "list", "/api/v1/pods", 0, 0, "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRequest(tt.verb, tt.path, id)
			if err != nil {
				t.Fatal(err)
			}
			got, err := RequestWaitLimit(r, tt.serverTimeout)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// FuzzParseRequest: any input gives a request or an error, never a panic;
// a parsed request parses again to the same RequestInfo from its own URL.
func FuzzParseRequest(f *testing.F) {
	for _, s := range [][2]string{
		{"get", "/api/v1/namespaces/default/pods/p"}, {"watch", "/apis/apps/v1/deployments?watch=false"},
		{"GET", "/api/v1/namespaces/foo"}, {"list", "/api/v1/pods?fieldSelector=metadata.name%3D"},
		{"POST", "/healthz"}, {"proxy", "/api/v1/proxy"}, {"get", "/%zz"}, {"delete", "/apis/a/b/c/d/e/f/g"},
		{"GET", "/api/v1/pods?watch=1&timeout=1s"}, {"get", "/api//v1"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, verb, path string) {
		r, err := ParseRequest(verb, path, NewUserIdentity("u"))
		if err != nil {
			if err.Error() == "" || strings.ToLower(err.Error()[:1]) != err.Error()[:1] {
				t.Fatalf("error %q is empty or capitalised", err)
			}
			return
		}
		r2, err := ParseRequest(r.Method, r.URL, r.Identity)
		if err != nil {
			t.Fatalf("re-parsing %s %s: %v", r.Method, r.URL, err)
		}
		if r2.Info.Verb != r.Info.Verb || r2.Info.Resource != r.Info.Resource || r2.Info.Namespace != r.Info.Namespace || r2.Info.Path != r.Info.Path {
			t.Fatalf("re-parse changed the request info: %+v vs %+v", r.Info, r2.Info)
		}
	})
}

// FuzzParseIdentity: any text gives an identity or a lowercase error, never
// a panic; every parsed identity is authenticated or anonymous, and service
// accounts carry their namespace groups.
func FuzzParseIdentity(f *testing.F) {
	for _, s := range []string{"alice", "system:serviceaccount:ns:sa", "serviceaccount::x", "system:serviceaccount:a:b:c", "anonymous", "", "system:anonymous"} {
		f.Add(s, "devs")
	}
	f.Fuzz(func(t *testing.T, s, group string) {
		var groups []string
		if group != "" {
			groups = []string{group}
		}
		id, err := ParseIdentity(s, groups...)
		if err != nil {
			if strings.ToLower(err.Error()[:1]) != err.Error()[:1] {
				t.Fatalf("capitalised error %q", err)
			}
			return
		}
		last := id.Groups[len(id.Groups)-1]
		if last != "system:authenticated" && !(id.User == "system:anonymous" && last == "system:unauthenticated") {
			t.Fatalf("identity %+v is neither authenticated nor anonymous", id)
		}
		if strings.HasPrefix(id.User, "system:serviceaccount:") && !slices.Contains(id.Groups, "system:serviceaccounts") {
			t.Fatalf("service account %+v lacks system:serviceaccounts", id)
		}
	})
}

// TestRequestCache checks that the cache gives what ParseRequest gives,
// errors included, with each caller's identity, however often a path comes
// back and after the cache starts afresh.
func TestRequestCache(t *testing.T) {
	var c RequestCache
	inputs := [][2]string{
		{"GET", "/api/v1/namespaces/ns/pods"}, {"list", "/api/v1/namespaces/ns/pods?limit=5"}, {"watch", "/api/v1/pods"},
		{"GET", "/healthz"}, {"POST", "/apis/apps/v1/namespaces/a/deployments"}, {"get", "/api/v1/namespaces/ns/pods"},
		{"GET", "relative"}, {"FETCH", "/x"}, {"GET", "/api/v1/namespaces/ns/pods/p/exec"},
	}
	for round := range 3 {
		for i, in := range inputs {
			id := Identity{User: fmt.Sprintf("u%d-%d", round, i), Groups: []string{"system:authenticated"}}
			want, werr := ParseRequest(in[0], in[1], id)
			got, err := c.Parse(in[0], in[1], id)
			if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
				t.Fatalf("%v: error %v, ParseRequest's %v", in, err, werr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%v: %+v, ParseRequest's %+v", in, got, want)
			}
		}
		// fill the cache so that the next round starts afresh
		for j := len(c.m); j < MaxCachedRequests; j++ {
			c.m[requestKey{"GET", fmt.Sprintf("/filler/%d", j)}] = &cachedRequest{}
		}
	}
}

// FuzzTimeoutParam: the fast path of timeoutParam (a plain path without
// a timeout) gives what the parse by url.ParseRequestURI gives.
func FuzzTimeoutParam(f *testing.F) {
	for _, s := range []string{"/api/v1/pods", "/api/v1/pods?limit=5&timeout=3s", "/api?x=1&time%6Fut=1s", "/a%zz", "/a\x7f", "api", "/?timeout=", "//x?timeout=1m", "/x?a=b+c&timeout=0.5s", "/x?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := timeoutParamParsed(s)
		if plainURIWithoutTimeout(s) && (d != 0 || err != nil) {
			t.Fatalf("%q: the fast path gives 0, nil; the parse %v, %v", s, d, err)
		}
		fd, ferr := timeoutParam(s)
		if fd != d || (ferr == nil) != (err == nil) || (err != nil && ferr.Error() != err.Error()) {
			t.Fatalf("%q: %v, %v; the parse %v, %v", s, fd, ferr, d, err)
		}
	})
}
