package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// runArgs runs the plugin in-process and returns its exit code and output.
func runArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	code = run(args, streams)
	return code, out.String(), errOut.String()
}

func TestHelpSaysKubectlApf(t *testing.T) {
	code, out, _ := runArgs(t, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out, "kubectl apf [command]") {
		t.Errorf("help does not show usage as a kubectl plugin:\n%s", out)
	}
	if strings.Contains(out, "kubectl-apf [command]") {
		t.Errorf("help shows the binary name instead of 'kubectl apf':\n%s", out)
	}
}

func TestGlobalFlags(t *testing.T) {
	cmd := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	// Every kubectl global flag, as genericclioptions.ConfigFlags has them.
	for _, name := range []string{"kubeconfig", "context", "namespace", "as", "as-group", "server", "request-timeout", "token", "cluster", "user", "insecure-skip-tls-verify", "tls-server-name", "v"} {
		if cmd.PersistentFlags().Lookup(name) == nil {
			t.Errorf("missing global flag --%s", name)
		}
	}
	if f := cmd.PersistentFlags().ShorthandLookup("n"); f == nil || f.Name != "namespace" {
		t.Errorf("-n is not --namespace")
	}
	if f := cmd.PersistentFlags().ShorthandLookup("v"); f == nil || f.Name != "v" {
		t.Errorf("-v is not klog's verbosity")
	}
	// Only -v of klog's flags is visible.
	for _, name := range []string{"logtostderr", "alsologtostderr", "log_dir", "vmodule", "skip_headers", "stderrthreshold"} {
		if cmd.PersistentFlags().Lookup(name) != nil {
			t.Errorf("klog flag --%s should not be exposed", name)
		}
	}
}

func TestVersion(t *testing.T) {
	old := version
	version, commit, buildDate = "v1.2.3", "abc123", "2026-11-21T00:00:00Z"
	t.Cleanup(func() { version, commit, buildDate = old, "unknown", "unknown" })

	code, out, _ := runArgs(t, "version", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var v VersionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version -o json is not JSON: %v\n%s", err, out)
	}
	if v.Version != "v1.2.3" || v.Commit != "abc123" || v.BuildDate != "2026-11-21T00:00:00Z" {
		t.Errorf("version -o json = %+v", v)
	}
	code, out, _ = runArgs(t, "version")
	if code != 0 || !strings.HasPrefix(out, "kubectl-apf v1.2.3 (commit abc123") {
		t.Errorf("version = %d %q", code, out)
	}
}

func TestErrorsArePrintedOnceWithExitCode1(t *testing.T) {
	code, out, errOut := runArgs(t, "version", "-o", "xml")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if out != "" {
		t.Errorf("stdout = %q, want nothing", out)
	}
	if errOut != "error: --output must be one of '' (or table), json, yaml, jsonpath=..., jsonpath-file=..., go-template=..., go-template-file=...; not \"xml\"\n" {
		t.Errorf("stderr = %q", errOut)
	}
	code, _, errOut = runArgs(t, "no-such-command")
	if code != 1 || !strings.HasPrefix(errOut, "error: unknown command \"no-such-command\"") || strings.Count(errOut, "error:") != 1 {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		code, out, _ := runArgs(t, "completion", shell)
		if code != 0 || len(out) < 100 {
			t.Errorf("completion %s: exit %d, %d bytes", shell, code, len(out))
		}
	}
	// The protocol kubectl_complete-apf relies on: "kubectl apf __complete ARGS".
	code, out, _ := runArgs(t, "__complete", "ver")
	if code != 0 || !strings.Contains(out, "version") {
		t.Errorf("__complete ver: exit %d, %q", code, out)
	}
}

func TestSanitizeLine(t *testing.T) {
	var b bytes.Buffer
	printError(&b, errString("bad \x1b[31mred\x1b[0m\nline\tx"))
	if got, want := b.String(), "error: bad ?[31mred?[0m?line x\n"; got != want {
		t.Errorf("printError = %q, want %q", got, want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
