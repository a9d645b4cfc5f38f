// Package metrics reads the API Priority and Fairness part of a
// kube-apiserver /metrics body and computes what operators look at: rates
// between two scrapes, histogram quantiles and seat utilisation, across the
// metric renames of Kubernetes 1.20 to today.
//
// A large cluster's /metrics body is tens of megabytes, almost all of it
// unrelated to APF, so FilterAPF skips foreign families line by line, looking
// only at each line's metric name, and only the kept lines are parsed:
// in the form kube-apiserver writes them by a parser of this package's own
// (ParseText), any other form by github.com/prometheus/common/expfmt.
package metrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// Names of the families outside the apiserver_flowcontrol_ subsystem whose
// 429 samples are kept (k8s.io/apiserver pkg/endpoints/metrics/metrics.go:
// RecordDroppedRequest and RecordRequestTermination).
const (
	FamilyRequestTotal      = "apiserver_request_total"
	FamilyTerminationsTotal = "apiserver_request_terminations_total"
	// FamilyDroppedRequests is the 1.20-era counter of APF and max-in-flight
	// rejections, removed in later releases; every sample of it is a 429.
	FamilyDroppedRequests = "apiserver_dropped_requests_total"
	// FlowcontrolPrefix starts the name of every APF family
	// (k8s.io/apiserver pkg/util/flowcontrol/metrics/metrics.go).
	FlowcontrolPrefix = "apiserver_flowcontrol_"
	// FamilyResourceObjects, FamilyStorageObjects and FamilyResourceSizeBytes
	// are the object counts and total sizes per resource that upstream's LIST
	// work estimator reads (k8s.io/apiserver pkg/storage/etcd3/metrics;
	// apiserver_storage_objects is the older, deprecated name of the count).
	FamilyResourceObjects   = "apiserver_resource_objects"
	FamilyStorageObjects    = "apiserver_storage_objects"
	FamilyResourceSizeBytes = "apiserver_resource_size_estimate_bytes"
)

// Names of the Go runtime families kept for simulate's model of a server
// short of CPU (runtime/metrics, which every Kubernetes component exports:
// k8s.io/component-base metrics/legacyregistry registers the Go collector
// with every runtime metric): the garbage collections, the CPU time of the
// collector's mark workers, and GOMAXPROCS.
const (
	FamilyGCCycles        = "go_gc_cycles_total_gc_cycles_total"
	FamilyGCMarkAssistCPU = "go_cpu_classes_gc_mark_assist_cpu_seconds_total"
	FamilyGCMarkDedicated = "go_cpu_classes_gc_mark_dedicated_cpu_seconds_total"
	FamilyGCMarkIdleCPU   = "go_cpu_classes_gc_mark_idle_cpu_seconds_total"
	FamilyGOMAXPROCS      = "go_sched_gomaxprocs_threads"
	// FamilyProcessCPU is the CPU time the server's process used (the
	// process collector's, from /proc); FamilySchedLatencies the
	// histogram of the time goroutines waited runnable for a P: the
	// shared-CPU model's evidence of how much CPU the server had.
	FamilyProcessCPU     = "process_cpu_seconds_total"
	FamilySchedLatencies = "go_sched_latencies_seconds"
)

// isRuntimeFamily reports whether name is one of the Go runtime families
// kept (each a single sample but the scheduler latencies' histogram).
func isRuntimeFamily(name []byte) bool {
	switch string(name) {
	case FamilyGCCycles, FamilyGCMarkAssistCPU, FamilyGCMarkDedicated, FamilyGCMarkIdleCPU, FamilyGOMAXPROCS, FamilyProcessCPU, FamilySchedLatencies:
		return true
	}
	return false
}

// isRuntimeSample reports whether a sample's metric name belongs to a
// runtime family kept: the family itself, or a series of the scheduler
// latencies' histogram.
func isRuntimeSample(name []byte) bool {
	if isRuntimeFamily(name) {
		return true
	}
	if h, ok := bytes.CutPrefix(name, []byte(FamilySchedLatencies)); ok {
		switch string(h) {
		case "_bucket", "_sum", "_count":
			return true
		}
	}
	return false
}

var (
	prefixFlowcontrol = []byte(FlowcontrolPrefix)
	prefixApiserver   = []byte("apiserver_")
	prefixGo          = []byte("go_")
	prefixProcessCPU  = []byte(FamilyProcessCPU)
	code429           = []byte(`code="429"`)
)

// keepFamily reports whether a family (by its HELP/TYPE name) is kept.
func keepFamily(name []byte) bool {
	return bytes.HasPrefix(name, prefixFlowcontrol) ||
		string(name) == FamilyRequestTotal || string(name) == FamilyTerminationsTotal || string(name) == FamilyDroppedRequests ||
		isObjectCountFamily(name) || isRuntimeFamily(name)
}

// isObjectCountFamily reports whether name is one of the families the LIST
// work estimator's inputs are read from: every sample of them is kept.
func isObjectCountFamily(name []byte) bool {
	switch string(name) {
	case FamilyResourceObjects, FamilyStorageObjects, FamilyResourceSizeBytes:
		return true
	}
	return false
}

// keepSample reports whether a sample line is kept, given its metric name.
func keepSample(name, line []byte) bool {
	if bytes.HasPrefix(name, prefixFlowcontrol) || string(name) == FamilyDroppedRequests || isObjectCountFamily(name) || isRuntimeSample(name) {
		return true
	}
	if string(name) == FamilyRequestTotal || string(name) == FamilyTerminationsTotal {
		return bytes.Contains(line, code429)
	}
	return false
}

// readBuffer is the buffer FilterAPF reads a body through.
const readBuffer = 256 * 1024

// maxLine bounds one line of a /metrics body; anything longer is garbage.
const maxLine = 1 << 20

// ErrNotMetrics is wrapped by the error FilterAPF returns for a body that is
// not in the Prometheus text format.
var ErrNotMetrics = errors.New("not the Prometheus text format")

// FilterAPF copies the lines of the APF families from r: every
// apiserver_flowcontrol_* family, the object counts and sizes per resource
// that size LISTs in seats, the few Go runtime counters of the garbage
// collector (GCActivity), the process's CPU and the scheduler's latencies
// (CPUUse), and the code="429" samples of
// apiserver_request_total and apiserver_request_terminations_total (with
// their HELP and TYPE lines). Other lines are skipped after looking at their
// first bytes only, so the memory used is bounded by what is kept.
//
// A line that cannot start a comment or a sample is an error quoting it;
// so is the quoted-name syntax of UTF-8 metric names (a line starting with
// "{"), which kube-apiserver does not emit.
func FilterAPF(r io.Reader) ([]byte, error) {
	size := readBuffer
	var out bytes.Buffer
	if l, ok := r.(interface{ Len() int }); ok && l.Len() < readBuffer {
		// A body in memory, smaller than the buffer (a bundle's filtered
		// scrape, a refresh's): a buffer of its size, and room for all
		// of it in out, rather than 256 KiB zeroed for nothing.
		size = l.Len() + 1
		out.Grow(l.Len() + 1)
	}
	br := bufio.NewReaderSize(r, size)
	lineNo := 0
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A very long line: keep reading it, deciding on its start.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxLine {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			if len(long) > maxLine {
				return nil, fmt.Errorf("line %d is longer than %d bytes: %w", lineNo+1, maxLine, ErrNotMetrics)
			}
			line = long
		}
		if len(line) > 0 {
			lineNo++
			if ferr := filterLine(&out, line, lineNo); ferr != nil {
				return nil, ferr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading metrics: %w", err)
		}
	}
	// expfmt wants the last line terminated.
	if out.Len() > 0 && out.Bytes()[out.Len()-1] != '\n' {
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

func filterLine(out *bytes.Buffer, line []byte, lineNo int) error {
	trimmed := bytes.TrimLeft(line, " \t")
	if len(bytes.TrimSpace(trimmed)) == 0 {
		return nil
	}
	c := trimmed[0]
	if c == '#' {
		rest := bytes.TrimLeft(trimmed[1:], " \t")
		var kw []byte
		switch {
		case bytes.HasPrefix(rest, []byte("HELP")):
			kw = rest[4:]
		case bytes.HasPrefix(rest, []byte("TYPE")):
			kw = rest[4:]
		default:
			return nil // a plain comment
		}
		kw = bytes.TrimLeft(kw, " \t")
		if !keptPrefix(kw) {
			return nil
		}
		end := bytes.IndexAny(kw, " \t\r\n")
		if end < 0 {
			end = len(kw)
		}
		if keepFamily(kw[:end]) {
			out.Write(trimmed)
		}
		return nil
	}
	if !isNameStart(c) {
		return fmt.Errorf("metrics line %d: %s: %w", lineNo, quote(line), ErrNotMetrics)
	}
	// Most lines belong to foreign families: decide on the prefix first.
	if !keptPrefix(trimmed) {
		return nil
	}
	end := bytes.IndexAny(trimmed, "{ \t")
	if end < 0 {
		end = len(trimmed)
	}
	if keepSample(trimmed[:end], trimmed) {
		out.Write(trimmed)
	}
	return nil
}

// keptPrefix reports whether a name may be kept, from its first bytes.
func keptPrefix(name []byte) bool {
	return bytes.HasPrefix(name, prefixApiserver) || bytes.HasPrefix(name, prefixGo) || bytes.HasPrefix(name, prefixProcessCPU)
}

func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':'
}

// quote quotes a line for an error message, truncated to a readable length.
func quote(line []byte) string {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) > 120 {
		cut := 120
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		return strconv.Quote(string(line[:cut])) + "..."
	}
	return strconv.Quote(string(line))
}
