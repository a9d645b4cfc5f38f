package load

import (
	"fmt"
	"math"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// ServerFlags selects the flags of the server group a command takes.
type ServerFlags uint

const (
	// ServerConcurrency is --server-concurrency, 0 inferring the limit from
	// the apiserver's metrics (else the default).
	ServerConcurrency ServerFlags = 1 << iota
	// ServerRequestTimeout is --server-request-timeout.
	ServerRequestTimeout
	// ServerWaitLimit is --wait-limit, the queues' wait limit given itself
	// (monitoring) instead of computed from the request timeout.
	ServerWaitLimit
	// ServerCPU are --cpu-limit and --server-speed: the recorded server's
	// CPU limit, and how fast the changed server runs (simulate).
	ServerCPU
)

// ServerOptions is the group of the apiserver's settings that the plugin
// cannot read from it: --server-concurrency, --server-request-timeout,
// --wait-limit, --cpu-limit and --server-speed, each command taking those
// it needs. Every command that takes them embeds this group.
type ServerOptions struct {
	// Concurrency is the server concurrency limit
	// (--max-requests-inflight plus --max-mutating-requests-inflight); 0
	// infers it from the metrics, or takes the default.
	Concurrency int
	// RequestTimeout is the apiserver's --request-timeout.
	RequestTimeout time.Duration
	// CPULimit is the recorded server's CPU limit as in its pod spec
	// ("200m", "0.5"); empty when unknown. Complete parses it (CPUCores).
	CPULimit string
	// Speed is how fast the changed server executes requests against the
	// recorded one (simulate.Config.ServerSpeed).
	Speed float64

	flags     ServerFlags
	waitLimit time.Duration
	cpuCores  float64
}

// NewServerOptions returns the defaults of --server-concurrency and
// --server-request-timeout.
func NewServerOptions() *ServerOptions {
	return NewServerOptionsOf(ServerConcurrency | ServerRequestTimeout)
}

// NewServerOptionsOf returns the defaults of the flags which selects.
func NewServerOptionsOf(which ServerFlags) *ServerOptions {
	o := &ServerOptions{RequestTimeout: engine.DefaultServerRequestTimeout, Speed: 1, flags: which}
	o.waitLimit = engine.DefaultRequestWaitLimit(o.RequestTimeout)
	return o
}

// AddFlags registers the flags.
func (o *ServerOptions) AddFlags(fs *pflag.FlagSet) {
	if o.flags&ServerConcurrency != 0 {
		fs.IntVar(&o.Concurrency, "server-concurrency", o.Concurrency, "Server concurrency limit (max-requests-inflight + max-mutating-requests-inflight); 0 infers it from the apiserver's metrics, or uses 600.")
	}
	if o.flags&ServerRequestTimeout != 0 {
		fs.DurationVar(&o.RequestTimeout, "server-request-timeout", o.RequestTimeout, "The apiserver's --request-timeout, which sets the wait limit in the queues (a quarter of it, at most 1m).")
	}
	if o.flags&ServerWaitLimit != 0 {
		fs.DurationVar(&o.waitLimit, "wait-limit", o.waitLimit, "How long a request may wait in a queue: a quarter of the apiserver's --request-timeout.")
	}
	if o.flags&ServerCPU != 0 {
		fs.StringVar(&o.CPULimit, "cpu-limit", o.CPULimit, "The recorded kube-apiserver's CPU limit, as in its pod spec (200m, 0.5, 2): the CPU model then takes how long the server runs in each CFS period from it (the limit over GOMAXPROCS) instead of estimating it from the stalls.")
		fs.Float64Var(&o.Speed, "server-speed", o.Speed, "How fast the changed server runs requests against the recorded one: 1.25 shortens every execution and seat hold to 1/1.25 of the recorded (a faster node, a less crowded one), 0.8 lengthens them; other than 1, it is a change by itself.")
	}
}

// Complete parses --cpu-limit.
func (o *ServerOptions) Complete() error {
	o.cpuCores = 0
	if o.CPULimit != "" {
		q, err := resource.ParseQuantity(o.CPULimit)
		if err != nil || q.Sign() <= 0 {
			return fmt.Errorf("--cpu-limit %q: give the CPU limit in cores, as in a pod spec (200m, 0.5, 2)", o.CPULimit)
		}
		o.cpuCores = q.AsApproximateFloat64()
	}
	return nil
}

// Validate checks the flags; its messages name them. --wait-limit is
// checked by its user (monitoring.Options.Validate).
func (o *ServerOptions) Validate() error {
	if o.Concurrency < 0 {
		return fmt.Errorf("--server-concurrency must be positive, not %d", o.Concurrency)
	}
	if o.RequestTimeout <= 0 {
		return fmt.Errorf("--server-request-timeout must be positive, not %v", o.RequestTimeout)
	}
	if o.flags&ServerCPU != 0 && (!(o.Speed > 0) || math.IsInf(o.Speed, 1)) {
		return fmt.Errorf("--server-speed must be a number above 0 (1 is the recorded server's speed), not %g", o.Speed)
	}
	return nil
}

// WaitLimit is the longest a request waits in a queue with the default
// deadline: --wait-limit where the command takes it, else a quarter of the
// request timeout, at most a minute (queueset.go; the apiserver's request
// deadline).
func (o *ServerOptions) WaitLimit() time.Duration {
	if o.flags&ServerWaitLimit != 0 {
		return o.waitLimit
	}
	return engine.DefaultRequestWaitLimit(o.RequestTimeout)
}

// CPUCores is --cpu-limit in cores, after Complete; 0 when not given.
func (o *ServerOptions) CPUCores() float64 { return o.cpuCores }
