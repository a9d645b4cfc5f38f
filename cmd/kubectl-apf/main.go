// Command kubectl-apf is a kubectl plugin that explains Kubernetes API Priority
// and Fairness: which FlowSchema and priority level a request gets and why, why
// it waited or got HTTP 429, and what the queues look like now.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
)

func main() {
	os.Exit(run(os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}

// run executes the plugin with args and returns the process exit code. Errors are
// printed once, as kubectl prints them, and never as a stack trace.
func run(args []string, streams genericiooptions.IOStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cmd := NewRootCommand(streams)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		printError(streams.ErrOut, err)
		var exit *exitCodeError
		if errors.As(err, &exit) {
			return exit.code
		}
		return 1
	}
	return 0
}

func printError(w io.Writer, err error) {
	var exit *exitCodeError
	if errors.As(err, &exit) && exit.silent {
		return
	}
	fmt.Fprintf(w, "error: %s\n", sanitize.Line(err.Error()))
}

// exitCodeError carries a specific exit status (for example lint findings) out of
// a command. A silent one has already reported itself.
type exitCodeError struct {
	code   int
	silent bool
	err    error
}

func (e *exitCodeError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitCodeError) Unwrap() error { return e.err }
