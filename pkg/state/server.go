package state

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// ServerOptions is the group of the apiserver's settings that the plugin
// cannot read from it: --server-concurrency and --server-request-timeout.
// Every command that takes them embeds this group.
type ServerOptions struct {
	// Concurrency is the server concurrency limit
	// (--max-requests-inflight plus --max-mutating-requests-inflight); 0
	// infers it from the metrics, or takes the default.
	Concurrency int
	// RequestTimeout is the apiserver's --request-timeout.
	RequestTimeout time.Duration
}

// NewServerOptions returns the defaults.
func NewServerOptions() *ServerOptions {
	return &ServerOptions{RequestTimeout: time.Minute}
}

// AddFlags registers the flags.
func (o *ServerOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Concurrency, "server-concurrency", o.Concurrency, "Server concurrency limit (max-requests-inflight + max-mutating-requests-inflight); 0 infers it from the apiserver's metrics, or uses 600.")
	fs.DurationVar(&o.RequestTimeout, "server-request-timeout", o.RequestTimeout, "The apiserver's --request-timeout, which sets the wait limit in the queues (a quarter of it, at most 1m).")
}

// Validate checks the flags; its messages name them.
func (o *ServerOptions) Validate() error {
	if o.Concurrency < 0 {
		return fmt.Errorf("--server-concurrency must be positive, not %d", o.Concurrency)
	}
	if o.RequestTimeout <= 0 {
		return fmt.Errorf("--server-request-timeout must be positive, not %v", o.RequestTimeout)
	}
	return nil
}

// WaitLimit is the longest a request waits in a queue with the default
// deadline: a quarter of the request timeout, at most a minute
// (queueset.go; the apiserver's request deadline).
func (o *ServerOptions) WaitLimit() time.Duration {
	return min(o.RequestTimeout/4, time.Minute)
}
