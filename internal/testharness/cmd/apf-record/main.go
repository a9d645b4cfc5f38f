// Command apf-record records an overload of the local control plane for the
// simulate fixtures (see package internal/testharness/recording):
//
//	apf-record -scenario NAME [-seed N] [-whatif] [-all-whatifs] [-phase-offset D] -out DIR
//
// "make record-simulate" records every scenario into
// testdata/simulate/recordings.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
)

func main() {
	// a scenario with client processes runs them as this program again
	loadgen.RunChildIfAsked()
	name := flag.String("scenario", "", "scenario to record: quiet, starved, borrowing, lists, borrowing-three, timeouts, crowded, crowded-30, crowded-60, crowded-95, or any other of internal/testharness/recording/scenarios.go (noisy-pages-heavy among them)")
	seed := flag.Uint64("seed", 1, "seed of the load plan")
	out := flag.String("out", "", "directory to write the recording to")
	whatIf := flag.Bool("whatif", true, "also re-run the same plan on the scenario's changed configuration")
	all := flag.Bool("all-whatifs", false, "with -whatif, re-run every further what-if of the scenario as well (its MoreWhatIfs, each its re-runs)")
	phase := flag.Duration("phase-offset", 0, "start every run this much later than 20 ms after a borrowing adjustment of the server (the phase a replay assumes); to check how much the phase matters")
	flag.Parse()
	sc, ok := recording.ByName(*name)
	if !ok || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: apf-record -scenario NAME [-seed N] [-whatif] [-all-whatifs] [-phase-offset D] -out DIR (NAME: a scenario of internal/testharness/recording/scenarios.go)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := recording.Record(ctx, sc, *seed, *out, *whatIf, *all, *phase, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "apf-record: %v\n", err)
		os.Exit(1)
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	fmt.Println(string(b))
}
