package load

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestServerFlagsSelected: each command gets the server group's flags it
// selects and no other, with their names and defaults.
func TestServerFlagsSelected(t *testing.T) {
	for _, tt := range []struct {
		which ServerFlags
		want  string
	}{
		{ServerConcurrency | ServerRequestTimeout, "server-concurrency=0 server-request-timeout=1m0s"},
		{ServerWaitLimit, "wait-limit=15s"},
		{ServerConcurrency | ServerRequestTimeout | ServerCPU, "cpu-limit= server-concurrency=0 server-request-timeout=1m0s server-speed=1"},
	} {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		NewServerOptionsOf(tt.which).AddFlags(fs)
		var got []string
		fs.VisitAll(func(f *pflag.Flag) { got = append(got, f.Name+"="+f.DefValue) })
		sort.Strings(got)
		if strings.Join(got, " ") != tt.want {
			t.Errorf("flags %b: %q, want %q", tt.which, strings.Join(got, " "), tt.want)
		}
	}
	if NewServerOptions().flags != ServerConcurrency|ServerRequestTimeout {
		t.Errorf("NewServerOptions selects %b", NewServerOptions().flags)
	}
}

// TestServerWaitLimit: --wait-limit, where a command takes it, is the wait
// limit; elsewhere it is a quarter of --server-request-timeout, at most a
// minute.
func TestServerWaitLimit(t *testing.T) {
	o := NewServerOptionsOf(ServerWaitLimit)
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--wait-limit", "4s"}); err != nil {
		t.Fatal(err)
	}
	if got := o.WaitLimit(); got != 4*time.Second {
		t.Errorf("--wait-limit 4s: WaitLimit %v", got)
	}
	o = NewServerOptions()
	fs = pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.AddFlags(fs)
	for _, tt := range []struct {
		timeout string
		want    time.Duration
	}{{"1m", 15 * time.Second}, {"20s", 5 * time.Second}, {"10m", time.Minute}} {
		if err := fs.Parse([]string{"--server-request-timeout", tt.timeout}); err != nil {
			t.Fatal(err)
		}
		if got := o.WaitLimit(); got != tt.want {
			t.Errorf("--server-request-timeout %s: WaitLimit %v, want %v", tt.timeout, got, tt.want)
		}
	}
}

// TestServerCPU: --cpu-limit is read as a pod spec's quantity, and
// --server-speed must be a finite number above 0; both only where the
// command takes them.
func TestServerCPU(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		cores   float64
		wantErr string
	}{
		{nil, 0, ""},
		{[]string{"--cpu-limit", "200m"}, 0.2, ""},
		{[]string{"--cpu-limit", "2"}, 2, ""},
		{[]string{"--cpu-limit", "two"}, 0, `--cpu-limit "two": give the CPU limit in cores`},
		{[]string{"--cpu-limit", "0m"}, 0, `--cpu-limit "0m"`},
		{[]string{"--server-speed", "0"}, 0, "--server-speed must be a number above 0"},
		{[]string{"--server-speed", "+Inf"}, 0, "--server-speed must be a number above 0"},
		{[]string{"--server-speed", "NaN"}, 0, "--server-speed must be a number above 0"},
	} {
		o := NewServerOptionsOf(ServerConcurrency | ServerRequestTimeout | ServerCPU)
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		err := o.Complete()
		if err == nil {
			err = o.Validate()
		}
		if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.wantErr)
			continue
		}
		if err == nil && o.CPUCores() != tt.cores {
			t.Errorf("%v: %g cores, want %g", tt.args, o.CPUCores(), tt.cores)
		}
	}
	// A command without --server-speed is not held to it.
	if err := (&ServerOptions{RequestTimeout: time.Minute}).Validate(); err != nil {
		t.Errorf("zero group without --server-speed: %v", err)
	}
}
