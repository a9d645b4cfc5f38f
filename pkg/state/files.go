package state

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/lint"
)

// ReadObjectFiles reads -f arguments: files, directories (their .yaml, .yml
// and .json files, sorted; recursively with -R) or "-" for stdin. Beta
// objects are converted to v1 (listed in Converted) and every object is
// validated as kube-apiserver would (lint.ParseObjects); an argument that
// holds no APF object is an error (lint.RequireObjects).
func ReadObjectFiles(args []string, recursive bool, stdin io.Reader) (lint.Objects, error) {
	var out lint.Objects
	for _, arg := range args {
		var objs lint.Objects
		if arg == "-" {
			data, err := io.ReadAll(io.LimitReader(stdin, 64<<20))
			if err != nil {
				return lint.Objects{}, fmt.Errorf("reading stdin: %w", err)
			}
			if objs, err = lint.ParseObjects(data, "stdin"); err != nil {
				return lint.Objects{}, err
			}
		} else {
			paths, err := expandPath(arg, recursive)
			if err != nil {
				return lint.Objects{}, err
			}
			for _, p := range paths {
				data, err := os.ReadFile(p)
				if err != nil {
					return lint.Objects{}, fmt.Errorf("reading -f %s: %w", p, err)
				}
				fo, err := lint.ParseObjects(data, p)
				if err != nil {
					return lint.Objects{}, err
				}
				objs.Add(fo)
			}
		}
		if err := lint.RequireObjects(arg, objs); err != nil {
			return lint.Objects{}, err
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
