package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/internal/sanitize"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
	"github.com/kubectl-apf/kubectl-apf/pkg/tune"
	tunerender "github.com/kubectl-apf/kubectl-apf/pkg/tune/render"
)

const tuneLong = `Search the configuration changes that would have prevented a recorded incident.

tune reads what simulate reads (the configuration of the cluster, a bundle,
--defaults or -f, which here is the configuration the workload ran on; the
workload's files, wrapped exports, instances or --victorialogs; the metrics
the calibration reads), calibrates the replay once, and writes candidates
from the documented remedies and their pairs:

  - more nominal shares for the starved level, taken from the idlest levels;
  - a higher borrowingLimitPercent for it, a higher lendablePercent for others;
  - a new FlowSchema that routes a client that held the starved level's seats
    to a level of its own (a new PriorityLevelConfiguration) or to an idle
    one: its subjects, verbs, resources and namespaces as the log shows them,
    just ahead of the FlowSchema that matched it;
  - a FlowSchema moved to another level;
  - the queues, hand size and queue length of the starved level.

Every candidate passes the apiserver's validation and adds no lint error or
warning; the mandatory objects are never changed, --keep objects neither, and
a suggested object is changed with apf.kubernetes.io/autoupdate-spec: "false".
Each is replayed with the calibrated replay (in parallel; candidates whose
best possible rank cannot enter the first shown are not replayed), and ranked:
the goal met, the 429s and p99 wait added to the other clients, the seats
moved, the objects changed. A candidate that leaves the calibrated regime
(simulate's warnings) or touches a level the replay reproduces poorly is
unverified and never ranks above a verified one. A candidate that buys
nothing ranks last: it changes nothing the ranking reads, or another does as
well changing less.

The goal, by default: the clients the incident answered 429 get none, and no
other client gets more 429s or a longer p99 wait than the replay of the
recorded configuration gives it. --protect names the clients instead (a user,
service account, group, FlowSchema or level), --max-429 and --max-wait bound
them, and --ignore names other clients the goal does not judge (the noisy
client a remedy may queue longer). When no candidate meets the goal, tune says so and why (on a server
short of CPU, more seats buy nothing). Each of the candidates shown that meets
the goal is replayed again on a server 10% slower (two runs of one server
differ about so), and says whether it meets the goal there too; when the
first meets it at the recorded speed alone, the verdict names the first that
also meets it there.

tune only reads: -o yaml prints the objects of a candidate, for
kubectl diff -f - and kubectl apply -f - (server-side apply too). docs/tune.md
describes the search and the JSON of -o json.`

const tuneExample = `  # Which change would have kept the 429s of this incident off the clients that got them?
  kubectl apf tune --from bundle.tar.gz -w kube-apiserver.log -w audit.log

  # Protect one controller; let nothing touch the workload-high level
  kubectl apf tune -w kube-apiserver.log -w audit.log --protect serviceaccount=kube-system/my-controller --keep prioritylevelconfiguration/workload-high

  # Why does candidate 12 rank where it does?
  kubectl apf tune --from bundle.tar.gz -w kube-apiserver.log -w audit.log --explain 12

  # Review and apply the best candidate
  kubectl apf tune --from bundle.tar.gz -w kube-apiserver.log -w audit.log -o yaml > tune.yaml
  kubectl diff -f tune.yaml && kubectl apply -f tune.yaml`

// TuneOptions holds the flags of "kubectl apf tune": simulate's inputs and
// the goal.
type TuneOptions struct {
	// sim are simulate's input flags, shared.
	sim *SimulateOptions

	Protect       []string
	Ignore        []string
	Keep          []string
	Max429        int64
	MaxWait       time.Duration
	Budget        float64
	MaxCandidates int
	Top           int
	Explain       int
	Candidate     int
	Progress      string

	opts tune.Options
	*output.Flags
	genericiooptions.IOStreams
}

// NewTuneCommand builds "kubectl apf tune".
func NewTuneCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &TuneOptions{sim: NewSimulateOptions(configFlags, streams), Budget: tune.DefaultBudget, MaxCandidates: tune.DefaultMaxCandidates, Top: tune.DefaultShow,
		Flags: output.NewFlags(false, "table", "json", "yaml"), IOStreams: streams, Progress: "auto"}
	cmd := &cobra.Command{
		Use:     "tune --workload FILE...",
		Short:   "Search the configuration changes that would have prevented a recorded incident, ranked by the calibrated replay",
		Long:    tuneLong + workloadInstancesHelp,
		Example: tuneExample,
		Args:    noArgs("give the recorded traffic with -w FILE"),
		RunE:    runOptions(o),
	}
	o.sim.addInputFlags(cmd, configFlags)
	f := cmd.Flags()
	f.StringArrayVar(&o.Protect, "protect", nil, "Clients the goal is for, KIND=NAME (repeatable): user=NAME, serviceaccount=NAMESPACE/NAME, group=NAME, flowschema=NAME, level=NAME; default: the clients answered 429 in the incident.")
	f.StringArrayVar(&o.Ignore, "ignore", nil, "Other clients whose 429s and p99 waits the goal does not judge, KIND=NAME as for --protect (repeatable): the noisy client a remedy for its neighbours may queue longer.")
	f.Int64Var(&o.Max429, "max-429", 0, "The most 429s a protected client may get.")
	f.DurationVar(&o.MaxWait, "max-wait", 0, "The longest p99 queue wait a protected client may get (0: no bound).")
	f.StringArrayVar(&o.Keep, "keep", nil, "An object no candidate may change: flowschema/NAME, prioritylevelconfiguration/NAME, or NAME for both (repeatable).")
	f.Float64Var(&o.Budget, "budget", o.Budget, "The largest share of the total nominal shares a candidate may move between levels (0 < budget ≤ 1).")
	f.IntVar(&o.MaxCandidates, "max-candidates", o.MaxCandidates, "The most candidates written and replayed.")
	f.IntVar(&o.Top, "top", o.Top, "The best candidates shown in the table.")
	f.IntVar(&o.Explain, "explain", 0, "Explain why candidate N (its id) ranks where it does, level by level and client by client.")
	f.IntVar(&o.Candidate, "candidate", 0, "With -o yaml: print candidate N's objects (its id) instead of the first-ranked one's (--explain N -o yaml does the same).")
	f.StringVar(&o.Progress, "progress", o.Progress, "A progress bar on stderr while searching: auto (when stderr is a terminal), always or never.")
	o.Flags.AddFlags(f)
	return cmd
}

// SetStdin makes --from - and --workload - read the command's input.
func (o *TuneOptions) SetStdin(r io.Reader) { o.In, o.sim.In = r, r }

// Complete parses the goal.
func (o *TuneOptions) Complete(cmd *cobra.Command, args []string) error {
	if err := o.sim.Complete(cmd, args); err != nil {
		return err
	}
	g := tune.Goal{Max429: o.Max429, MaxWait: o.MaxWait}
	for _, p := range o.Protect {
		t, err := tune.ParseTarget(p)
		if err != nil {
			return err
		}
		g.Protect = append(g.Protect, t)
	}
	for _, p := range o.Ignore {
		t, err := tune.ParseFlagTarget("--ignore", p)
		if err != nil {
			return err
		}
		g.Ignore = append(g.Ignore, t)
	}
	o.opts = tune.Options{Goal: g, Budget: o.Budget, MaxCandidates: o.MaxCandidates, Show: max(o.Top, 1)}
	for _, k := range o.Keep {
		ks, err := tune.ParseObjectKey(k)
		if err != nil {
			return err
		}
		o.opts.Keep = append(o.opts.Keep, ks...)
	}
	return nil
}

// Validate checks the flags; it is pure.
func (o *TuneOptions) Validate() error {
	if err := o.sim.Validate(); err != nil {
		return err
	}
	switch {
	case o.Max429 < 0:
		return fmt.Errorf("--max-429 must be 0 or more, not %d", o.Max429)
	case o.MaxWait < 0:
		return fmt.Errorf("--max-wait must be 0 or more, not %v", o.MaxWait)
	case !(o.Budget > 0 && o.Budget <= 1):
		return fmt.Errorf("--budget is a share of the total nominal shares, above 0 and at most 1, not %g", o.Budget)
	case o.MaxCandidates < 1:
		return fmt.Errorf("--max-candidates must be 1 or more, not %d", o.MaxCandidates)
	case o.Top < 0:
		return fmt.Errorf("--top must be 0 or more, not %d", o.Top)
	case o.Explain < 0 || o.Candidate < 0:
		return errors.New("--explain and --candidate take a candidate's id, 1 or more")
	case o.Candidate > 0 && o.Output != "yaml":
		return errors.New("--candidate says which candidate -o yaml prints: give it with -o yaml")
	case o.Candidate > 0 && o.Explain > 0 && o.Candidate != o.Explain:
		return fmt.Errorf("--explain %d and --candidate %d name two candidates: -o yaml prints one", o.Explain, o.Candidate)
	case o.Progress != "auto" && o.Progress != "always" && o.Progress != "never":
		return fmt.Errorf("--progress is auto, always or never, not %q", o.Progress)
	}
	return o.Flags.Validate()
}

// Run prepares the workload once, searches, and prints.
func (o *TuneOptions) Run(ctx context.Context) error {
	st, cfg, err := o.sim.load(ctx)
	if err != nil {
		return err
	}
	p, err := simulate.Prepare(ctx, st, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	if n := o.sim.VLogs.note(); n != "" {
		fmt.Fprintln(o.ErrOut, sanitize.Line(n))
	}
	for _, n := range append(st.Notes, p.Baseline().Notes...) {
		fmt.Fprintln(o.ErrOut, sanitize.Line(n))
	}
	bar := o.progressBar()
	o.opts.Progress = bar.update
	rep, err := tune.Search(ctx, p, tune.Input{FlowSchemas: st.FlowSchemas, PriorityLevels: st.PriorityLevels, Release: st.Release, ServerConcurrency: st.ServerConcurrency}, o.opts)
	bar.done()
	if err != nil {
		return err
	}
	pick := func(id int) (*tune.Candidate, error) {
		for _, c := range rep.Candidates {
			if c.ID == id {
				return c, nil
			}
		}
		return nil, fmt.Errorf("no candidate %d was replayed: the ids run from 1 to %d, and %d were pruned (-o json lists those replayed)", id, rep.Written, rep.Pruned)
	}
	if o.Output == "yaml" {
		if len(rep.Candidates) == 0 {
			return errors.New("no candidate to print: " + rep.Verdict)
		}
		// --explain N -o yaml prints candidate N's objects, as
		// --candidate N does (it printed the first-ranked one's)
		c, id := rep.Candidates[0], max(o.Candidate, o.Explain)
		if id > 0 {
			if c, err = pick(id); err != nil {
				return err
			}
		} else if !c.GoalMet || !c.Verified {
			fmt.Fprintln(o.ErrOut, "warning: "+sanitize.Line(rep.Verdict)+"; printing the first-ranked candidate anyway")
		}
		return tunerender.YAML(o.Out, c)
	}
	if o.Explain > 0 {
		c, err := pick(o.Explain)
		if err != nil {
			return err
		}
		return printObject(o.Out, o.Flags, c, func(w io.Writer) error { return tunerender.Explain(w, rep, c) })
	}
	return printObject(o.Out, o.Flags, rep, func(w io.Writer) error { return tunerender.Write(w, rep, o.Top) })
}

// progress draws the search's progress on stderr, when it is a terminal
// (or --progress always).
type progress struct {
	w    io.Writer
	on   bool
	mu   sync.Mutex
	last int
}

func (o *TuneOptions) progressBar() *progress {
	p := &progress{w: o.ErrOut}
	switch o.Progress {
	case "always":
		p.on = true
	case "auto":
		if f, ok := o.ErrOut.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			p.on = true
		}
	}
	return p
}

func (p *progress) update(done, total int) {
	if !p.on || total == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	const width = 30
	n := done * width / total
	if done == p.last && done != total {
		return
	}
	p.last = done
	fmt.Fprintf(p.w, "\rreplaying candidates [%s%s] %d/%d", strings.Repeat("=", n), strings.Repeat(" ", width-n), done, total)
}

func (p *progress) done() {
	if p.on && p.last > 0 {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
