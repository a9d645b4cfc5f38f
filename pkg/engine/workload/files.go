package workload

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Files is a workload opened from several inputs (by the input layer,
// package input, or a store's client), merged in arrival order; httplog
// inputs are joined to audit inputs by audit ID when both are given. It
// holds what the inputs said about themselves; the opener holds the files
// and goroutines behind Reader (Opened).
type Files struct {
	Reader
	// Stats of every input.
	Stats map[string]*Stats
	// Formats of every input.
	Formats map[string]Format
	// Join counts how httplog lines met audit events, when both were given.
	Join *JoinStats
	// Instances are the instances each input's requests default to, and
	// why (files.go); Named the instances the inputs named themselves.
	Instances []FileInstance
	Named     map[string]bool
	// NamedIn are the inputs (by base name) that named each of Named.
	NamedIn map[string][]string
	// Opened is the opener's side of the inputs, nil when it holds
	// nothing to release.
	Opened Opened
}

// Opened is what the opener of a workload holds behind its Reader: the
// files and the goroutines that read them ahead (Close), the instances the
// inputs named, counted apart while they were read (Settle: merged into
// Named and NamedIn once read), and the instances httplog lines were
// joined to (Resolve).
type Opened interface {
	Close() error
	Settle(f *Files)
	// Resolve is the instance most httplog lines of instance name were
	// joined to by audit ID; ok is false when none was.
	Resolve(name string) (instance string, ok bool)
}

// Close releases the inputs.
func (f *Files) Close() error {
	if f.Opened == nil {
		return nil
	}
	return f.Opened.Close()
}

// JoinStats counts the outcome of joining httplog lines to audit events.
type JoinStats struct {
	// Matched httplog lines got their identity from an audit event.
	Matched int64
	// Unmatched httplog lines keep an unknown identity.
	Unmatched int64
	// AuditOnly audit events had no httplog line; they are dropped (their
	// request is in the httplog if the server logged it at -v=3).
	AuditOnly int64
	// Earlier matched lines took their audit event's arrival, more than a
	// microsecond (the two times' precision) before their line's time less
	// their latency.
	Earlier int64
	// Clamped joined requests arrived before requests already read, by
	// more than the join could put back in order; they arrive with those.
	Clamped int64
}

// InstanceOptions say which apiserver instance served the requests of each
// input, when the user tells it. Without them, a request keeps the
// instance its input names (a log pipeline's stream, pod or host), else it
// takes its file's: one instance per file, a rotated series of one file
// (audit.log, audit-2026-11-27T10-00-00.000.log.gz, audit.log.1) being one
// instance.
type InstanceOptions struct {
	// All, if set, names the one instance every input was served by.
	All string
	// ByPath names the instance of the requests of a path (as given),
	// whatever the input itself says.
	ByPath map[string]string
}

// The reasons an input's requests were given their instance
// (FileInstance.Why).
const (
	WhyFlag      = "named by --instance"
	WhyPathFlag  = "named by --workload-instance"
	WhyFile      = "one file"
	WhyRotated   = "a rotated series of one file"
	WhyStdin     = "standard input"
	WhyInputName = "named by the input (a log stream, pod or host)"
)

// FileInstance is the instance an input's requests default to, and why.
type FileInstance struct {
	Path, Instance, Why string
}

// rotated matches the names kube-apiserver's log rotation
// (gopkg.in/natefinch/lumberjack.v2: <name>-<time><ext>) and logrotate
// (<name>.1) give the older files of one log, once a ".gz" is cut.
var (
	lumberjackName = regexp.MustCompile(`(?s)^(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}(\.[^.]+)?$`)
	logrotateName  = regexp.MustCompile(`(?s)^(.+)\.\d{1,4}$`)
)

// RotationBase is the name of the log a file of a rotated series belongs
// to: "audit-2026-11-27T10-00-00.000.log.gz" and "audit.log.1" are older
// files of "audit.log". Other names are returned without a ".gz".
func RotationBase(name string) string {
	name = strings.TrimSuffix(name, ".gz")
	if m := lumberjackName.FindStringSubmatch(name); m != nil {
		return m[1] + m[2]
	}
	if m := logrotateName.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return name
}

// Resolve is the instance the requests of instance name are reconstructed
// in: an httplog file's own instance is that of the audit events its lines
// were joined to (the most of them), when some were; any other instance is
// itself. Call it once the files have been read.
func (f *Files) Resolve(name string) string {
	if f.Opened == nil {
		return name
	}
	if in, ok := f.Opened.Resolve(name); ok {
		return in
	}
	return name
}

// Split says how the files were split into instances, one line per
// instance, in the order of names: its files and why, and the httplog
// files joined to it by audit ID. Call it once the files have been read.
func (f *Files) Split(names []string) []string {
	if f.Opened != nil {
		f.Opened.Settle(f)
	}
	type part struct{ files, whys, joined []string }
	parts := map[string]*part{}
	get := func(n string) *part {
		if parts[n] == nil {
			parts[n] = &part{}
		}
		return parts[n]
	}
	for _, fi := range f.Instances {
		target := f.Resolve(fi.Instance)
		p := get(target)
		if target != fi.Instance {
			p.joined = append(p.joined, filepath.Base(fi.Path))
			continue
		}
		p.files = append(p.files, filepath.Base(fi.Path))
		if !slices.Contains(p.whys, fi.Why) {
			p.whys = append(p.whys, fi.Why)
		}
	}
	for n := range f.Named {
		p := get(n)
		for _, in := range f.NamedIn[n] {
			if !slices.Contains(p.files, in) {
				p.files = append(p.files, in)
			}
		}
		if !slices.Contains(p.whys, WhyInputName) {
			p.whys = append(p.whys, WhyInputName)
		}
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		p := parts[n]
		if p == nil {
			out = append(out, fmt.Sprintf("%s: %s", n, WhyInputName))
			continue
		}
		s := n + ":"
		if len(p.files) > 0 {
			s += " " + strings.Join(p.files, ", ")
		}
		if len(p.whys) > 0 {
			s += " (" + strings.Join(p.whys, "; ") + ")"
		}
		if len(p.joined) > 0 {
			s += "; httplog " + strings.Join(p.joined, ", ") + " joined to it by audit ID"
		}
		out = append(out, s)
	}
	return out
}
