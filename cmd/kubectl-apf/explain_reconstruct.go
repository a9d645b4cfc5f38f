package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/kubectl-apf/kubectl-apf/pkg/explain/fromlog"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// logConfig is what explain reconstructs logs with: the loaded
// configuration, --server-request-timeout, and the requests read so far on
// errOut when it is a terminal (done clears that line).
func logConfig(st *state.State, requestTimeout time.Duration, errOut io.Writer) (c fromlog.Config, done func()) {
	c, done = fromlog.Config{State: st, RequestTimeout: requestTimeout, Logs: input.Logs{}}, func() {}
	if f, ok := errOut.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		c.Progress = func(stage string, n int64) { fmt.Fprintf(errOut, "\r%s: %d requests read", stage, n) }
		done = func() { fmt.Fprint(errOut, "\r\033[K") }
	}
	return c, done
}
