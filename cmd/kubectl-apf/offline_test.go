package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// noCluster returns the flags that point a command at an apiserver that
// is not there, through a kubeconfig of its own: port 1 of the loopback
// address, where nothing listens.
func noCluster(t *testing.T) []string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters:
- name: gone
  cluster: {server: "http://127.0.0.1:1"}
users:
- name: nobody
  user: {}
contexts:
- name: gone
  context: {cluster: gone, user: nobody}
current-context: gone
`
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--kubeconfig", kubeconfig}
}

// TestExplain429WorkloadDefaults: explain 429 --workload FILE --defaults
// reconstructs the log against the upstream defaults without a cluster,
// as its help says (issue 58, S5: the flag did not exist), with
// --kube-version and -f as the other commands take them; without a log
// the configuration flags are refused in one line that names --workload.
func TestExplain429WorkloadDefaults(t *testing.T) {
	audit := filepath.Join("..", "..", "testdata", "workload", "audit.jsonl")
	offline := noCluster(t)
	args := append([]string{"explain", "429", "--workload", audit, "--defaults", "-o", "json"}, offline...)
	code, out, errOut := runPlugin(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep rejections.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if rep.Source.Kind != rejections.SourceLog || len(rep.Incidents) == 0 || rep.Release != "1.37" {
		t.Errorf("source %+v, %d incidents, release %q; want the log's incidents against the 1.37 defaults", rep.Source, len(rep.Incidents), rep.Release)
	}

	args = append([]string{"explain", "429", "--workload", audit, "--defaults", "--kube-version", "1.30",
		"-f", fieldPath("eks-list-events-flowschema.yaml"), "-o", "json"}, offline...)
	code, out, errOut = runPlugin(args...)
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Release != "1.30" {
		t.Errorf("with --kube-version 1.30 and -f: exit %d, release %q: %s", code, rep.Release, errOut)
	}

	for _, flags := range [][]string{{"--defaults"}, {"-f", fieldPath("eks-list-events-flowschema.yaml")}, {"--kube-version", "1.30"}} {
		code, _, errOut := runPlugin(append(append([]string{"explain", "429", "--from", fieldPath("eks-rejected-inqueue.txt")}, flags...), offline...)...)
		if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "it takes --workload FILE or --victorialogs URL") {
			t.Errorf("%v without a log: exit %d, stderr %q", flags, code, errOut)
		}
	}
}

// TestOfflineHints: a command that cannot read the cluster ends its one
// line with the flags that work without one, each command those it has
// (issue 58: explain 429 named --from alone, dump and whois nothing).
func TestOfflineHints(t *testing.T) {
	audit := filepath.Join("..", "..", "testdata", "workload", "audit.jsonl")
	const (
		withDefaults = "(--defaults or --from BUNDLE work without a cluster)"
		fromOnly     = "(--from BUNDLE works without a cluster)"
		explain429   = "(--from BUNDLE works without a cluster, and --defaults with --workload FILE)"
	)
	tests := []struct {
		args []string
		code int
		hint string
	}{
		{[]string{"explain", "429"}, 1, explain429},
		{[]string{"explain", "429", "--workload", audit}, 1, withDefaults},
		{[]string{"explain", "request", "--user-name", "alice", "list", "/api/v1/pods"}, 1, withDefaults},
		{[]string{"lint"}, 2, withDefaults},
		{[]string{"capacity"}, 1, withDefaults},
		{[]string{"simulate", "--workload", audit}, 1, withDefaults},
		{[]string{"dump", "levels"}, 1, fromOnly},
		{[]string{"dump", "requests"}, 1, fromOnly},
		{[]string{"top", "levels"}, 1, fromOnly},
		{[]string{"top", "flows"}, 1, fromOnly},
		{[]string{"whois", "0b0b0b0b-0000-4000-8000-000000000000"}, 1, fromOnly},
	}
	offline := noCluster(t)
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := runPlugin(append(tt.args, offline...)...)
			if code != tt.code || strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, tt.hint+"\n") {
				t.Errorf("exit %d, stderr %q; want %d and one line ending %q", code, errOut, tt.code, tt.hint)
			}
		})
	}
	// A kubeconfig that cannot be read gives the same hint.
	code, _, errOut := runPlugin("explain", "429", "--kubeconfig", filepath.Join(t.TempDir(), "none"))
	if code != 1 || !strings.Contains(errOut, "reading the kubeconfig") || !strings.HasSuffix(errOut, explain429+"\n") {
		t.Errorf("no kubeconfig: exit %d, stderr %q", code, errOut)
	}
}

// TestHelpNamesOnlyItsFlags: the flags a command's help and examples name
// are its own (issue 58: explain 429's help offered --defaults, which it
// did not have, and capacity's --all-apiservers). The exceptions name a
// flag of another command or of kube-apiserver, and say so in the text.
func TestHelpNamesOnlyItsFlags(t *testing.T) {
	others := map[string]bool{
		"kubectl apf capacity --max-requests-inflight":          true, // kube-apiserver's
		"kubectl apf capacity --max-mutating-requests-inflight": true, // kube-apiserver's
		"kubectl apf dump --all-apiservers":                     true, // its subcommands'
		"kubectl apf dump --apiserver-urls":                     true,
		"kubectl apf dump --to":                                 true, // dump bundle's
		"kubectl apf dump --from":                               true,
		"kubectl apf explain 429 --from-message":                true, // explain request's
		"kubectl apf explain 429 --watch":                       true, // dump bundle's
		"kubectl apf rbac --all-apiservers":                     true, // the other commands'
		"kubectl apf rbac --prometheus-service":                 true,
		"kubectl apf rbac --victorialogs-service":               true,
		"kubectl apf simulate --metrics-interval":               true, // dump bundle's
		"kubectl apf top --watch":                               true, // its subcommands'
	}
	flagRE := regexp.MustCompile("(?:^|[\\s(`'\"])--([a-z][a-z0-9-]+)")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, m := range flagRE.FindAllStringSubmatch(c.Long+"\n"+c.Example, -1) {
			if c.Flags().Lookup(m[1]) == nil && c.InheritedFlags().Lookup(m[1]) == nil && !others[c.CommandPath()+" --"+m[1]] {
				t.Errorf("%s: its help names --%s, which it does not have", c.CommandPath(), m[1])
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRootCommand(genericiooptions.NewTestIOStreamsDiscard()))
}
