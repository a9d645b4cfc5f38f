package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
	"k8s.io/utils/clock"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// bundleWatchHelp is added to dump bundle's help.
const bundleWatchHelp = `

--watch DURATION records the next incident: the bundle's capture (objects,
the three debug dumps and a /metrics scrape of every instance) is taken at
the start, then every instance's /metrics is scraped every --interval, and
at the end (DURATION later, or at Ctrl-C) the capture is taken again; a
progress line on stderr counts the scrapes, the time and the bundle's size.
The bundle holds every scrape (metrics-0.txt, metrics-1.txt, ... per
instance), the objects and dumps of the end, and the dumps of the start as
start-dump_*.txt. Every command that reads a bundle reads it (the latest
two scrapes give the rates), and simulate reads the CPU evidence of the two
scrapes that bracket the window it replays, so the bundle is evidence for
any window inside it: replay the minutes of the incident with simulate's
window of its logs.

--keep DURATION makes it a flight recorder: only each instance's scrapes
of the last DURATION stay on disk, the older removed as new ones arrive, so
that a watch started ahead of any incident (--watch 720h --keep 2h) runs
for days in the same disk, and Ctrl-C after the incident writes the bundle
of the hours before it (the start's dumps are kept, the end's taken then).

Each scrape is written to disk as it arrives, and the watch holds one at a
time, so a watch of any length runs in the same memory (a day at 5s is
17,280 scrapes per instance, about 95 kB each on disk in a directory --to,
8 kB gzipped when recording a FILE.tar.gz). The bundle is whole at every
scrape: a directory --to is written in place, and a FILE.tar.gz is
recorded into FILE.tar.gz.partial/ (its scrapes gzipped, as
metrics-N.txt.gz), a bundle directory the tarball is written from at the
end and that is then removed. Ctrl-C or
SIGTERM ends the watch with the end's capture; if the watch is killed,
--from reads the directory it left, with every scrape taken before. A
command reading the bundle back reads the scrapes it uses, not the
thousands a long watch holds: the latest two of each instance (the rates
of top, dump and explain), and simulate's, those around the window it
replays; a tarball's are read again from it when its scrapes pass 64 MB.
dump bundle --from a watch's bundle (--redact it to share it) writes it
again a scrape at a time, in the same memory.`

// watchProgress is the progress line of dump bundle --watch: on a
// terminal it is rewritten in place at every scrape, otherwise a line is
// printed at each of the first ten scrapes, then about once a minute.
type watchProgress struct {
	w        io.Writer
	terminal bool
	total    time.Duration
	// keep is --keep: the scrapes counted are those of the last keep
	keep    time.Duration
	every   int
	printed bool
}

func newWatchProgress(w io.Writer, total, interval, keep time.Duration) *watchProgress {
	p := &watchProgress{w: w, total: total, keep: keep, every: max(1, int(time.Minute/max(interval, time.Millisecond)))}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.terminal, p.every = true, 1
	}
	return p
}

// update shows the bundle's scrapes (per instance, the start's included)
// after the n-th of the watch.
func (p *watchProgress) update(n, scrapes, instances int, elapsed time.Duration, size int64) {
	if n > 10 && n%p.every != 0 {
		return
	}
	kept := ""
	if p.keep > 0 {
		kept = fmt.Sprintf(" (those of the last %v)", p.keep)
	}
	line := fmt.Sprintf("watching %d apiserver %s: %d %s%s, %v of %v, %s (Ctrl-C ends it and writes the bundle)",
		instances, textfmt.Plural(instances, "instance", "instances"), scrapes, textfmt.Plural(scrapes, "scrape", "scrapes"), kept, elapsed.Round(time.Second), p.total, fmtBytes(size))
	if p.terminal {
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		p.printed = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// done ends the line in place on a terminal.
func (p *watchProgress) done() {
	if p.terminal && p.printed {
		fmt.Fprintln(p.w)
	}
}

// fmtBytes renders a size as "512 B", "1.2 MB".
func fmtBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
}

// runWatch records the bundle of --watch (dump.Record), printing its
// notes, warnings and progress line on stderr.
func (o *BundleOptions) runWatch(ctx context.Context) error {
	clk, ok := o.ClockOrReal().(clock.WithTicker)
	if !ok {
		return fmt.Errorf("--watch needs a clock with a ticker")
	}
	ro := dump.RecordOptions{To: o.To, Duration: o.Watch, Interval: o.Interval, Keep: o.Keep, Clock: clk, Manifest: o.manifest(time.Time{})}
	if o.Redact {
		key, err := o.redactKey()
		if err != nil {
			return err
		}
		ro.Redactor = dump.NewRedactor(key)
	}
	progress := newWatchProgress(o.ErrOut, o.Watch, o.Interval, o.Keep)
	rec, err := dump.Record(ctx, o.Source, ro, dump.RecordEvents{
		Notes: func(notes []string) { printNotes(o.ErrOut, notes) },
		Spooling: func(dir string) {
			fmt.Fprintf(o.ErrOut, "recording into %s (a bundle at every scrape, which --from reads if the watch is killed; %s is written from it at the end)\n", sanitize.Line(dir), sanitize.Line(o.To))
		},
		Missed: func(f dump.InstanceError) {
			fmt.Fprintf(o.ErrOut, "\nwarning: apiserver %s missed a scrape: %s\n", sanitize.Line(f.Instance), sanitize.Line(f.Error()))
		},
		Failed:   func(err error) { fmt.Fprintf(o.ErrOut, "\nwarning: a scrape failed: %s\n", sanitize.Line(err.Error())) },
		Progress: progress.update,
		Done:     progress.done,
	})
	if err != nil {
		return err
	}
	if rec.Leftover != "" {
		fmt.Fprintf(o.ErrOut, "warning: %s is written, but %s could not be removed: %s\n", sanitize.Line(o.To), sanitize.Line(rec.Leftover), sanitize.Line(rec.LeftoverErr.Error()))
	}
	for _, f := range rec.EndFailures {
		fmt.Fprintf(o.ErrOut, "warning: apiserver %s is not in the end's capture: %s\n", sanitize.Line(f.Instance), sanitize.Line(f.Error()))
	}
	for _, inst := range rec.Unknown {
		fmt.Fprintf(o.ErrOut, "note: apiserver %s appeared during the watch and is not in the bundle\n", sanitize.Line(inst))
	}
	fmt.Fprintf(o.ErrOut, "wrote %s: %s, %s each\n", sanitize.Line(o.To), textfmt.Count(rec.Instances, "apiserver instance", "apiserver instances"), textfmt.Count(rec.Scrapes, "/metrics scrape", "/metrics scrapes"))
	return nil
}
