package load

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/clock"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
	"github.com/kubectl-apf/kubectl-apf/pkg/promfetch"
)

// StoreHelp is appended to the Long help of the commands that take the
// store group, given the inputs of their NewOptions: --all-apiservers is
// named only to the commands that have it (the Instances input).
func StoreHelp(inputs Inputs) string {
	if inputs&Instances != 0 {
		return storeHelp + "; --all-apiservers breaks the answers down\nby instance."
	}
	return storeHelp + "."
}

const storeHelp = `

With --prometheus URL (or --prometheus-service NAMESPACE/NAME:PORT, through
the apiserver's service proxy with the kubectl identity), the answer comes
from a Prometheus-compatible store (Prometheus, Thanos, Mimir,
VictoriaMetrics) that scrapes the apiservers, for a moment in the past
(--at) or a window (--since, --until). Times are RFC 3339
(2026-11-23T03:10:00Z), "now", or relative: "-2h" or "2h ago"; durations
take s, m, h, d and w. Every aggregation runs in the store as PromQL; only
the answers travel. --prometheus-selector picks the apiserver series
(cluster="prod",job="apiserver")`

// StoreOptions is the flag group of a Prometheus-compatible store that
// holds APF's past: the third source of state, beside the cluster and the
// bundle. A command takes it with the Store input of NewOptions.
type StoreOptions struct {
	configFlags *genericclioptions.ConfigFlags

	URL, Service                       string
	Token, TokenFile                   string
	Username, PasswordFile             string
	CAFile, CertFile, KeyFile          string
	Insecure                           bool
	Headers                            []string
	Selector, InstanceLabel            string
	Since                              durationValue
	Until, At                          string
	Step, ScrapeInterval, QueryTimeout time.Duration
	// DefaultSince is the window of a bare --prometheus (0: one moment,
	// --at or now).
	DefaultSince time.Duration

	// Querier is set by Open unless a test injected one.
	Querier history.Querier
	// Client is the HTTP client Open built (nil when injected).
	Client *promfetch.Client
	// Window and Query are set by Complete.
	Window history.Window
	Query  history.Query
	// Clock gives "now" of relative times (the real clock when nil).
	Clock clock.PassiveClock

	// err is what Complete could not make of the flags, for Validate.
	err error
}

func newStoreOptions(configFlags *genericclioptions.ConfigFlags) *StoreOptions {
	return &StoreOptions{configFlags: configFlags, InstanceLabel: "instance", ScrapeInterval: 30 * time.Second, QueryTimeout: 2 * time.Minute}
}

// durationValue is a pflag.Value taking history.ParseDuration's units:
// --since, the window's length before --until. Over a log's files
// (explain 429 --workload, with no store), --since may also be the
// window's start, a time (history.ParseTime): the value keeps it as given
// (Raw), and a store refuses it (Validate).
type durationValue struct {
	d   time.Duration
	set bool
	// raw is the value as given; isTime says it is a time, not a length
	raw    string
	isTime bool
}

func (v *durationValue) String() string {
	switch {
	case !v.set:
		return ""
	case v.isTime:
		return v.raw
	}
	return v.d.String()
}

func (v *durationValue) Set(s string) error {
	d, err := history.ParseDuration(s)
	if err != nil {
		if _, terr := history.ParseTime(s, time.Unix(1<<32, 0)); terr != nil {
			return fmt.Errorf("%w, nor a time (RFC 3339, -2h or \"2h ago\")", err)
		}
		v.d, v.set, v.raw, v.isTime = 0, true, s, true
		return nil
	}
	v.d, v.set, v.raw, v.isTime = d, true, s, false
	return nil
}

// Raw is the value as given ("" when not given).
func (v *durationValue) Raw() string { return v.raw }

// IsTime reports whether the value given is a time, not a length.
func (v *durationValue) IsTime() bool { return v.set && v.isTime }

func (v *durationValue) Type() string { return "duration" }

// IsSet reports whether the flag was given.
func (v *durationValue) IsSet() bool { return v.set }

// NewEvidenceStoreOptions is the store group of a command that reads the
// store over a window of its own (simulate --prometheus: the workload's),
// which registers its flags with AddConnectionFlags.
func NewEvidenceStoreOptions(configFlags *genericclioptions.ConfigFlags) *StoreOptions {
	return newStoreOptions(configFlags)
}

// AddFlags registers the flags.
func (o *StoreOptions) AddFlags(fs *pflag.FlagSet) {
	o.AddConnectionFlags(fs)
	fs.Var(&o.Since, "since", "With --prometheus: look at the window of this length before --until (30m, 24h, 7d).")
	fs.StringVar(&o.Until, "until", o.Until, "With --prometheus: end of the window (RFC 3339, now, -2h or \"2h ago\"; default now).")
	fs.StringVar(&o.At, "at", o.At, "With --prometheus: one moment (RFC 3339, -2h or \"2h ago\").")
	fs.DurationVar(&o.Step, "step", o.Step, "With --prometheus: the resolution (0: about 240 points in the window, at least two scrape intervals).")
	fs.DurationVar(&o.ScrapeInterval, "scrape-interval", o.ScrapeInterval, "With --prometheus: how often the store scrapes the apiservers (the finest step that means something).")
}

// AddConnectionFlags registers the flags that reach the store and select
// its apiserver series, without those of the window (--since, --until,
// --at, --step, --scrape-interval), for a command whose window is its own.
func (o *StoreOptions) AddConnectionFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "prometheus", o.URL, "Read APF's history from this Prometheus-compatible store (http://prometheus:9090; a Thanos, Mimir or VictoriaMetrics query URL).")
	fs.StringVar(&o.Service, "prometheus-service", o.Service, "Reach an in-cluster store through the apiserver's service proxy: NAMESPACE/NAME:PORT (read-only GETs, as the kubectl identity).")
	fs.StringVar(&o.Token, "prometheus-token", o.Token, "Bearer token for --prometheus.")
	fs.StringVar(&o.TokenFile, "prometheus-token-file", o.TokenFile, "File holding the bearer token for --prometheus.")
	fs.StringVar(&o.Username, "prometheus-username", o.Username, "Basic-auth user for --prometheus (the password from --prometheus-password-file).")
	fs.StringVar(&o.PasswordFile, "prometheus-password-file", o.PasswordFile, "File holding the basic-auth password.")
	fs.StringVar(&o.CAFile, "prometheus-ca-file", o.CAFile, "CA bundle that verifies the store's certificate.")
	fs.StringVar(&o.CertFile, "prometheus-cert-file", o.CertFile, "Client certificate for the store (with --prometheus-key-file).")
	fs.StringVar(&o.KeyFile, "prometheus-key-file", o.KeyFile, "Client key for the store.")
	fs.BoolVar(&o.Insecure, "prometheus-insecure", o.Insecure, "Do not verify the store's certificate.")
	fs.StringArrayVar(&o.Headers, "prometheus-header", o.Headers, "Extra header NAME=VALUE for every query (repeatable), such as X-Scope-OrgID=TENANT for Mimir and Cortex.")
	fs.StringVar(&o.Selector, "prometheus-selector", o.Selector, "Label matchers of the apiserver series, such as 'cluster=\"prod\",job=\"apiserver\"'.")
	fs.StringVar(&o.InstanceLabel, "prometheus-instance-label", o.InstanceLabel, "The label that names an apiserver instance in the store.")
	fs.DurationVar(&o.QueryTimeout, "prometheus-timeout", o.QueryTimeout, "With --prometheus: how long one query may take.")
}

// Enabled reports whether the store is read.
func (o *StoreOptions) Enabled() bool {
	return o != nil && (o.URL != "" || o.Service != "" || o.Querier != nil)
}

// TimeSet reports whether a time flag (--since, --until, --at) was given.
func (o *StoreOptions) TimeSet() bool {
	return o.Since.set || o.Until != "" || o.At != ""
}

// usedWithout names a time flag given without a store.
func (o *StoreOptions) usedWithout() string {
	switch {
	case o.Since.set:
		return "--since"
	case o.Until != "":
		return "--until"
	case o.At != "":
		return "--at"
	}
	return ""
}

// Validate checks the flags, then reports what Complete could not make of
// them; it names the flags in its messages.
func (o *StoreOptions) Validate() error {
	if !o.Enabled() {
		if f := o.usedWithout(); f != "" {
			return fmt.Errorf("%s reads the past from a store: give --prometheus URL or --prometheus-service NAMESPACE/NAME:PORT", f)
		}
		return nil
	}
	if o.URL != "" && o.Service != "" {
		return fmt.Errorf("--prometheus and --prometheus-service are mutually exclusive")
	}
	if o.At != "" && (o.Since.set || o.Until != "") {
		return fmt.Errorf("--at is one moment; --since and --until a window: give one or the other")
	}
	if o.Since.IsTime() {
		return fmt.Errorf("--since %q: with a store, --since is the window's length before --until (30m, 24h, 7d), not a time", o.Since.Raw())
	}
	if o.Step < 0 || o.ScrapeInterval <= 0 || o.QueryTimeout < 0 {
		return fmt.Errorf("--step must not be negative, --scrape-interval must be positive")
	}
	for _, h := range o.Headers {
		if k, _, ok := strings.Cut(h, "="); !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("--prometheus-header %q: want NAME=VALUE, such as X-Scope-OrgID=tenant-1", h)
		}
	}
	if o.InstanceLabel == "" {
		return fmt.Errorf("--prometheus-instance-label must not be empty")
	}
	if o.Service != "" {
		if _, err := promfetch.ParseService(o.Service); err != nil {
			return err
		}
	}
	if o.URL != "" {
		if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--prometheus %q is not a URL like http://prometheus:9090", o.URL)
		}
	}
	return o.err
}

// Complete turns the flags into the query and the window; perInstance
// breaks the answers down by apiserver instance (--all-apiservers). What
// it cannot make of the flags, Validate reports.
func (o *StoreOptions) Complete(perInstance bool) {
	if !o.Enabled() {
		return
	}
	o.err = nil
	sel, err := history.ParseSelector(o.Selector)
	if err != nil {
		o.err = fmt.Errorf("--prometheus-selector: %w", err)
		return
	}
	o.Query = history.Query{Selector: sel, InstanceLabel: o.InstanceLabel, PerInstance: perInstance,
		Lookback: max(10*time.Minute, 4*o.ScrapeInterval)}
	since := o.Since.d
	if !o.Since.set && o.At == "" {
		since = o.DefaultSince
	}
	if o.At != "" && (o.Since.set || o.Until != "") {
		return // Validate says so
	}
	o.Window, o.err = history.WindowOptions{Since: since, Until: o.Until, At: o.At, Step: o.Step, ScrapeInterval: o.ScrapeInterval}.Resolve(o.now())
}

func (o *StoreOptions) now() time.Time {
	if o.Clock != nil {
		return o.Clock.Now()
	}
	return time.Now()
}

// Open builds the store's client, unless a test injected a Querier. It
// reads the token, password and certificate files.
func (o *StoreOptions) Open() error {
	if o.Querier != nil {
		return nil
	}
	po := promfetch.Options{URL: o.URL, Service: o.Service, BearerToken: o.Token, BearerTokenFile: o.TokenFile,
		Username: o.Username, PasswordFile: o.PasswordFile, CAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile,
		Insecure: o.Insecure, Timeout: o.QueryTimeout, Headers: map[string]string{}}
	for _, h := range o.Headers {
		k, v, _ := strings.Cut(h, "=")
		po.Headers[strings.TrimSpace(k)] = v
	}
	var err error
	if o.Service != "" {
		if po.REST, err = o.configFlags.ToRESTConfig(); err != nil {
			return fmt.Errorf("--prometheus-service reads the kubeconfig: %w", err)
		}
	}
	if o.Client, err = promfetch.New(po); err != nil {
		return err
	}
	o.Querier = o.Client
	return nil
}

// IsWindow reports whether the flags name a window (--since), not one
// moment.
func (o *StoreOptions) IsWindow() bool {
	return o.Window.End.After(o.Window.Start)
}

// Describe names the store for headers and messages.
func (o *StoreOptions) Describe() string {
	if o.Client != nil {
		return o.Client.Describe()
	}
	return "the store"
}

// Warnings are the store's warnings, sanitised, one line each.
func (o *StoreOptions) Warnings() []string {
	if o.Client == nil {
		return nil
	}
	var out []string
	for _, w := range o.Client.Stats.Warnings() {
		out = append(out, "warning from the store: "+sanitize.Line(w))
	}
	return out
}

// RateWindow is the window of the rates of a table at one moment: the
// step, at least two scrape intervals (an increase needs two samples).
func (o *StoreOptions) RateWindow() time.Duration {
	if o.Step > 0 {
		return max(o.Step, 2*o.ScrapeInterval)
	}
	return 2 * o.ScrapeInterval
}

// Capture reads the level table at each time of [start, end] as captures
// of snapshots whose metrics the store computed (history.Scrapes), so that
// the live view and "top levels" render them as they render an
// apiserver's.
func (o *StoreOptions) Capture(ctx context.Context, start, end time.Time, step time.Duration) ([]time.Time, []*dump.Capture, error) {
	per, err := history.Scrapes(ctx, o.Querier, o.Query, start, end, step, o.RateWindow())
	if err != nil {
		return nil, nil, err
	}
	byTime := map[int64]*dump.Capture{}
	var times []time.Time
	for _, is := range per {
		for i, t := range is.Times {
			c := byTime[t.UnixMilli()]
			if c == nil {
				c = &dump.Capture{}
				byTime[t.UnixMilli()] = c
				times = append(times, t)
			}
			snap, err := storeSnapshot(is.Instance, t, is.Pairs[i])
			if err != nil {
				return nil, nil, err
			}
			c.Snapshots = append(c.Snapshots, snap)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	out := make([]*dump.Capture, len(times))
	for i, t := range times {
		out[i] = byTime[t.UnixMilli()]
	}
	return times, out, nil
}

// CaptureAt is the level table at t, an error when the store holds none.
func (o *StoreOptions) CaptureAt(ctx context.Context, t time.Time) (*dump.Capture, error) {
	_, cs, err := o.Capture(ctx, t, t, o.RateWindow())
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("%s holds no APF series at %s matching the selector", o.Describe(), t.UTC().Format(time.RFC3339))
	}
	return cs[len(cs)-1], nil
}

// storeSnapshot is a snapshot holding the two scrapes the store's answers
// make, also as the bundle files a recording keeps.
func storeSnapshot(inst string, t time.Time, pair [2]*metrics.Scrape) (*dump.Snapshot, error) {
	s := &dump.Snapshot{Instance: inst, CapturedAt: t, Metrics: []*metrics.Scrape{pair[0], pair[1]}, Raw: map[string][]byte{}}
	for i, sc := range pair {
		var b bytes.Buffer
		names := make([]string, 0, len(sc.Families))
		for n := range sc.Families {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if _, err := expfmt.MetricFamilyToText(&b, sc.Families[n]); err != nil {
				return nil, fmt.Errorf("encoding %s: %w", n, err)
			}
		}
		s.Raw[dump.MetricsFile(i)] = b.Bytes()
		s.Raw[strings.TrimSuffix(dump.MetricsFile(i), ".txt")+".time"] = []byte(sc.Time.UTC().Format(time.RFC3339Nano))
	}
	return s, nil
}

// StoreSource is the dump.Source of the store: each capture is the level
// table at the clock's time (the live view over a store).
type StoreSource struct {
	Store *StoreOptions
	Clock clock.PassiveClock
}

// Capture implements dump.Source.
func (s *StoreSource) Capture(ctx context.Context, _ dump.CaptureOptions) (*dump.Capture, error) {
	return s.Store.CaptureAt(ctx, s.Clock.Now())
}

// Describe implements dump.Source.
func (s *StoreSource) Describe() string { return s.Store.Describe() }

// Evidence reads, for each apiserver instance of the store, the scrapes
// that bracket [from, to] and the widest pair inside it, with the series
// of the CPU evidence
// (history.Evidence), looking up to the query's lookback beyond either
// end.
func (o *StoreOptions) Evidence(ctx context.Context, from, to time.Time) ([]history.InstanceEvidence, error) {
	rq, ok := o.Querier.(history.RawQuerier)
	if !ok {
		return nil, fmt.Errorf("%s: this client cannot read raw samples", o.Describe())
	}
	return history.Evidence(ctx, rq, o.Query, from, to, o.Query.Lookback)
}
