package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// staticSource is a Source of fixed snapshots built from the repository's
// fixtures; each Capture advances its clock by step and returns one new
// metrics scrape (the fixtures alternate), like a live cluster.
type staticSource struct {
	t     *testing.T
	now   time.Time
	step  time.Duration
	calls int
	fail  error
}

func (s *staticSource) Describe() string { return "static" }

func (s *staticSource) Capture(_ context.Context, opts dump.CaptureOptions) (*dump.Capture, error) {
	if s.fail != nil {
		return nil, s.fail
	}
	s.calls++
	read := func(parts ...string) []byte {
		b, err := os.ReadFile(filepath.Join(append([]string{"..", "..", "testdata"}, parts...)...))
		if err != nil {
			s.t.Fatal(err)
		}
		return b
	}
	snap := &dump.Snapshot{Instance: "https://127.0.0.1:6443", CapturedAt: s.now,
		FlowSchemas: []flowcontrolv1.FlowSchema{{ObjectMeta: metav1.ObjectMeta{Name: "apf-load", UID: "11111111-1111-1111-1111-111111111111"}}},
		PriorityLevels: []flowcontrolv1.PriorityLevelConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "apf-load", UID: "22222222-2222-2222-2222-222222222222"},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited}}},
		Raw: map[string][]byte{}}
	var err error
	if opts.Parts&dump.PartPriorityLevels != 0 {
		snap.Raw[dump.FilePriorityLevels] = read("dump", "v1.37.1-load", dump.FilePriorityLevels)
		snap.PriorityLevelDump, err = dump.ParsePriorityLevels(snap.Raw[dump.FilePriorityLevels])
	}
	if opts.Parts&dump.PartRequests != 0 && err == nil {
		snap.Raw[dump.FileRequests] = read("dump", "v1.37.1-load", dump.FileRequests)
		snap.RequestDump, err = dump.ParseRequests(snap.Raw[dump.FileRequests])
	}
	if err != nil {
		s.t.Fatal(err)
	}
	if opts.Parts&dump.PartMetrics != 0 {
		names := []string{"modern-a.txt", "modern-b.txt"}
		n := 1
		if opts.MetricsInterval > 0 {
			n = 2
		}
		for i := 0; i < n; i++ {
			sc, err := metrics.ParseText(read("metrics", names[(s.calls+i+1)%2]), s.now)
			if err != nil {
				s.t.Fatal(err)
			}
			snap.Metrics = append(snap.Metrics, sc)
			s.now = s.now.Add(opts.MetricsInterval)
		}
	}
	s.now = s.now.Add(s.step)
	return &dump.Capture{Snapshots: []*dump.Snapshot{snap}, Failures: []dump.InstanceError{{Instance: "https://127.0.0.1:6444", Message: "connection refused"}}}, nil
}

func testStreams(in string) (genericiooptions.IOStreams, *bytes.Buffer, *bytes.Buffer) {
	out, errb := &bytes.Buffer{}, &bytes.Buffer{}
	return genericiooptions.IOStreams{In: strings.NewReader(in), Out: out, ErrOut: errb}, out, errb
}

// TestCommandLineErrors runs the real command tree: bad flags and an
// unreadable bundle give one "error: ..." line and exit status 1.
func TestCommandLineErrors(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"dump", "levels", "-o", "xml"}, "error: --output must be one of table (or ''), wide, json, yaml, jsonpath=..., jsonpath-file=..., go-template=..., go-template-file=..., custom-columns=..., name; not \"xml\""},
		{[]string{"dump", "levels", "--from", "/nonexistent/b.tar.gz"}, "error: reading --from: stat /nonexistent/b.tar.gz: no such file or directory"},
		{[]string{"top", "levels", "--sort-by", "size", "--from", "x"}, "error: --sort-by must be one of utilisation, name, waiting, rejected, dispatched"},
		{[]string{"top", "flows", "--watch", "--from", "x"}, "error: --watch needs a cluster"},
		{[]string{"dump", "bundle", "--from", "x"}, "error: --to is required"},
		{[]string{"dump", "bundle", "--to", "b.tar.gz", "--keep", "1h"}, "error: --keep is how much of a --watch's scrapes to keep: give --watch too"},
		{[]string{"dump", "bundle", "--to", "b.tar.gz", "--watch", "1h", "--interval", "5s", "--keep", "9s"}, "error: --keep 9s holds fewer than two scrapes 5s apart (--interval): give at least 10s"},
		{[]string{"dump", "bundle", "--to", "b.tar.gz", "--watch", "1h", "--keep", "-1m"}, "error: --keep must not be negative, not -1m0s"},
		{[]string{"whois", "nope"}, `error: "nope" is neither a UID nor an X-Kubernetes-PF-*-UID header`},
		{[]string{"rbac", "--serviceaccount", "x"}, `error: --serviceaccount: "x" is not NAMESPACE:NAME`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			streams, out, errb := testStreams("")
			if code := run(tt.args, streams); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if out.Len() != 0 || !strings.HasPrefix(errb.String(), tt.wantErr) || strings.Count(errb.String(), "\n") != 1 {
				t.Errorf("stdout %q\nstderr %q\nwant one line starting %q", out, errb, tt.wantErr)
			}
		})
	}
}

func TestTopWatch(t *testing.T) {
	streams, out, errb := testStreams("")
	o := NewTopOptions(genericclioptions.NewConfigFlags(false), streams, "levels")
	src := &staticSource{t: t, now: time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC), step: 10 * time.Second}
	o.Source, o.Watch, o.Output, o.Level = src, true, "json", "apf-load"
	clk := clocktesting.NewFakeClock(src.now)
	o.Clock = clk
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Let two --interval sleeps pass, checking that each lasts exactly
	// --interval, and interrupt the third.
	go func() {
		for sleeps := 1; ctx.Err() == nil; sleeps++ {
			for !clk.HasWaiters() {
				if ctx.Err() != nil {
					return
				}
				runtime.Gosched()
			}
			if sleeps == 3 {
				cancel()
				return
			}
			clk.Step(o.Interval - time.Nanosecond)
			if !clk.HasWaiters() {
				t.Errorf("sleep %d ended before --interval %v", sleeps, o.Interval)
			}
			clk.Step(time.Nanosecond)
		}
	}()
	if err := o.Complete(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(ctx); err != nil {
		t.Fatalf("err = %v, want nil: an interrupted --watch ends normally", err)
	}
	if src.calls != 3 || strings.Count(out.String(), "# 2026-11-21T") != 3 {
		t.Errorf("%d captures, output:\n%s", src.calls, out)
	}
	// Every print has rates: the first from its two scrapes, later ones
	// from this scrape and the previous print's.
	if n := strings.Count(out.String(), `"hasRates": true`); n != 3 {
		t.Errorf("%d prints with rates, want 3:\n%s", n, out)
	}
	if !strings.Contains(errb.String(), "warning: apiserver https://127.0.0.1:6444 could not be read: connection refused") {
		t.Errorf("stderr = %q", errb)
	}
}

func TestWhoisFromStdin(t *testing.T) {
	streams, out, _ := testStreams("< X-Kubernetes-PF-FlowSchema-UID: 11111111-1111-1111-1111-111111111111\n< X-Kubernetes-PF-PriorityLevel-UID: 22222222-2222-2222-2222-222222222222\n")
	o := NewWhoisOptions(genericclioptions.NewConfigFlags(false), streams)
	o.Source = &staticSource{t: t}
	if err := o.Complete(nil, []string{"-"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Count(got, "apf-load") != 2 || !strings.Contains(got, "FlowSchema") || !strings.Contains(got, "PriorityLevelConfiguration") {
		t.Errorf("whois output:\n%s", got)
	}
}

// TestWhoisNamesNone: a UID of no object is a row that says so, and the
// command then fails as kubectl get does on NotFound, saying how many of
// the UIDs were missed; an empty UID (the imagined mandatory object) is an
// answer, not a miss. whois exited 0 when it named nothing.
func TestWhoisNamesNone(t *testing.T) {
	const (
		known = "11111111-1111-1111-1111-111111111111"
		none  = "99999999-9999-4999-8999-999999999999"
	)
	tests := []struct {
		args []string
		want string // "" for success
	}{
		{[]string{known}, ""},
		{[]string{"X-Kubernetes-PF-FlowSchema-UID: "}, ""},
		{[]string{none}, "the UID names no FlowSchema or PriorityLevelConfiguration of"},
		{[]string{none, "88888888-8888-4888-8888-888888888888"}, "none of the 2 UIDs names a FlowSchema"},
		{[]string{known, none}, "1 of the 2 UIDs names no FlowSchema"},
	}
	for _, tt := range tests {
		streams, out, _ := testStreams("")
		o := NewWhoisOptions(genericclioptions.NewConfigFlags(false), streams)
		o.Source = &staticSource{t: t}
		if err := o.Complete(nil, tt.args); err != nil {
			t.Fatal(err)
		}
		err := o.Run(context.Background())
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: err = %v, want %q", tt.args, err, tt.want)
		}
		// The table is printed either way, a row for each UID.
		if n := strings.Count(out.String(), "\n"); n != len(tt.args)+1 {
			t.Errorf("%v: %d lines:\n%s", tt.args, n, out)
		}
	}
}

// TestWhoisWithoutArguments: whois with nothing to name says how to give
// the UIDs, standard input among them (curl -si ... | kubectl apf whois
// answered "requires at least 1 arg(s), only received 0").
func TestWhoisWithoutArguments(t *testing.T) {
	code, _, errOut := runPlugin("whois")
	if code != 1 || !strings.Contains(errOut, "or - to read them from standard input") || strings.Contains(errOut, "requires at least") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestBundleCommandRoundTrip(t *testing.T) {
	streams, _, errb := testStreams("")
	o := NewBundleOptions(genericclioptions.NewConfigFlags(false), streams)
	o.Source = &staticSource{t: t, now: time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)}
	o.To = filepath.Join(t.TempDir(), "b.tar.gz")
	o.Redact, o.RedactKey = true, "k"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "warning: apiserver https://127.0.0.1:6444 is not in the bundle") {
		t.Errorf("stderr = %q", errb)
	}
	// Read back through the real command line.
	streams2, out, errb2 := testStreams("")
	if code := run([]string{"dump", "requests", "--from", o.To, "--level", "apf-load"}, streams2); code != 0 {
		t.Fatalf("exit %d: %s", code, errb2)
	}
	if !strings.Contains(out.String(), "waiting") || strings.Contains(out.String(), "load-2") || !strings.Contains(out.String(), "user-") {
		t.Errorf("redacted requests from the bundle:\n%s", out)
	}
}

func TestRBACManifest(t *testing.T) {
	streams, out, _ := testStreams("")
	if code := run([]string{"rbac", "--group", "sre", "--serviceaccount", "monitoring:prometheus"}, streams); code != 0 {
		t.Fatal("rbac failed")
	}
	checkGolden(t, filepath.Join("dump", "golden", "rbac.yaml"), out.Bytes())
	docs := strings.Split(out.String(), "\n---\n")
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	if len(docs) != 2 || yaml.UnmarshalStrict([]byte(docs[0]), &role) != nil || yaml.UnmarshalStrict([]byte(docs[1]), &binding) != nil {
		t.Fatalf("not a ClusterRole and a ClusterRoleBinding:\n%s", out)
	}
	urls := map[string]bool{}
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			if v != "get" && v != "list" && v != "watch" {
				t.Errorf("the role grants %q", v)
			}
		}
		for _, u := range r.NonResourceURLs {
			urls[u] = true
		}
	}
	if !urls[fetch.DebugURLPattern] || !urls["/metrics"] {
		t.Errorf("non-resource URLs = %v", urls)
	}
	if len(binding.Subjects) != 2 || binding.Subjects[1].Namespace != "monitoring" || binding.RoleRef.Name != role.Name {
		t.Errorf("binding = %+v", binding)
	}
}

// TestRBACManifestStoreServices: --store-service adds a Role in each
// store's namespace granting get on that Service's services/proxy (its
// NAME:PORT as the proxy's path names it), bound to the same subjects, so
// that --prometheus-service and --victorialogs-service work for them
// (TestHistoryThroughServiceProxy applies it on a real apiserver).
func TestRBACManifestStoreServices(t *testing.T) {
	streams, out, errb := testStreams("")
	if code := run([]string{"rbac", "--group", "sre", "--store-service", "monitoring/prometheus:9090", "--store-service", "logs/vl:9428",
		"--store-service", "monitoring/https:thanos:web", "--store-service", "monitoring/prometheus:9090"}, streams); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	docs := strings.Split(out.String(), "\n---\n")
	if len(docs) != 6 {
		t.Fatalf("want the ClusterRole, its binding and a Role and RoleBinding in each of 2 namespaces, got %d documents:\n%s", len(docs), out)
	}
	for i, want := range []struct{ ns, names string }{{"monitoring", "prometheus:9090 https:thanos:web"}, {"logs", "vl:9428"}} {
		var role rbacv1.Role
		var binding rbacv1.RoleBinding
		if err := yaml.UnmarshalStrict([]byte(docs[2+2*i]), &role); err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict([]byte(docs[3+2*i]), &binding); err != nil {
			t.Fatal(err)
		}
		if len(role.Rules) != 1 {
			t.Fatalf("role %+v", role)
		}
		r := role.Rules[0]
		if role.Namespace != want.ns || strings.Join(r.ResourceNames, " ") != want.names || strings.Join(r.Resources, " ") != "services/proxy" || strings.Join(r.Verbs, " ") != "get" || len(r.APIGroups) != 1 || r.APIGroups[0] != "" {
			t.Errorf("role in %s: %+v", want.ns, role)
		}
		if binding.Namespace != want.ns || binding.RoleRef.Kind != "Role" || binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != "sre" {
			t.Errorf("binding in %s: %+v", want.ns, binding)
		}
	}
	// without subjects: the Roles alone
	streams, out, _ = testStreams("")
	if code := run([]string{"rbac", "--store-service", "logs/vl:9428"}, streams); code != 0 || strings.Count(out.String(), "\n---\n") != 1 || !strings.Contains(out.String(), "kind: Role\n") {
		t.Errorf("rbac --store-service alone:\n%s", out)
	}
	// a flag that is not NAMESPACE/NAME:PORT is refused in one line
	streams, _, errb = testStreams("")
	if code := run([]string{"rbac", "--store-service", "prometheus"}, streams); code != 1 || errb.String() != "error: --store-service \"prometheus\": want NAMESPACE/NAME:PORT, such as monitoring/prometheus:9090\n" {
		t.Errorf("exit %d: %q", code, errb)
	}
}

// TestRBACManifestQuotesNames: subject names that YAML would read as
// something else (a mapping, a list item, a number, a comment) come back
// as the same strings, since the manifest is marshalled, not formatted.
func TestRBACManifestQuotesNames(t *testing.T) {
	users := []string{"a: b", "- c", "0123", "# d", "e'f", "true"}
	args := []string{"rbac"}
	for _, u := range users {
		args = append(args, "--user", u)
	}
	streams, out, errb := testStreams("")
	if code := run(args, streams); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	docs := strings.Split(out.String(), "\n---\n")
	var binding rbacv1.ClusterRoleBinding
	if len(docs) != 2 || yaml.UnmarshalStrict([]byte(docs[1]), &binding) != nil {
		t.Fatalf("not a ClusterRole and a ClusterRoleBinding:\n%s", out)
	}
	var got []string
	for _, s := range binding.Subjects {
		got = append(got, s.Name)
	}
	if strings.Join(got, "\x00") != strings.Join(users, "\x00") {
		t.Errorf("subjects %q, want %q", got, users)
	}
}

// TestNoArgumentsNamesTheFlag: a command that takes no arguments, given
// one, says so in one line and names the flag that takes what a user may
// have meant ("kubectl apf lint ./dir" was "unknown command"); every leaf
// command of the tree is tried, so a new one cannot fall back to cobra's
// answer.
func TestNoArgumentsNamesTheFlag(t *testing.T) {
	hints := map[string]string{"lint": "-f (lint -f ./flowcontrol/)", "simulate": "-w FILE", "tune": "-w FILE", "explain 429": "--workload FILE"}
	var leaves []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.HasSubCommands() && c.Runnable() {
			leaves = append(leaves, strings.TrimPrefix(c.CommandPath(), "kubectl apf "))
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	streams, _, _ := testStreams("")
	walk(NewRootCommand(streams))
	tried := 0
	for _, leaf := range leaves {
		switch leaf {
		case "explain request", "whois", "help", "completion bash", "completion zsh", "completion fish", "completion powershell":
			continue // they take arguments
		}
		tried++
		code, _, errOut := runPlugin(append(strings.Fields(leaf), "./stray")...)
		if code != 1 || !strings.Contains(errOut, "kubectl apf "+leaf+` takes no arguments, not "./stray"`) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s ./stray: exit %d, stderr %q", leaf, code, errOut)
		}
		if h, ok := hints[leaf]; ok && !strings.Contains(errOut, h) {
			t.Errorf("%s ./stray: %q does not name %s", leaf, errOut, h)
		}
	}
	if tried < 12 {
		t.Errorf("tried %d commands of %v", tried, leaves)
	}
}
