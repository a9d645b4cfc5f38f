package load

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// ReadObjectFiles reads -f arguments: files, directories (their .yaml, .yml
// and .json files, sorted; recursively with -R) or "-" for stdin. Beta
// objects are converted to v1 (listed in Converted) and every object is
// validated as kube-apiserver would (config.ParseObjects); an argument that
// holds no APF object is an error (config.RequireObjects).
func ReadObjectFiles(args []string, recursive bool, stdin io.Reader) (config.Objects, error) {
	var out config.Objects
	for _, arg := range args {
		var objs config.Objects
		if arg == "-" {
			data, err := io.ReadAll(io.LimitReader(stdin, 64<<20))
			if err != nil {
				return config.Objects{}, fmt.Errorf("reading stdin: %w", err)
			}
			if objs, err = config.ParseObjects(data, "stdin"); err != nil {
				return config.Objects{}, err
			}
		} else {
			paths, err := expandPath(arg, recursive)
			if err != nil {
				return config.Objects{}, err
			}
			for _, p := range paths {
				data, err := os.ReadFile(p)
				if err != nil {
					return config.Objects{}, fmt.Errorf("reading -f %s: %w", p, err)
				}
				fo, err := config.ParseObjects(data, p)
				if err != nil {
					return config.Objects{}, err
				}
				objs.Add(fo)
			}
		}
		if err := config.RequireObjects(arg, objs); err != nil {
			return config.Objects{}, err
		}
		out.Add(objs)
	}
	return out, nil
}

func expandPath(arg string, recursive bool) ([]string, error) {
	info, err := os.Stat(arg)
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", arg, err)
	}
	if !info.IsDir() {
		return []string{arg}, nil
	}
	var paths []string
	err = filepath.WalkDir(arg, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != arg && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", arg, err)
	}
	sort.Strings(paths)
	return paths, nil
}

// readObjects reads the FlowSchemas and PriorityLevelConfigurations of a
// file of a raw --from directory as -f reads them (any served version,
// converted to v1, validated).
func readObjects(name string, data []byte) ([]flowcontrolv1.FlowSchema, []flowcontrolv1.PriorityLevelConfiguration, error) {
	objs, err := config.ParseObjects(data, name)
	if err != nil {
		return nil, nil, err
	}
	fs := make([]flowcontrolv1.FlowSchema, 0, len(objs.FlowSchemas))
	for _, f := range objs.FlowSchemas {
		fs = append(fs, *f)
	}
	pl := make([]flowcontrolv1.PriorityLevelConfiguration, 0, len(objs.PriorityLevels))
	for _, p := range objs.PriorityLevels {
		pl = append(pl, *p)
	}
	return fs, pl, nil
}

// FromUsage is the help of --from.
const FromUsage = `Read this instead of the cluster: a bundle (a directory or .tar.gz written by "kubectl apf dump bundle"), a raw debug dump or /metrics text saved (gzipped or not) or pasted from "kubectl get --raw" (dump_priority_levels, dump_queues, dump_requests, "/metrics | grep flowcontrol"), a directory of such files (its YAML or JSON files of FlowSchemas and PriorityLevelConfigurations are used as a bundle's objects), or "-" for standard input. The kind is told by the content.`

// validateStdin refuses two readers of standard input.
func validateStdin(from string, files []string) error {
	if from != dump.StdinPath {
		return nil
	}
	for _, f := range files {
		if f == "-" {
			return fmt.Errorf("--from - and -f - both read standard input: give one of them a file")
		}
	}
	return nil
}

// SetStdin sets what --from - reads, unless a test set it already; the
// commands pass their standard input.
func (o *Options) SetStdin(r io.Reader) {
	if o.Stdin == nil {
		o.Stdin = r
	}
}

// checkObjects refuses to work from an input without FlowSchemas and
// PriorityLevelConfigurations when the command needs them (it would route
// every request to the mandatory catch-all, or size only the mandatory
// levels, without a word), and says what -f is used against then.
func (o *Options) checkObjects(req Request, st *state.State) error {
	if req.NeedObjects == "" || !st.NoObjects {
		return nil
	}
	if len(o.Files) > 0 {
		st.Notes = append(st.Notes, fmt.Sprintf("note: %s holds no FlowSchemas or PriorityLevelConfigurations: only the -f objects and the mandatory ones are used", o.Source.Describe()))
		return nil
	}
	return fmt.Errorf("%s holds no FlowSchemas or PriorityLevelConfigurations, so %s from it%s: read the cluster or a bundle written by \"kubectl apf dump bundle\", or add -f FILE with the objects",
		o.Source.Describe(), req.NeedObjects, dumpedSchemas(st.Snapshots))
}

// dumpedSchemas names the FlowSchemas the request dumps show, the evidence
// an input without objects still holds.
func dumpedSchemas(snaps []*dump.Snapshot) string {
	seen := map[string]bool{}
	var names []string
	for _, s := range snaps {
		for _, r := range s.RequestDump {
			if r.FlowSchema != "" && !seen[r.FlowSchema] {
				seen[r.FlowSchema] = true
				names = append(names, r.FlowSchema)
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return fmt.Sprintf(" (its dump_requests shows requests of FlowSchema %s, whose rules it lacks)", strings.Join(names, ", "))
}
