package engine

import (
	"strings"
	"testing"
)

// TestLookupResource: the spellings kubectl's REST mapper accepts, on the
// built-in resources.
func TestLookupResource(t *testing.T) {
	for _, c := range []struct {
		arg, group, resource, err string
	}{
		{arg: "pods", resource: "pods"},
		{arg: "pod", resource: "pods"},
		{arg: "po", resource: "pods"},
		{arg: "Pod", resource: "pods"},
		{arg: "PODS", resource: "pods"},
		{arg: "pods.core", resource: "pods"},
		{arg: "deploy", group: "apps", resource: "deployments"},
		{arg: "deployments.apps", group: "apps", resource: "deployments"},
		{arg: "Deployment.apps", group: "apps", resource: "deployments"},
		{arg: "deployments.v1.apps", group: "apps", resource: "deployments"},
		{arg: "deployments.v2.apps", err: `unknown resource type "deployments.v2.apps"`},
		{arg: "deployments.extensions", err: `unknown resource type "deployments.extensions"`},
		// two groups serve events: kubectl picks the core group's, the first
		{arg: "events", resource: "events"},
		{arg: "ev", resource: "events"},
		{arg: "events.events.k8s.io", group: "events.k8s.io", resource: "events"},
		{arg: "crd", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
		{arg: "flowschema", group: "flowcontrol.apiserver.k8s.io", resource: "flowschemas"},
		{arg: "endpoints", resource: "endpoints"},
		{arg: "hpa", group: "autoscaling", resource: "horizontalpodautoscalers"},
		{arg: "widgets", err: `unknown resource type "widgets"`},
		{arg: "", err: "empty resource type"},
	} {
		r, err := LookupResource(BuiltinResources, c.arg)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: got %+v, %v; want error %q", c.arg, r, err, c.err)
			}
			continue
		}
		if err != nil || r.Group != c.group || r.Resource != c.resource {
			t.Errorf("%q: got %q %q, %v; want %q %q", c.arg, r.Group, r.Resource, err, c.group, c.resource)
		}
	}
}

// TestResourceArgsRequest: the verb and path kubectl sends for each form,
// written from kubectl's own (kubectl get -v=6 prints the URL).
func TestResourceArgsRequest(t *testing.T) {
	pods, _ := LookupResource(BuiltinResources, "pods")
	deploy, _ := LookupResource(BuiltinResources, "deployments")
	nodes, _ := LookupResource(BuiltinResources, "nodes")
	for _, c := range []struct {
		name string
		r    APIResource
		a    ResourceArgs
		verb string
		path string
		err  string
	}{
		{name: "get a collection is kubectl's LIST in chunks", r: pods, a: ResourceArgs{Verb: "get", Namespace: "dev", ChunkSize: 500},
			verb: "list", path: "/api/v1/namespaces/dev/pods?limit=500"},
		{name: "get one object", r: pods, a: ResourceArgs{Verb: "get", Name: "web", Namespace: "dev", ChunkSize: 500},
			verb: "get", path: "/api/v1/namespaces/dev/pods/web"},
		{name: "no namespace is default's", r: pods, a: ResourceArgs{Verb: "list"}, verb: "list", path: "/api/v1/namespaces/default/pods"},
		{name: "all namespaces, selectors", r: deploy, a: ResourceArgs{Verb: "list", AllNamespaces: true, LabelSelector: "app=web", FieldSelector: "metadata.namespace!=kube-system", ChunkSize: 500},
			verb: "list", path: "/apis/apps/v1/deployments?fieldSelector=metadata.namespace%21%3Dkube-system&labelSelector=app%3Dweb&limit=500"},
		{name: "cluster-scoped ignores the namespace", r: nodes, a: ResourceArgs{Verb: "get", Name: "n1", Namespace: "dev"}, verb: "get", path: "/api/v1/nodes/n1"},
		{name: "watch one object by name", r: pods, a: ResourceArgs{Verb: "watch", Name: "web", Namespace: "dev"},
			verb: "watch", path: "/api/v1/namespaces/dev/pods?fieldSelector=metadata.name%3Dweb"},
		{name: "create posts to the collection", r: deploy, a: ResourceArgs{Verb: "create", Name: "web", Namespace: "dev", ChunkSize: 500},
			verb: "create", path: "/apis/apps/v1/namespaces/dev/deployments"},
		{name: "a subresource", r: deploy, a: ResourceArgs{Verb: "patch", Name: "web", Subresource: "scale", Namespace: "dev"},
			verb: "patch", path: "/apis/apps/v1/namespaces/dev/deployments/web/scale"},
		{name: "deletecollection", r: pods, a: ResourceArgs{Verb: "deletecollection", Namespace: "dev", LabelSelector: "job=x", ChunkSize: 500},
			verb: "deletecollection", path: "/api/v1/namespaces/dev/pods?labelSelector=job%3Dx"},
		{name: "delete needs a name", r: pods, a: ResourceArgs{Verb: "delete", Namespace: "dev"}, err: "delete needs the object's name (delete pods NAME), or deletecollection for the collection"},
		{name: "list names no object", r: pods, a: ResourceArgs{Verb: "list", Name: "web"}, err: `list names no object: drop "web", or use get (delete) for one object`},
		{name: "an object across namespaces", r: pods, a: ResourceArgs{Verb: "get", Name: "web", AllNamespaces: true}, err: `an object cannot be named across all namespaces: drop -A, or its name "web"`},
		{name: "a method", r: pods, a: ResourceArgs{Verb: "GET"}, err: `unknown verb "GET" with a resource type: use get, list, watch, create, update, patch, delete or deletecollection (an HTTP method takes a path: GET /api/v1/pods)`},
		{name: "a subresource of the collection", r: pods, a: ResourceArgs{Verb: "list", Subresource: "status"}, err: "--subresource status is of one object: give its name, with get, update, patch or delete"},
	} {
		verb, path, err := c.a.Request(c.r)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: got %s %s, %v; want error %q", c.name, verb, path, err, c.err)
			}
			continue
		}
		if err != nil || verb != c.verb || path != c.path {
			t.Errorf("%s: got %s %s, %v; want %s %s", c.name, verb, path, err, c.verb, c.path)
		}
	}
}

// TestResourceArgsAgreeWithRequestInfo: for every built-in resource and
// verb, upstream's RequestInfoFactory (through ParseRequest) derives from
// the path the verb, group, resource, namespace and name the arguments
// named.
func TestResourceArgsAgreeWithRequestInfo(t *testing.T) {
	for _, r := range BuiltinResources {
		for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
			a := ResourceArgs{Verb: verb, Namespace: "team-a", ChunkSize: 500, LabelSelector: "app=x"}
			switch verb {
			case "get", "update", "patch", "delete":
				a.Name = "obj-1"
			}
			v, path, err := a.Request(r)
			if err != nil {
				t.Fatalf("%s %s: %v", verb, r.GroupResource(), err)
			}
			req, err := ParseRequest(v, path, Identity{User: "alice"})
			if err != nil {
				t.Fatalf("%s %s: %s %s: %v", verb, r.GroupResource(), v, path, err)
			}
			in := req.Info
			wantNS := ""
			if r.Namespaced {
				wantNS = "team-a"
			}
			if r.Group == "" && r.Resource == "namespaces" {
				// upstream: a Namespace object's request is in itself
				wantNS = a.Name
			}
			if !in.IsResourceRequest || in.Verb != verb || in.APIGroup != r.Group || in.APIVersion != r.Version || in.Resource != r.Resource || in.Namespace != wantNS || in.Name != a.Name {
				t.Errorf("%s %s: %s %s is %+v", verb, r.GroupResource(), v, path, in)
			}
			if strings.Contains(path, "limit=") != (verb == "list") {
				t.Errorf("%s %s: %s: a limit only on a LIST", verb, r.GroupResource(), path)
			}
		}
	}
}

// TestResourceArgsRefuseWhatKubectlRefuses: names, namespaces and
// subresources client-go's rest.Request refuses before sending (".",
// "..", a "/" or a "%" in them) are refused, as kubectl refuses
// "kubectl get cm .." (invalid resource name "..": [may not be '..']).
func TestResourceArgsRefuseWhatKubectlRefuses(t *testing.T) {
	cm, err := LookupResource(BuiltinResources, "configmaps")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a    ResourceArgs
		want string
	}{
		{ResourceArgs{Verb: "get", Name: ".."}, `invalid resource name "..": may not be '..'`},
		{ResourceArgs{Verb: "get", Name: "."}, `invalid resource name "."`},
		{ResourceArgs{Verb: "get", Name: "a%b"}, `invalid resource name "a%b": may not contain '%'`},
		{ResourceArgs{Verb: "delete", Name: "a/b"}, `may not contain '/'`},
		{ResourceArgs{Verb: "list", Namespace: "a/b"}, `invalid namespace "a/b"`},
		{ResourceArgs{Verb: "get", Name: "x", Subresource: ".."}, `invalid subresource ".."`},
	} {
		_, path, err := c.a.Request(cm)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: path %q, error %v; want one with %q", c.a, path, err, c.want)
		}
	}
	if _, path, err := (ResourceArgs{Verb: "get", Name: "a.b..c", Namespace: "n"}).Request(cm); err != nil || path != "/api/v1/namespaces/n/configmaps/a.b..c" {
		t.Errorf("a name with dots: %q, %v", path, err)
	}
}

// FuzzResourceArgs: whatever the arguments, a request that Request
// builds is the one they name, as upstream's RequestInfoFactory reads its
// path (through ParseRequest): the verb, group, version, resource,
// namespace, name and subresource.
func FuzzResourceArgs(f *testing.F) {
	f.Add("get", "obj-1", "", "team-a", "app=x", "", false, int64(500), uint8(0))
	f.Add("list", "", "", "", "", "status.phase=Running", true, int64(0), uint8(3))
	f.Add("watch", "n1", "", "kube-system", "", "a=b", false, int64(50), uint8(7))
	f.Add("patch", "a b?c#d", "status", "ns x", "", "", false, int64(1), uint8(12))
	f.Add("get", "..", "", "", "", "", false, int64(500), uint8(1))
	f.Add("create", "", "", "", "", "", true, int64(-1), uint8(40))
	f.Fuzz(func(t *testing.T, verb, name, sub, ns, labels, fields string, all bool, chunk int64, which uint8) {
		r := BuiltinResources[int(which)%len(BuiltinResources)]
		a := ResourceArgs{Verb: verb, Name: name, Subresource: sub, Namespace: ns, AllNamespaces: all, LabelSelector: labels, FieldSelector: fields, ChunkSize: chunk}
		v, path, err := a.Request(r)
		if err != nil {
			return
		}
		req, err := ParseRequest(v, path, NewUserIdentity("alice"))
		if err != nil {
			t.Fatalf("%+v on %s: %s %s does not parse: %v", a, r.GroupResource(), v, path, err)
		}
		in := req.Info
		object := v == "get" || v == "update" || v == "patch" || v == "delete"
		if r.Group == "" && r.Resource == "namespaces" && object && sub != "" && sub != "status" && sub != "finalize" {
			// upstream reads /api/v1/namespaces/NAME/SUB as the resource
			// SUB in namespace NAME unless SUB is one of the namespace's
			// own subresources, and so does the server kubectl sends it to
			return
		}
		if !in.IsResourceRequest || in.Verb != v || in.APIGroup != r.Group || in.APIVersion != r.Version || in.Resource != r.Resource {
			t.Fatalf("%+v on %s: %s %s is %+v", a, r.GroupResource(), v, path, in)
		}
		wantNS := ""
		if r.Namespaced && !all {
			wantNS = ns
			if wantNS == "" {
				wantNS = "default"
			}
		}
		if r.Group == "" && r.Resource == "namespaces" && object {
			// upstream: a Namespace object's request is in itself
			wantNS = name
		}
		if in.Namespace != wantNS {
			t.Fatalf("%+v on %s: %s %s is in namespace %q, want %q", a, r.GroupResource(), v, path, in.Namespace, wantNS)
		}
		if object && (in.Name != name || in.Subresource != sub) {
			t.Fatalf("%+v on %s: %s %s names %q/%q", a, r.GroupResource(), v, path, in.Name, in.Subresource)
		}
	})
}
