package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	// Every client-go authentication plugin, as kubectl has them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

const rootLong = `Explain Kubernetes API Priority and Fairness (APF).

kubectl apf tells which FlowSchema and priority level a request gets and why,
why a request waited or was rejected with HTTP 429, and what the priority
levels, queues and flows of every apiserver look like now.`

// NewRootCommand builds the "kubectl apf" command tree.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true)

	cmd := &cobra.Command{
		Use:   "kubectl-apf",
		Short: "Explain Kubernetes API Priority and Fairness",
		Long:  rootLong,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl apf",
		},
		SilenceErrors: true,
		SilenceUsage:  true,
		// A bare "kubectl apf" prints help rather than failing.
		Run: func(cmd *cobra.Command, _ []string) { _ = cmd.Help() },
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)

	flags := cmd.PersistentFlags()
	configFlags.AddFlags(flags)
	addKlogVerbosity(cmd)

	cmd.AddCommand(
		NewVersionCommand(streams),
		NewLintCommand(configFlags, streams),
		NewCapacityCommand(configFlags, streams),
		NewExplainCommand(configFlags, streams),
		NewDumpCommand(configFlags, streams),
		NewTopCommand(configFlags, streams),
		NewWhoisCommand(configFlags, streams),
		NewRBACCommand(streams),
		NewSimulateCommand(configFlags, streams),
		NewTuneCommand(configFlags, streams),
		NewMonitoringCommand(configFlags, streams),
	)
	return cmd
}

// addKlogVerbosity exposes only klog's -v flag; the rest of klog's flags would
// only clutter the help of a kubectl plugin.
func addKlogVerbosity(cmd *cobra.Command) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "true")
	v := fs.Lookup("v")
	cmd.PersistentFlags().AddGoFlag(v)
	cmd.PersistentFlags().Lookup("v").Shorthand = "v"
}

// commandOptions is the shape of every command's options, as in kubectl:
// Complete turns flags and arguments into typed values, Validate checks them
// without I/O, Run does the work.
type commandOptions interface {
	Complete(cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// noArgs refuses the arguments of a command that takes none, and names the
// flag that takes what a user may have meant by them ("lint ./dir",
// "simulate audit.log"), where cobra answers "unknown command".
func noArgs(hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("%s takes no arguments, not %q", cmd.CommandPath(), strings.Join(args, " "))
		if hint != "" {
			msg += ": " + hint
		}
		return errors.New(msg)
	}
}

// runOptions is the RunE of a command whose options follow commandOptions.
func runOptions(o commandOptions) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		// --from - reads the command's standard input.
		if s, ok := o.(interface{ SetStdin(io.Reader) }); ok {
			s.SetStdin(cmd.InOrStdin())
		}
		if err := o.Complete(cmd, args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}
