package engine

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/apiserver/pkg/util/flowcontrol/debug"
	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	fqs "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

var quietKlog sync.Once

// silenceKlog keeps the upstream controller's V(0) info lines and "no match
// found" warnings out of the test output.
func silenceKlog() {
	quietKlog.Do(func() {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("alsologtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	})
}

// upstreamResult is what the real controller decided for one request.
type upstreamResult struct {
	fs, pl         string
	fsUID, plUID   string
	distinguisher  string
	hash           uint64
	queuingCfg     fq.QueuingConfig // of the level's queue set
	startedRequest bool
}

// captureFactory is a QueueSetFactory that validates configurations with the
// real queueset factory (so broken shuffle-sharding configs are rejected
// exactly as on a real server) but never restrains requests, and records the
// hash and distinguisher the controller passes to StartRequest.
type captureFactory struct {
	real fq.QueueSetFactory
	mu   sync.Mutex
	last upstreamResult
}

func newCaptureFactory() *captureFactory {
	return &captureFactory{real: fqs.NewQueueSetFactory(eventclock.Real{})}
}

func (f *captureFactory) BeginConstruction(qc fq.QueuingConfig, p fcmetrics.RatioedGaugePair, g fcmetrics.RatioedGauge, sd fcmetrics.Gauge) (fq.QueueSetCompleter, error) {
	if _, err := f.real.BeginConstruction(qc, p, g, sd); err != nil {
		return nil, err
	}
	return captureCompleter{f: f, qc: qc, p: p, g: g, sd: sd}, nil
}

type captureCompleter struct {
	f  *captureFactory
	qc fq.QueuingConfig
	p  fcmetrics.RatioedGaugePair
	g  fcmetrics.RatioedGauge
	sd fcmetrics.Gauge
}

func (c captureCompleter) Complete(fq.DispatchingConfig) fq.QueueSet { return captureQS(c) }

type captureQS captureCompleter

func (q captureQS) BeginConfigChange(qc fq.QueuingConfig) (fq.QueueSetCompleter, error) {
	return q.f.BeginConstruction(qc, q.p, q.g, q.sd)
}
func (q captureQS) IsIdle() bool { return true }
func (q captureQS) StartRequest(_ context.Context, _ *fcrequest.WorkEstimate, hash uint64, dist, fsName string, _, _ interface{}, _ fq.QueueNoteFn) (fq.Request, bool) {
	q.f.mu.Lock()
	q.f.last.hash, q.f.last.distinguisher, q.f.last.queuingCfg, q.f.last.startedRequest = hash, dist, q.qc, true
	q.f.mu.Unlock()
	return immediateRequest{}, false
}
func (q captureQS) Dump(bool) debug.QueueSetDump { return debug.QueueSetDump{} }

type immediateRequest struct{}

func (immediateRequest) Finish(execute func()) bool { execute(); return false }

// upstreamController is one running upstream config controller on a fake
// clientset holding one configuration.
type upstreamController struct {
	ctl     utilflowcontrol.Interface
	factory *captureFactory
	client  *clientsetfake.Clientset
	stop    chan struct{}
	// done is closed when the controller's Run has returned
	done chan struct{}
}

// startUpstream runs the real controller over the given (defaulted) objects
// and waits until it has digested them: the controller writes every
// FlowSchema's Dangling condition right after digesting, so the conditions
// appearing on all of them is the signal (apf_controller.go,
// presyncFlowSchemaStatus).
func startUpstream(t testing.TB, fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration, serverCL int) *upstreamController {
	t.Helper()
	silenceKlog()
	var objs []runtime.Object
	for _, fs := range fss {
		objs = append(objs, fs.DeepCopy())
	}
	for _, pl := range pls {
		objs = append(objs, pl.DeepCopy())
	}
	client := clientsetfake.NewSimpleClientset(objs...)
	inf := informers.NewSharedInformerFactory(client, 0)
	f := newCaptureFactory()
	ctl := utilflowcontrol.NewTestable(utilflowcontrol.TestableConfig{
		Name:                   "Controller",
		Clock:                  eventclock.Real{},
		AsFieldManager:         utilflowcontrol.ConfigConsumerAsFieldManager,
		FoundToDangling:        func(found bool) bool { return !found },
		InformerFactory:        inf,
		FlowcontrolClient:      client.FlowcontrolV1(),
		ServerConcurrencyLimit: serverCL,
		ReqsGaugeVec:           fcmetrics.PriorityLevelConcurrencyGaugeVec,
		ExecSeatsGaugeVec:      fcmetrics.PriorityLevelExecutionSeatsGaugeVec,
		QueueSetFactory:        f,
	})
	u := &upstreamController{ctl: ctl, factory: f, client: client, stop: make(chan struct{}), done: make(chan struct{})}
	inf.Start(u.stop)
	go func() {
		defer close(u.done)
		_ = ctl.Run(u.stop)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if u.digested(len(fss)) {
			return u
		}
		if time.Now().After(deadline) {
			close(u.stop)
			t.Fatalf("upstream controller did not digest %d FlowSchemas within 30s", len(fss))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (u *upstreamController) digested(n int) bool {
	list, err := u.client.FlowcontrolV1().FlowSchemas().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != n {
		return false
	}
	for _, fs := range list.Items {
		found := false
		for _, c := range fs.Status.Conditions {
			found = found || c.Type == flowcontrolv1.FlowSchemaConditionDangling
		}
		if !found {
			return false
		}
	}
	return true
}

// Stop stops the controller and waits until its Run has returned, so that
// it publishes nothing into the global gauges the next controller's
// checks read (a controller left running could overwrite them, which a
// busy machine made happen).
func (u *upstreamController) Stop() {
	close(u.stop)
	select {
	case <-u.done:
	case <-time.After(30 * time.Second):
	}
}

// classify runs one request through the controller's Handle.
func (u *upstreamController) classify(ri *request.RequestInfo, id Identity) upstreamResult {
	var res upstreamResult
	u.factory.mu.Lock()
	u.factory.last = upstreamResult{}
	u.factory.mu.Unlock()
	u.ctl.Handle(context.Background(), utilflowcontrol.RequestDigest{
		RequestInfo: ri,
		User:        &user.DefaultInfo{Name: id.User, Groups: id.Groups},
	}, func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, dist string) {
		res.fs, res.pl, res.fsUID, res.plUID, res.distinguisher = fs.Name, pl.Name, string(fs.UID), string(pl.UID), dist
	}, func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} },
		func(bool) {}, func() {})
	u.factory.mu.Lock()
	last := u.factory.last
	u.factory.mu.Unlock()
	if last.distinguisher != res.distinguisher {
		panic(fmt.Sprintf("noteFn distinguisher %q differs from StartRequest's %q", res.distinguisher, last.distinguisher))
	}
	res.hash, res.queuingCfg, res.startedRequest = last.hash, last.queuingCfg, last.startedRequest
	return res
}
