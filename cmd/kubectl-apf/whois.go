package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

const whoisLong = `Name the FlowSchema and priority level behind the UIDs of the
X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID response
headers, which carry UIDs, not names.

Give UIDs as arguments, or paste header lines: arguments are read as text, and
"-" reads standard input, so the output of kubectl -v=8 can be piped in.

A UID that names no object gets a row saying so, and the command then exits
1, as kubectl get does for an object that is not found.`

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
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("give X-Kubernetes-PF-*-UID values or header lines, or - to read them from standard input (kubectl get pods -v=8 2>&1 | kubectl apf whois -)")
			}
			return nil
		},
		RunE: runOptions(o),
	}
	o.Flags.AddFlags(cmd.Flags())
	o.Options.AddFlags(cmd.Flags())
	return cmd
}

// Complete reads the UIDs from the arguments (or standard input for "-").
func (o *WhoisOptions) Complete(_ *cobra.Command, args []string) error {
	var words []string
	stdin := ""
	for _, a := range args {
		if a != "-" {
			words = append(words, a)
			continue
		}
		if o.From == dump.StdinPath {
			return fmt.Errorf("whois - and --from - both read standard input: give the bundle or dump as a file")
		}
		b, err := io.ReadAll(io.LimitReader(o.In, 16<<20))
		if err != nil {
			return fmt.Errorf("reading standard input: %w", err)
		}
		stdin = string(b)
	}
	// the arguments are one line of words, standard input its own text
	for _, in := range []struct{ text, where string }{{strings.Join(words, " "), ""}, {stdin, "standard input: "}} {
		if strings.TrimSpace(in.text) == "" {
			continue
		}
		refs, err := dump.ParseUIDRefs(in.text)
		if errors.Is(err, dump.ErrNoPFHeader) {
			return explain.NoPFHeaderError(in.text)
		}
		if err != nil {
			return fmt.Errorf("%s%w", in.where, err)
		}
		o.refs = append(o.refs, refs...)
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
	if err := render.PrintWhois(o.Out, o.Flags, res); err != nil {
		return err
	}
	return unresolved(res, o.Source.Describe())
}

// unresolved is, as kubectl get's NotFound, the error after the table when
// a UID names no object: a script that pipes headers in can tell a name
// from none. An empty UID is an answer (the mandatory object the server
// imagined), not a miss.
func unresolved(res []dump.Resolution, source string) error {
	missed := 0
	for _, r := range res {
		if r.UID != "" && r.Name == "" {
			missed++
		}
	}
	if missed == 0 {
		return nil
	}
	why := "the object was deleted (or recreated with a new UID) since the request, or the UID is from another cluster"
	switch {
	case len(res) == 1:
		return fmt.Errorf("the UID names no FlowSchema or PriorityLevelConfiguration of %s: %s", source, why)
	case missed == len(res):
		return fmt.Errorf("none of the %d UIDs names a FlowSchema or PriorityLevelConfiguration of %s: %s", missed, source, why)
	}
	return fmt.Errorf("%d of the %d UIDs %s no FlowSchema or PriorityLevelConfiguration of %s: %s", missed, len(res), textfmt.Plural(missed, "names", "name"), source, why)
}
