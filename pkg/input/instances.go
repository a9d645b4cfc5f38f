package input

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// fileInstances gives each path the instance its requests default to: the
// flags', or one per file with a rotated series joined, each named by its
// base name (with its directory when two directories hold the same name).
func fileInstances(paths []string, opts workload.InstanceOptions) []workload.FileInstance {
	out := make([]workload.FileInstance, len(paths))
	keys := make([]string, len(paths))
	bases := map[string]map[string]bool{} // base name → the keys that have it
	series := map[string]int{}
	for i, p := range paths {
		if p == "-" {
			continue
		}
		dir, base := filepath.Split(filepath.Clean(p))
		keys[i] = filepath.Join(dir, workload.RotationBase(base))
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
			fi.Instance, fi.Why = opts.All, workload.WhyFlag
		case opts.ByPath[p] != "":
			fi.Instance, fi.Why = opts.ByPath[p], workload.WhyPathFlag
		case p == "-":
			fi.Instance, fi.Why = "stdin", workload.WhyStdin
		default:
			fi.Instance, fi.Why = filepath.Base(keys[i]), workload.WhyFile
			if len(bases[fi.Instance]) > 1 {
				fi.Instance = filepath.Join(filepath.Base(filepath.Dir(keys[i])), fi.Instance)
			}
			if series[keys[i]] > 1 || workload.RotationBase(filepath.Base(p)) != strings.TrimSuffix(filepath.Base(p), ".gz") {
				fi.Why = workload.WhyRotated
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
	workload.Reader
	name    string
	force   bool
	named   map[string]bool
	base    string
	namedIn map[string][]string
}

func (in *instanced) Next(r *workload.Request) error {
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
