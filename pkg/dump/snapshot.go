package dump

import (
	"context"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// Snapshot is the APF state of one apiserver instance at one time; see the
// package documentation.
type Snapshot struct {
	Instance           string                                     `json:"instance"`
	ServerVersion      *version.Info                              `json:"serverVersion,omitempty"`
	CapturedAt         time.Time                                  `json:"capturedAt"`
	FlowcontrolVersion string                                     `json:"flowcontrolVersion,omitempty"`
	FlowSchemas        []flowcontrolv1.FlowSchema                 `json:"flowSchemas,omitempty"`
	PriorityLevels     []flowcontrolv1.PriorityLevelConfiguration `json:"priorityLevels,omitempty"`
	PriorityLevelDump  []PriorityLevelRow                         `json:"priorityLevelDump,omitempty"`
	QueueDump          []QueueRow                                 `json:"queueDump,omitempty"`
	RequestDump        []RequestRow                               `json:"requestDump,omitempty"`
	// CapturedAtFrom says where CapturedAt comes from when the input does
	// not tell when it was taken (a raw dump): AtNewestRequest or
	// AtFileTime; "" when the capture time is known, or unknown (zero).
	CapturedAtFrom string `json:"-"`
	// Metrics holds the scrapes, oldest first.
	Metrics []*metrics.Scrape `json:"-"`
	// Raw holds the bodies as read, by bundle file name.
	Raw map[string][]byte `json:"-"`
}

// Parts selects what a capture reads, so a command asks only for what it
// shows (the dumps stall admission briefly; do not read them for nothing).
type Parts uint

// The parts of a snapshot.
const (
	PartObjects Parts = 1 << iota
	PartPriorityLevels
	PartQueues
	PartRequests
	PartMetrics
	PartVersion

	PartAll = PartObjects | PartPriorityLevels | PartQueues | PartRequests | PartMetrics | PartVersion
)

// CaptureOptions says what to read.
type CaptureOptions struct {
	Parts Parts
	// MetricsInterval, when positive, takes a second /metrics scrape this
	// long after the first, for rates.
	MetricsInterval time.Duration
	// AllScrapes reads every scrape a bundle holds of each instance (dump
	// bundle --from writes them all again). Without it a bundle gives the
	// two that give the rates of its end: its last and the latest at least
	// half an interval before it (metrics.LatestPair); a watch's thousands
	// are read only around a window (BundleSource.ScrapesAround).
	AllScrapes bool
	// LargestBurst reads, of a bundle that holds more than two scrapes of
	// an instance (dump bundle --watch), the scrapes around a burst of
	// APF's rejections it recorded instead of its latest two, with a note
	// that says which: the burst it ends in, else the largest, without its
	// debug dumps (the watch's start's and end's, not the burst's). explain
	// 429 explains the incident the watch recorded.
	LargestBurst bool
	// AtWatchEnd says, of a bundle that holds more than two scrapes of an
	// instance and is read at its end (neither LargestBurst nor
	// AllScrapes), that what is shown is the watch's end: the dumps taken
	// then and the rates of its latest two scrapes, and which commands
	// read the rest. For the commands that show the moment a bundle holds
	// (top, dump, explain request); simulate reads the scrapes around its
	// window instead, and says which.
	AtWatchEnd bool
}

// InstanceError is why one instance could not be read.
type InstanceError struct {
	Instance string `json:"instance"`
	Err      error  `json:"-"`
	// Message is Err's text, kept when a bundle is written and read back.
	Message string `json:"error"`
}

func (e InstanceError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Message
}

// Capture is what a Source returns: the snapshots of the instances that
// answered and the errors of those that did not.
type Capture struct {
	Snapshots []*Snapshot     `json:"snapshots"`
	Failures  []InstanceError `json:"failures,omitempty"`
	// Notes say what the input held and lacked ("note: ..." each), for
	// stderr.
	Notes []string `json:"-"`
}

// Source is where snapshots come from: a cluster or a bundle.
type Source interface {
	// Capture reads one snapshot per instance.
	Capture(ctx context.Context, opts CaptureOptions) (*Capture, error)
	// Describe names the source for messages ("https://10.0.0.1:6443",
	// "bundle apf.tar.gz").
	Describe() string
}

// RequestsWaitingOnly reports whether the snapshot's dump_requests is of a
// layout before 1.28, which lists the waiting requests alone: how many
// execute is not in it (RequestRow.WaitingOnly).
func (s *Snapshot) RequestsWaitingOnly() bool {
	for _, r := range s.RequestDump {
		if r.WaitingOnly {
			return true
		}
	}
	return false
}

// Objects returns pointers to the snapshot's FlowSchemas and priority
// levels, in the snapshot's order, as engine.NewConfig takes them.
func (s *Snapshot) Objects() ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	var fss []*flowcontrolv1.FlowSchema
	for i := range s.FlowSchemas {
		fss = append(fss, &s.FlowSchemas[i])
	}
	var pls []*flowcontrolv1.PriorityLevelConfiguration
	for i := range s.PriorityLevels {
		pls = append(pls, &s.PriorityLevels[i])
	}
	return fss, pls
}

// Names indexes the UIDs of a snapshot's configuration objects.
type Names struct {
	FlowSchemas    map[string]string
	PriorityLevels map[string]string
}

// NamesByUID returns the names of the snapshot's objects by UID.
func (s *Snapshot) NamesByUID() Names {
	n := Names{FlowSchemas: map[string]string{}, PriorityLevels: map[string]string{}}
	for _, fs := range s.FlowSchemas {
		n.FlowSchemas[string(fs.UID)] = fs.Name
	}
	for _, pl := range s.PriorityLevels {
		n.PriorityLevels[string(pl.UID)] = pl.Name
	}
	return n
}

// LatestMetrics returns the newest scrape and the one before it (nil when
// there is only one, or none).
func (s *Snapshot) LatestMetrics() (prev, cur *metrics.Scrape) {
	switch n := len(s.Metrics); n {
	case 0:
		return nil, nil
	case 1:
		return nil, s.Metrics[0]
	default:
		return s.Metrics[n-2], s.Metrics[n-1]
	}
}
