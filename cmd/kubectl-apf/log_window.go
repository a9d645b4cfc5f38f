package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
)

// logWindowHelp says what --since/--until do to a command's log files.
const logWindowHelp = `

--since and --until cut a window out of the log files: --until is RFC 3339
(2026-11-23T03:10:00Z), or relative to the log's own last request ("-2h",
"2h ago", "now" for the last request itself), never to the wall clock;
--since is the window's length before --until (10m, 2h, 1d), or its start
as a time (RFC 3339, "-2h", "2h ago"). A log of a day replays the hour of
its incident with --since 1h --until 2026-11-23T04:00:00Z, or the last ten
minutes of itself with --since 10m.`

// logWindowFlags are --since and --until over a command's log files
// (logs.Window).
type logWindowFlags struct {
	logs.Window
}

func (l *logWindowFlags) addFlags(f *pflag.FlagSet, what string) {
	f.StringVar(&l.Since, "since", "", "With "+what+": start of the window of the log read, as its length before --until (10m, 2h, 1d) or a time (RFC 3339, -2h or \"2h ago\" before the log's last request).")
	f.StringVar(&l.Until, "until", "", "With "+what+": end of the window of the log read (RFC 3339, -2h or \"2h ago\" before the log's last request; default its last request).")
}

// absoluteWindow is a resolved window as flags again, RFC 3339 (a zero
// bound stays open).
func absoluteWindow(from, to time.Time) logs.Window {
	var w logs.Window
	if !from.IsZero() {
		w.Since = from.UTC().Format(time.RFC3339Nano)
	}
	if !to.IsZero() {
		w.Until = to.UTC().Format(time.RFC3339Nano)
	}
	return w
}
