// Command apf-oracle runs the real APF code of one k8s.io/apiserver release
// on cases it reads as JSON on stdin and writes what that code decided as
// JSON on stdout: per configuration, the classification of each request (the
// real config controller, NewTestable on a fake clientset, as
// pkg/engine/upstream_harness_test.go does for v0.37), the limit gauges it
// published (nominal, lower, upper, current, seat_fair_frac) and max seats,
// and the work estimate (request.NewWorkEstimator) of each estimate case.
//
// The same source builds against every release from v0.29 to v0.37: the
// module file of a release is releases/vX.Y.mod (build.sh passes it with
// -modfile); estimator_count.go and estimator_stats.go hold the one API that
// changed (the object-count getter became a storage.Stats getter in v0.34).
// pkg/engine's TestReleaseDifferential generates the cases and compares.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
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
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// Input is what the oracle reads.
type Input struct {
	Configs []ConfigCase `json:"configs"`
}

// ConfigCase is one configuration with its requests.
type ConfigCase struct {
	FlowSchemas    []*flowcontrolv1.FlowSchema                 `json:"flowSchemas"`
	PriorityLevels []*flowcontrolv1.PriorityLevelConfiguration `json:"priorityLevels"`
	ServerCL       int                                         `json:"serverCL"`
	Requests       []RequestCase                               `json:"requests"`
	Estimates      []EstimateCase                              `json:"estimates"`
}

// RequestCase is one request to classify.
type RequestCase struct {
	Info   request.RequestInfo `json:"info"`
	User   string              `json:"user"`
	Groups []string            `json:"groups"`
}

// EstimateCase is one request to estimate in a level, with the object count
// and average size the estimator's getter returns for its resource and the
// number of watchers its watch counter returns. Objects ObjectsStale makes
// the getter fail with ObjectCountStaleErr (the tracker's count went stale),
// any other negative count with ObjectCountNotFoundErr (a resource the
// tracker does not know).
type EstimateCase struct {
	Method   string              `json:"method"`
	URL      string              `json:"url"`
	Info     request.RequestInfo `json:"info"`
	Level    string              `json:"level"`
	Objects  int64               `json:"objects"`
	AvgSize  int64               `json:"avgSize"`
	Watchers int                 `json:"watchers"`
}

// ObjectsStale is the EstimateCase.Objects of a stale count.
const ObjectsStale = -2

// Output is what the oracle writes.
type Output struct {
	Configs []ConfigResult `json:"configs"`
}

// ConfigResult is the upstream result for one ConfigCase.
type ConfigResult struct {
	Classify  []ClassifyResult              `json:"classify"`
	Gauges    map[string]map[string]float64 `json:"gauges"`
	MaxSeats  map[string]uint64             `json:"maxSeats"`
	Estimates []EstimateResult              `json:"estimates"`
}

// ClassifyResult is what the controller decided for one request.
type ClassifyResult struct {
	FS, PL, FSUID, PLUID, Distinguisher string
	Hash                                uint64
	Queues, HandSize                    int
}

// EstimateResult is one work estimate.
type EstimateResult struct {
	Initial, Final uint64
	AdditionalNs   int64
}

func main() {
	flag.Parse()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	fcmetrics.Register()

	var in Input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintf(os.Stderr, "apf-oracle: reading the cases: %v\n", err)
		os.Exit(2)
	}
	out := Output{}
	for i, c := range in.Configs {
		r, err := runConfig(c)
		if err != nil {
			fmt.Fprintf(os.Stderr, "apf-oracle: config %d: %v\n", i, err)
			os.Exit(1)
		}
		out.Configs = append(out.Configs, r)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "apf-oracle: %v\n", err)
		os.Exit(1)
	}
}

func runConfig(c ConfigCase) (ConfigResult, error) {
	u, err := startUpstream(c.FlowSchemas, c.PriorityLevels, c.ServerCL)
	if err != nil {
		return ConfigResult{}, err
	}
	defer close(u.stop)
	res := ConfigResult{MaxSeats: map[string]uint64{}}
	for _, rq := range c.Requests {
		ri := rq.Info
		res.Classify = append(res.Classify, u.classify(&ri, rq.User, rq.Groups))
	}
	res.Gauges, err = publishedGauges()
	if err != nil {
		return res, err
	}
	for _, pl := range c.PriorityLevels {
		res.MaxSeats[pl.Name] = u.ctl.GetMaxSeats(pl.Name)
	}
	for _, e := range c.Estimates {
		est := newEstimator(e, u.ctl.GetMaxSeats)
		ri := e.Info
		ctx := request.WithRequestInfo(context.Background(), &ri)
		ctx = request.WithUser(ctx, &user.DefaultInfo{Name: "oracle"})
		pu, err := url.ParseRequestURI(e.URL)
		if err != nil {
			return res, err
		}
		method := e.Method
		if method == "" {
			method = http.MethodGet
		}
		hr := (&http.Request{Method: method, URL: pu, RequestURI: e.URL}).WithContext(ctx)
		we := est(hr, "fs", e.Level)
		res.Estimates = append(res.Estimates, EstimateResult{Initial: we.InitialSeats, Final: we.FinalSeats, AdditionalNs: int64(we.AdditionalLatency)})
	}
	return res, nil
}

func publishedGauges() (map[string]map[string]float64, error) {
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		switch name := mf.GetName(); name {
		case "apiserver_flowcontrol_nominal_limit_seats", "apiserver_flowcontrol_lower_limit_seats",
			"apiserver_flowcontrol_upper_limit_seats", "apiserver_flowcontrol_current_limit_seats",
			"apiserver_flowcontrol_seat_fair_frac":
			out[name] = map[string]float64{}
			for _, m := range mf.GetMetric() {
				pl := ""
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "priority_level" {
						pl = lp.GetValue()
					}
				}
				out[name][pl] = m.GetGauge().GetValue()
			}
		}
	}
	return out, nil
}

// captureFactory validates queuing configurations with the real queueset
// factory but never restrains requests, and records what the controller
// passes to StartRequest.
type captureFactory struct {
	real fq.QueueSetFactory
	mu   sync.Mutex
	last struct {
		hash uint64
		dist string
		qc   fq.QueuingConfig
	}
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
func (q captureQS) StartRequest(_ context.Context, _ *fcrequest.WorkEstimate, hash uint64, dist, _ string, _, _ interface{}, _ fq.QueueNoteFn) (fq.Request, bool) {
	q.f.mu.Lock()
	q.f.last.hash, q.f.last.dist, q.f.last.qc = hash, dist, q.qc
	q.f.mu.Unlock()
	return immediateRequest{}, false
}
func (q captureQS) Dump(bool) debug.QueueSetDump { return debug.QueueSetDump{} }

type immediateRequest struct{}

func (immediateRequest) Finish(execute func()) bool { execute(); return false }

type upstream struct {
	ctl     utilflowcontrol.Interface
	factory *captureFactory
	stop    chan struct{}
}

func startUpstream(fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration, serverCL int) (*upstream, error) {
	var objs []runtime.Object
	for _, fs := range fss {
		objs = append(objs, fs.DeepCopy())
	}
	for _, pl := range pls {
		objs = append(objs, pl.DeepCopy())
	}
	client := clientsetfake.NewSimpleClientset(objs...)
	inf := informers.NewSharedInformerFactory(client, 0)
	f := &captureFactory{real: fqs.NewQueueSetFactory(eventclock.Real{})}
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
	u := &upstream{ctl: ctl, factory: f, stop: make(chan struct{})}
	inf.Start(u.stop)
	go func() { _ = ctl.Run(u.stop) }()
	// The controller writes every FlowSchema's Dangling condition right
	// after digesting: all of them having one is the signal.
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := client.FlowcontrolV1().FlowSchemas().List(context.Background(), metav1.ListOptions{})
		if err == nil && len(list.Items) == len(fss) {
			done := true
			for _, fs := range list.Items {
				found := false
				for _, c := range fs.Status.Conditions {
					found = found || c.Type == flowcontrolv1.FlowSchemaConditionDangling
				}
				done = done && found
			}
			if done {
				return u, nil
			}
		}
		if time.Now().After(deadline) {
			close(u.stop)
			return nil, fmt.Errorf("the controller did not digest %d FlowSchemas within 30s", len(fss))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (u *upstream) classify(ri *request.RequestInfo, name string, groups []string) ClassifyResult {
	var res ClassifyResult
	u.factory.mu.Lock()
	u.factory.last.hash, u.factory.last.dist, u.factory.last.qc = 0, "", fq.QueuingConfig{}
	u.factory.mu.Unlock()
	u.ctl.Handle(context.Background(), utilflowcontrol.RequestDigest{
		RequestInfo: ri,
		User:        &user.DefaultInfo{Name: name, Groups: groups},
	}, func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, dist string) {
		res.FS, res.PL, res.FSUID, res.PLUID, res.Distinguisher = fs.Name, pl.Name, string(fs.UID), string(pl.UID), dist
	}, func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} },
		func(bool) {}, func() {})
	u.factory.mu.Lock()
	res.Hash, res.Queues, res.HandSize = u.factory.last.hash, u.factory.last.qc.DesiredNumQueues, u.factory.last.qc.HandSize
	u.factory.mu.Unlock()
	return res
}
