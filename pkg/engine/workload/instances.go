package workload

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

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

// fileInstances gives each path the instance its requests default to: the
// flags', or one per file with a rotated series joined, each named by its
// base name (with its directory when two directories hold the same name).
func fileInstances(paths []string, opts InstanceOptions) []FileInstance {
	out := make([]FileInstance, len(paths))
	keys := make([]string, len(paths))
	bases := map[string]map[string]bool{} // base name → the keys that have it
	series := map[string]int{}
	for i, p := range paths {
		if p == "-" {
			continue
		}
		dir, base := filepath.Split(filepath.Clean(p))
		keys[i] = filepath.Join(dir, RotationBase(base))
		b := filepath.Base(keys[i])
		if bases[b] == nil {
			bases[b] = map[string]bool{}
		}
		bases[b][keys[i]] = true
		series[keys[i]]++
	}
	for i, p := range paths {
		fi := &out[i]
		fi.Path = p
		switch {
		case opts.All != "":
			fi.Instance, fi.Why = opts.All, WhyFlag
		case opts.ByPath[p] != "":
			fi.Instance, fi.Why = opts.ByPath[p], WhyPathFlag
		case p == "-":
			fi.Instance, fi.Why = "stdin", WhyStdin
		default:
			fi.Instance, fi.Why = filepath.Base(keys[i]), WhyFile
			if len(bases[fi.Instance]) > 1 {
				fi.Instance = filepath.Join(filepath.Base(filepath.Dir(keys[i])), fi.Instance)
			}
			if series[keys[i]] > 1 || RotationBase(filepath.Base(p)) != strings.TrimSuffix(filepath.Base(p), ".gz") {
				fi.Why = WhyRotated
			}
		}
	}
	return out
}

// instanced gives the requests of one input its instance: the input's own
// (when it names one and force is false), else name. named records the
// instances the input named itself, and namedIn the inputs (base, the
// input's base name) that named each.
type instanced struct {
	Reader
	name    string
	force   bool
	named   map[string]bool
	base    string
	namedIn map[string][]string
}

func (in *instanced) Next(r *Request) error {
	if err := in.Reader.Next(r); err != nil {
		return err
	}
	switch {
	case in.force || r.Instance == "":
		r.Instance = in.name
	default:
		in.named[r.Instance] = true
		if ps := in.namedIn[r.Instance]; in.namedIn != nil && !slices.Contains(ps, in.base) {
			in.namedIn[r.Instance] = append(ps, in.base)
		}
	}
	return nil
}

// Resolve is the instance the requests of instance name are reconstructed
// in: an httplog file's own instance is that of the audit events its lines
// were joined to (the most of them), when some were; any other instance is
// itself. Call it once the files have been read.
func (f *Files) Resolve(name string) string {
	if f.join == nil {
		return name
	}
	best, n := name, int64(0)
	for k, cp := range f.join.pairs {
		if c := *cp; k[0] == name && (c > n || c == n && k[1] < best) {
			best, n = k[1], c
		}
	}
	return best
}

// Split says how the files were split into instances, one line per
// instance, in the order of names: its files and why, and the httplog
// files joined to it by audit ID. Call it once the files have been read.
func (f *Files) Split(names []string) []string {
	f.settle()
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
		for _, in := range f.namedIn[n] {
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

// countPair counts an httplog line of instance log joined to an audit
// event of instance audit.
func (j *joined) countPair(log, audit string) {
	// most lines are of the pair before (one file, one instance): its
	// count is at hand, without a hash of the two names
	if j.lastCount != nil && j.lastPair[0] == log && j.lastPair[1] == audit {
		*j.lastCount++
		return
	}
	if j.pairs == nil {
		j.pairs = map[[2]string]*int64{}
	}
	k := [2]string{log, audit}
	c := j.pairs[k]
	if c == nil {
		c = new(int64)
		j.pairs[k] = c
	}
	*c++
	j.lastPair, j.lastCount = k, c
}
