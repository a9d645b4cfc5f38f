package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

const whoisLong = `Name the FlowSchema and priority level behind the UIDs of the
X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID response
headers, which carry UIDs, not names.

Give UIDs as arguments, or paste header lines: arguments are read as text, and
"-" reads standard input, so the output of kubectl -v=8 can be piped in.`

const whoisExample = `  # Resolve two UIDs
  kubectl apf whois 4d1b6a7c-0b1e-4c55-9d3a-0f8f2a9c1e01 9e8d7c6b-5a49-4837-a261-5f4e3d2c1b0a

  # Which FlowSchema and priority level did this request get?
  kubectl get pods -v=8 2>&1 | grep -i x-kubernetes-pf | kubectl apf whois -

  # Against a bundle
  kubectl apf whois --from apf.tar.gz 4d1b6a7c-0b1e-4c55-9d3a-0f8f2a9c1e01`

// WhoisOptions holds the flags of "kubectl apf whois".
type WhoisOptions struct {
	// Flags are -o and --no-headers.
	*output.Flags
	*load.Options

	refs []dump.UIDRef
	genericiooptions.IOStreams
}

// NewWhoisOptions returns the defaults of "kubectl apf whois".
func NewWhoisOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *WhoisOptions {
	return &WhoisOptions{Flags: output.NewFlags(true, "table", "json", "yaml"), Options: newOptions(configFlags, load.Instances), IOStreams: streams}
}

// NewWhoisCommand builds "kubectl apf whois".
func NewWhoisCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewWhoisOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:     "whois UID|HEADER-LINE... | -",
		Short:   "Name the FlowSchema and priority level of X-Kubernetes-PF-*-UID values",
		Long:    whoisLong,
		Example: whoisExample,
		Args:    cobra.MinimumNArgs(1),
		RunE:    runOptions(o),
	}
	o.Flags.AddFlags(cmd.Flags())
	o.Options.AddFlags(cmd.Flags())
	return cmd
}

// Complete reads the UIDs from the arguments (or standard input for "-").
func (o *WhoisOptions) Complete(_ *cobra.Command, args []string) error {
	var err error
	var text []string
	for _, a := range args {
		if a == "-" {
			if o.From == dump.StdinPath {
				return fmt.Errorf("whois - and --from - both read standard input: give the bundle or dump as a file")
			}
			b, err := io.ReadAll(io.LimitReader(o.In, 16<<20))
			if err != nil {
				return fmt.Errorf("reading standard input: %w", err)
			}
			text = append(text, string(b))
			continue
		}
		text = append(text, a)
	}
	if o.refs, err = dump.ParseUIDRefs(strings.Join(text, "\n")); err != nil {
		if errors.Is(err, dump.ErrNoPFHeader) {
			return noPFHeaderError(strings.Join(text, "\n"))
		}
		return err
	}
	if len(o.refs) == 0 {
		return fmt.Errorf("no UID found in the input")
	}
	return o.Options.Complete()
}

// Validate checks the flags.
func (o *WhoisOptions) Validate() error {
	if err := o.Flags.Validate(); err != nil {
		return err
	}
	return o.Options.Validate()
}

// Run lists the objects (the same on every instance: one is asked) and
// resolves the UIDs.
func (o *WhoisOptions) Run(ctx context.Context) error {
	c, err := captureOrFail(ctx, o.Source, dump.CaptureOptions{Parts: dump.PartObjects}, liveHint(o.Options))
	if err != nil {
		return err
	}
	if !c.Snapshots[0].HasObjects() {
		return fmt.Errorf("%s holds no FlowSchemas or PriorityLevelConfigurations, whose UIDs whois looks up: read the cluster, or a bundle written by \"kubectl apf dump bundle\"", o.Source.Describe())
	}
	printNotes(o.ErrOut, c.Notes)
	res := dump.Resolve(c.Snapshots[0], o.refs)
	return render.PrintWhois(o.Out, o.Flags, res)
}

// The releases the causes of a trace without PF headers turn on.
const (
	// apfOnSince: API Priority and Fairness is on by default from 1.20
	// (beta; alpha and off in 1.18 and 1.19).
	apfOnSince = 20
	// exemptHeadersSince: exempt requests' responses carry the PF headers
	// from 1.24. Before kubernetes/kubernetes#106827 (opened and merged on
	// the 1.24 branch of development in December 2021, after 1.23's
	// release branch was cut) startRequest returned for an exempt level
	// without noting its classification, so the filter set no header
	// (k8s.io/apiserver pkg/util/flowcontrol/apf_controller.go).
	exemptHeadersSince = 24
)

var (
	// the server's version, when the trace holds the body of GET /version
	traceServerVersionRE = regexp.MustCompile(`"gitVersion":\s*"v1\.(\d+)`)
	// kubectl's User-Agent, in client-go's curl line or header dump
	traceKubectlRE = regexp.MustCompile(`(?i)user-agent:\s*kubectl/v1\.(\d+)`)
	// the response headers client-go (-v=8 and up) or curl printed
	traceResponseHeadersRE = regexp.MustCompile(`(?im)response headers:|^\s*< [a-z-]+: `)
)

// noPFHeaderError says why a trace holds no PF header, the likeliest
// cause first as far as the trace tells the server's release: from the
// body of GET /version, or bounded by kubectl's User-Agent (kubectl is
// supported against a server at most one minor release newer).
func noPFHeaderError(text string) error {
	minor, exact := 0, false
	if m := traceServerVersionRE.FindStringSubmatch(text); m != nil {
		if v, err := strconv.Atoi(m[1]); err == nil && v < 1000 {
			minor, exact = v, true
		}
	} else if m := traceKubectlRE.FindStringSubmatch(text); m != nil {
		if v, err := strconv.Atoi(m[1]); err == nil && v < 1000 {
			minor = v + 1
		}
	}
	server := ""
	switch {
	case exact:
		server = fmt.Sprintf("the server is 1.%d", minor)
	case minor > 0:
		server = fmt.Sprintf("the client is kubectl 1.%d, so the server is at most 1.%d if kubectl's version skew policy is kept", minor-1, minor)
	}
	noAPF := "the server runs with API Priority and Fairness off (--enable-priority-and-fairness=false), or predates it (on by default from 1.20)"
	exempt := "the requests were exempt (a user in system:masters, as kind's and kubeadm's admin kubeconfigs are, or a health probe) and the server is older than 1.24: exempt responses carried no PF header before kubernetes/kubernetes#106827"
	longRunning := "the requests were long-running (logs, exec, attach, port-forward, proxy), which APF does not classify"
	var causes []string
	switch {
	case minor > 0 && minor < apfOnSince:
		causes = []string{server + ", older than 1.20: API Priority and Fairness was off or absent", longRunning}
	case minor > 0 && minor < exemptHeadersSince:
		causes = []string{server + ", older than 1.24, and the requests were exempt (a user in system:masters, as kind's and kubeadm's admin kubeconfigs are, or a health probe): exempt responses carried no PF header before kubernetes/kubernetes#106827", longRunning, noAPF}
	case exact:
		causes = []string{longRunning, noAPF}
	default:
		causes = []string{longRunning, exempt, noAPF}
	}
	if !traceResponseHeadersRE.MatchString(text) {
		// no response header at all, PF or other: the trace did not print them
		causes = append([]string{"the trace was taken below -v=8, which prints no response headers"}, causes...)
	}
	for i := range causes {
		causes[i] = fmt.Sprintf("(%d) %s", i+1, causes[i])
	}
	return fmt.Errorf("the input is an HTTP trace that holds %w at all; the likeliest causes first: %s", dump.ErrNoPFHeader, strings.Join(causes, "; "))
}
