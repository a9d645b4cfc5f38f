package main

import (
	"strings"
	"testing"
)

// FuzzWorkloadInstanceFlag: any --workload-instance value is refused with
// an error or gives a file of those given a non-empty name, which joined
// back with "=" is the value.
func FuzzWorkloadInstanceFlag(f *testing.F) {
	for _, s := range []string{"audit.log=apiserver-0", "a=b=c", "=x", "a.log=", "", "a.log", "dir/x=y.log=z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		path, _, _ := strings.Cut(v, "=")
		if i := strings.LastIndex(v, "="); i > 0 {
			path = v[:i]
		}
		fl := instanceFlags{ByPath: []string{v}}
		spec, err := fl.spec([]string{path, "other.log"})
		if err != nil {
			return
		}
		name := spec.Instances.ByPath[path]
		if name == "" || path+"="+name != v {
			t.Fatalf("%q gave %q=%q", v, path, name)
		}
	})
}
