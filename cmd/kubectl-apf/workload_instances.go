package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
)

// instanceFlags say which apiserver instance served the requests of the
// workload files (--instance, --workload-instance); without them each file
// is one instance (a rotated series of one file joined), unless the input
// names its instance itself.
type instanceFlags struct {
	All    string
	ByPath []string
}

// workloadInstancesHelp is added to the help of the commands that read a
// workload.
const workloadInstancesHelp = `

Several apiserver instances: each instance has its own APF (its own server
concurrency limit, its own queues), so the requests of each are
reconstructed on their own, each with its own calibration. A request's
instance is the one its input names (a log pipeline's stream, pod or host),
else its file's: one instance per file, a rotated series of one log
(audit.log, audit-2026-11-27T10-00-00.000.log.gz, audit.log.1) joined into
one; httplog lines go to the instance of the audit events they are joined
to by audit ID. --instance NAME makes every file one instance;
--workload-instance FILE=NAME names the instance of one file (files given
the same NAME are one instance). The notes say how the input was split.`

func (f *instanceFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.All, "instance", "", "The apiserver instance that served every request of the workload files: they are reconstructed as one (by default each file is one instance, a rotated series joined).")
	fs.StringArrayVar(&f.ByPath, "workload-instance", nil, "FILE=NAME: the apiserver instance that served the requests of one workload file (repeatable; files given the same NAME are one instance).")
}

// spec checks the flags against the files given and returns the workload
// of paths, with the instances the flags give.
func (f *instanceFlags) spec(paths []string) (logs.Spec, error) {
	spec := logs.Spec{Paths: paths}
	spec.Instances.All = f.All
	opts := &spec.Instances
	if f.All != "" && len(f.ByPath) > 0 {
		return spec, fmt.Errorf("--instance names the instance of every file: give it or --workload-instance, not both")
	}
	for _, v := range f.ByPath {
		i := strings.LastIndex(v, "=")
		if i <= 0 || i == len(v)-1 {
			return spec, fmt.Errorf("--workload-instance %q: want FILE=NAME", v)
		}
		path, name := v[:i], v[i+1:]
		if !slices.Contains(paths, path) {
			return spec, fmt.Errorf("--workload-instance %s: %s is not one of the workload files given (%s)", v, path, strings.Join(paths, ", "))
		}
		if opts.ByPath == nil {
			opts.ByPath = map[string]string{}
		}
		opts.ByPath[path] = name
	}
	return spec, nil
}

// validate checks the flags' form (the files are checked when known).
func (f *instanceFlags) validate(paths []string) error {
	_, err := f.spec(paths)
	return err
}
