// Captures the three APF debug dumps produced by the flowcontrol code of an
// older k8s.io/apiserver, running in-process with requests held executing
// and waiting.
package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"

	flowcontrol "k8s.io/api/flowcontrol/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/mux"
	utilfc "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func main() {
	out := os.Args[1]
	var objs []runtime.Object
	for _, x := range bootstrap.MandatoryFlowSchemas {
		objs = append(objs, x)
	}
	for _, x := range bootstrap.SuggestedFlowSchemas {
		objs = append(objs, x)
	}
	for _, x := range bootstrap.MandatoryPriorityLevelConfigurations {
		objs = append(objs, x)
	}
	for _, x := range bootstrap.SuggestedPriorityLevelConfigurations {
		objs = append(objs, x)
	}
	cs := fake.NewSimpleClientset(objs...)
	inf := informers.NewSharedInformerFactory(cs, 0)
	ctl := utilfc.New(inf, cs.FlowcontrolV1beta1(), 10, time.Minute)
	stop := make(chan struct{})
	inf.Start(stop)
	go ctl.Run(stop)
	time.Sleep(2 * time.Second)

	release := make(chan struct{})
	var wg sync.WaitGroup
	send := func(u user.Info, verb, path, ns, res string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ri := &request.RequestInfo{IsResourceRequest: true, Verb: verb, Path: path, Namespace: ns, APIVersion: "v1", Resource: res, Parts: []string{res}}
			ctx := request.WithUser(request.WithRequestInfo(context.Background(), ri), u)
			ctl.Handle(ctx, utilfc.RequestDigest{RequestInfo: ri, User: u},
				func(*flowcontrol.FlowSchema, *flowcontrol.PriorityLevelConfiguration) {},
				func(bool) {}, func() { <-release })
		}()
		time.Sleep(20 * time.Millisecond)
	}
	// workload-low gets a small share of 10 seats: hold them, then queue more.
	for i := 0; i < 8; i++ {
		u := &user.DefaultInfo{Name: fmt.Sprintf("system:serviceaccount:team-%d:bot", i%3), Groups: []string{"system:serviceaccounts", "system:authenticated"}}
		send(u, "list", fmt.Sprintf("/api/v1/namespaces/team-%d/configmaps", i%3), fmt.Sprintf("team-%d", i%3), "configmaps")
	}
	// An exempt request executing.
	send(&user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}, "get", "/api/v1/namespaces/default/pods", "default", "pods")
	time.Sleep(200 * time.Millisecond)

	m := mux.NewPathRecorderMux("old")
	ctl.Install(m)
	os.MkdirAll(out, 0o755)
	for _, p := range []string{"dump_priority_levels", "dump_queues", "dump_requests?includeRequestDetails=1"} {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/api_priority_and_fairness/"+p, nil))
		name := p
		if i := len("dump_requests"); len(p) > i && p[:i] == "dump_requests" {
			name = "dump_requests"
		}
		os.WriteFile(filepath.Join(out, name+".txt"), rec.Body.Bytes(), 0o644)
	}
	close(release)
	wg.Wait()
	close(stop)
}
