package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// writeSyntheticWorkload writes n JSONL requests: Poisson arrivals at 2000/s
// from 150 users, 40 service accounts and 10 nodes, exponential service
// times of mean 30 ms, 1% of them 10-seat LISTs.
func writeSyntheticWorkload(tb testing.TB, n int) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "synthetic.jsonl")
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewPCG(1, 2))
	t := 0.0
	verbs := []string{"get", "list", "create"}
	for range n {
		t += rng.ExpFloat64() / 2000
		u := rng.IntN(200)
		var user, groups string
		switch {
		case u < 150:
			user, groups = fmt.Sprintf("user-%d", u), `"dev","system:authenticated"`
		case u < 190:
			user, groups = fmt.Sprintf("system:serviceaccount:ns%d:sa%d", u%10, u), fmt.Sprintf(`"system:serviceaccounts","system:serviceaccounts:ns%d","system:authenticated"`, u%10)
		default:
			user, groups = fmt.Sprintf("system:node:n%d", u), `"system:nodes","system:authenticated"`
		}
		seats := ""
		if rng.IntN(100) == 0 {
			seats = `,"initialSeats":10,"finalSeats":0`
		}
		fmt.Fprintf(w, `{"offset":%.6f,"user":%q,"groups":[%s],"verb":%q,"path":"/api/v1/namespaces/ns%d/configmaps","serviceTime":%.6f%s}`+"\n",
			t, user, groups, verbs[rng.IntN(3)], u%10, rng.ExpFloat64()*0.03, seats)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkSimulate compares, in one run, the whole command on 100,000
// requests (one configuration, and before/after a change) with only reading
// and parsing the same workload, the floor any replay pays: the difference
// is the classification and the queueing simulation.
//
//	go test ./cmd/kubectl-apf -run '^$' -bench BenchmarkSimulate -benchmem -count=1
func BenchmarkSimulate(b *testing.B) {
	const n = 100_000
	wl := writeSyntheticWorkload(b, n)
	b.Run("read-only", func(b *testing.B) {
		for b.Loop() {
			files, err := workload.OpenFiles([]string{wl}, workload.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var r workload.Request
			got := 0
			for {
				err := files.Next(&r)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				got++
			}
			files.Close()
			if got != n {
				b.Fatalf("read %d requests, want %d", got, n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/request")
	})
	for _, bm := range []struct {
		name string
		args []string
	}{
		{"simulate", nil},
		{"simulate-before-after", []string{"--set", "global-default.queueLengthLimit=10"}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			args := append([]string{"simulate", "--defaults", "--server-concurrency", "100", "--workload", wl, "-o", "json"}, bm.args...)
			for b.Loop() {
				if code := run(args, genericiooptions.NewTestIOStreamsDiscard()); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/request")
		})
	}
}
