package dump

import (
	"bytes"
	"encoding/json"
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// Bundle file names of the raw bodies of one snapshot.
const (
	FilePriorityLevels = "dump_priority_levels.txt"
	FileQueues         = "dump_queues.txt"
	FileRequests       = "dump_requests.txt"
	FileFlowSchemas    = "flowschemas.json"
	FilePLCs           = "prioritylevelconfigurations.json"
	FileVersion        = "version.json"
)

// MetricsFile is the bundle file name of the i-th metrics scrape.
func MetricsFile(i int) string { return fmt.Sprintf("metrics-%d.txt", i) }

// FlowcontrolGroup is the API group of FlowSchemas and priority levels.
const FlowcontrolGroup = "flowcontrol.apiserver.k8s.io"

// MetricsTimeKey is the Raw key of the time the i-th metrics scrape was read.
func MetricsTimeKey(i int) string { return fmt.Sprintf("metrics-%d.time", i) }

// MetricsUnknownKey is the Raw key (and bundle file) of what the i-th
// metrics body cannot tell, when it was joined from several inputs: a JSON
// object of the families and, for each, the priority levels it does not
// speak for (metrics.Scrape.Unknown). A scrape of one server has none.
func MetricsUnknownKey(i int) string { return fmt.Sprintf("metrics-%d.unknown.json", i) }

// ConvertList turns a FlowSchemaList or PriorityLevelConfigurationList of
// any served version into v1 JSON. The versions differ only in the
// apiVersion and, for v1beta1 and v1beta2, in the name of
// spec.limited.assuredConcurrencyShares (nominalConcurrencyShares since
// v1beta3; k8s.io/kubernetes pkg/apis/flowcontrol/v1beta2/conversion.go).
func ConvertList(body []byte) ([]byte, error) {
	var list map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("decoding the list: %w", err)
	}
	list["apiVersion"] = FlowcontrolGroup + "/v1"
	items, _ := list["items"].([]any)
	for _, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			continue
		}
		obj["apiVersion"] = FlowcontrolGroup + "/v1"
		spec, _ := obj["spec"].(map[string]any)
		// Before 1.28 the exempt level had no spec.exempt: it neither had
		// shares nor lent seats. Today's servers require the field for an
		// Exempt level (apf_controller.go:queueSetCompleterForPL) and default
		// both values to 0 (pkg/apis/flowcontrol/v1/defaults.go), which is the
		// same behaviour; without it the engine would call the level broken.
		if spec != nil && spec["type"] == "Exempt" && spec["exempt"] == nil {
			spec["exempt"] = map[string]any{"nominalConcurrencyShares": 0, "lendablePercent": 0}
		}
		lim, _ := spec["limited"].(map[string]any)
		if v, ok := lim["assuredConcurrencyShares"]; ok {
			if _, has := lim["nominalConcurrencyShares"]; !has {
				lim["nominalConcurrencyShares"] = v
			}
			delete(lim, "assuredConcurrencyShares")
		}
	}
	return json.Marshal(list)
}

// ParseRaw fills the typed fields from Raw. A live capture and a bundle read
// back both go through here, so they print the same.
//
// A large request dump (most of a refresh's parse, at tens of thousands of
// requests) is parsed in a goroutine of its own while the rest is parsed
// here; the error returned is the one of the first input, in the order
// below, that fails, as when they are parsed one after the other.
func (s *Snapshot) ParseRaw() error {
	var err error
	var requests chan requestsResult
	if b, ok := s.Raw[FileRequests]; ok && len(b) >= parallelRequests {
		requests = make(chan requestsResult, 1)
		go func() {
			rows, err := ParseRequests(b)
			requests <- requestsResult{rows, err}
		}()
		// Wait on every return: the goroutine writes nothing of s.
		defer func() {
			if requests != nil {
				<-requests
			}
		}()
	}
	if b, ok := s.Raw[FileVersion]; ok && s.ServerVersion == nil {
		var v version.Info
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("decoding %s: %w", FileVersion, err)
		}
		s.ServerVersion = &v
	}
	if b, ok := s.Raw[FileFlowSchemas]; ok {
		var l flowcontrolv1.FlowSchemaList
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("decoding flowschemas: %w", err)
		}
		s.FlowSchemas = l.Items
	}
	if b, ok := s.Raw[FilePLCs]; ok {
		var l flowcontrolv1.PriorityLevelConfigurationList
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("decoding prioritylevelconfigurations: %w", err)
		}
		s.PriorityLevels = l.Items
	}
	if b, ok := s.Raw[FilePriorityLevels]; ok {
		if s.PriorityLevelDump, err = ParsePriorityLevels(b); err != nil {
			return err
		}
	}
	if b, ok := s.Raw[FileQueues]; ok {
		if s.QueueDump, err = ParseQueues(b); err != nil {
			return err
		}
	}
	if b, ok := s.Raw[FileRequests]; ok && requests == nil {
		if s.RequestDump, err = ParseRequests(b); err != nil {
			return err
		}
	}
	var scrapes []*metrics.Scrape
	var metricsErr error
	for i := 0; ; i++ {
		b, ok := s.Raw[MetricsFile(i)]
		if !ok {
			break
		}
		sc, err := parseMetricsBody(MetricsFile(i), b, scrapeTime(s.Raw, "", i, s.CapturedAt))
		if err != nil {
			metricsErr = err
			break
		}
		if err := setUnknown(sc, s.Raw, "", i); err != nil {
			metricsErr = err
			break
		}
		scrapes = append(scrapes, sc)
	}
	if requests != nil {
		r := <-requests
		requests = nil
		if r.err != nil {
			return r.err
		}
		s.RequestDump = r.rows
	}
	s.Metrics = scrapes
	return metricsErr
}

// parallelRequests is the size of a request dump from which ParseRaw
// parses it in a goroutine of its own (about a thousand requests): below
// it, the goroutine costs more than it saves.
const parallelRequests = 256 << 10

type requestsResult struct {
	rows []RequestRow
	err  error
}

func typeMetaList(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: FlowcontrolGroup + "/v1", Kind: kind}
}

// HasMetrics reports whether s holds an i-th metrics scrape.
func HasMetrics(s *Snapshot, i int) bool {
	_, ok := s.Raw[MetricsFile(i)]
	return ok
}

// MoveMetrics moves the i-th metrics scrape of from (its body, time and
// what it cannot tell) to the j-th of to, as dump bundle --watch appends
// each scrape to the instance's: to's parsed Metrics are those of its Raw
// once ParseRaw runs again.
func MoveMetrics(from *Snapshot, i int, to *Snapshot, j int) {
	for _, k := range [][2]string{{MetricsFile(i), MetricsFile(j)}, {MetricsTimeKey(i), MetricsTimeKey(j)}, {MetricsUnknownKey(i), MetricsUnknownKey(j)}} {
		if b, ok := from.Raw[k[0]]; ok {
			to.Raw[k[1]] = b
			delete(from.Raw, k[0])
		}
	}
}
