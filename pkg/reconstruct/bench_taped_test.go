package reconstruct_test

import (
	"errors"
	"io"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
)

// BenchmarkReconstructTaped reconstructs the overload of
// BenchmarkReconstruct (500,000 requests) from a tape that holds it
// already, so that the figure is the reconstruction's own work (the
// calibration and the reconstruction, on the caller's goroutine), without
// the readers' parse that runs beside it on other cores. In the same run
// it reads the tape through (decode only) and reports the ratio
// reconstruct/decode.
//
//	go test ./pkg/reconstruct -run '^$' -bench BenchmarkReconstructTaped -benchtime 3x -count=1
func BenchmarkReconstructTaped(b *testing.B) {
	const n = 500_000
	httplog, audit := writeOverload(b, n)
	f := loadFixture(b, filepath.Join(recordings, "starved"))
	files, err := input.OpenFiles([]string{httplog, audit}, input.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tape := workload.NewTape()
	defer tape.Close()
	rec := tape.Record(files)
	var w workload.Request
	for {
		if err := rec.Next(&w); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			b.Fatal(err)
		}
	}
	files.Close()
	var tRec, tDec, cRec, cDec time.Duration
	for b.Loop() {
		runtime.GC()
		t0, c0 := time.Now(), cpuTime()
		rd := tape.Reader()
		k := 0
		for ; rd.Next(&w) == nil; k++ {
		}
		if k != n {
			b.Fatalf("%d requests on the tape, want %d", k, n)
		}
		t1, c1 := time.Now(), cpuTime()
		res, err := reconstruct.RunReader(tape.Reader(), reconstruct.Options{Config: f.config, ServerConcurrencyLimit: f.scl}, nil)
		if err != nil {
			b.Fatal(err)
		}
		t2, c2 := time.Now(), cpuTime()
		if res.Reconstructed != n {
			b.Fatalf("%d requests reconstructed, want %d", res.Reconstructed, n)
		}
		tDec, cDec, tRec, cRec = tDec+t1.Sub(t0), cDec+c1-c0, tRec+t2.Sub(t1), cRec+c2-c1
	}
	k := float64(b.N)
	b.ReportMetric(tRec.Seconds()/k, "s-reconstruct")
	b.ReportMetric(cRec.Seconds()/k, "cpu-reconstruct")
	b.ReportMetric(tDec.Seconds()/k, "s-decode")
	b.ReportMetric(float64(tRec)/float64(tDec), "reconstruct/decode")
	b.ReportMetric(float64(cRec)/float64(cDec), "cpu-reconstruct/decode")
}
