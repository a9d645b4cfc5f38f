package input

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// TestRotationBase: the names kube-apiserver's rotation (lumberjack) and
// logrotate give the older files of a log are that log's.
func TestRotationBase(t *testing.T) {
	for in, want := range map[string]string{
		"audit.log":                                        "audit.log",
		"audit.log.gz":                                     "audit.log",
		"audit-2026-11-27T10-00-00.000.log":                "audit.log",
		"audit-2026-11-27T10-00-00.000.log.gz":             "audit.log",
		"kube-apiserver-audit-2026-01-02T03-04-05.678.log": "kube-apiserver-audit.log",
		"audit-2026-11-27T10-00-00.000":                    "audit",
		"audit.log.1":                                      "audit.log",
		"audit.log.12.gz":                                  "audit.log",
		"apiserver-2026.log":                               "apiserver-2026.log",
		"kube-apiserver-2.log":                             "kube-apiserver-2.log",
	} {
		if got := workload.RotationBase(in); got != want {
			t.Errorf("RotationBase(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFileInstances: one instance per file, a rotated series one
// instance, the directory added where two hold the same name, and the
// flags' names first.
func TestFileInstances(t *testing.T) {
	names := func(fis []workload.FileInstance) []string {
		var out []string
		for _, f := range fis {
			out = append(out, f.Instance+" ("+f.Why+")")
		}
		return out
	}
	for _, c := range []struct {
		paths []string
		opts  workload.InstanceOptions
		want  []string
	}{
		{[]string{"/logs/a/audit.log", "/logs/b/audit.log"}, workload.InstanceOptions{}, []string{"a/audit.log (one file)", "b/audit.log (one file)"}},
		{[]string{"/logs/audit.log", "/logs/audit-2026-11-27T10-00-00.000.log.gz", "/logs/other.log"}, workload.InstanceOptions{},
			[]string{"audit.log (a rotated series of one file)", "audit.log (a rotated series of one file)", "other.log (one file)"}},
		{[]string{"/x/audit-2026-11-27T10-00-00.000.log.gz"}, workload.InstanceOptions{}, []string{"audit.log (a rotated series of one file)"}},
		{[]string{"a.log", "-"}, workload.InstanceOptions{All: "apiserver-0"}, []string{"apiserver-0 (named by --instance)", "apiserver-0 (named by --instance)"}},
		{[]string{"a.log", "b.log", "-"}, workload.InstanceOptions{ByPath: map[string]string{"b.log": "one"}}, []string{"a.log (one file)", "one (named by --workload-instance)", "stdin (standard input)"}},
	} {
		if got := names(fileInstances(c.paths, c.opts)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v %+v:\n got %q\nwant %q", c.paths, c.opts, got, c.want)
		}
	}
}

// FuzzRotationBase: any name gives a name no longer than itself, without a
// ".gz", and the name of a log is its own base.
func FuzzRotationBase(f *testing.F) {
	for _, s := range []string{"audit.log", "audit-2026-11-27T10-00-00.000.log.gz", "audit.log.1", "", ".gz", "-2026-11-27T10-00-00.000", "a.1.2.3.gz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := workload.RotationBase(name)
		if len(got) > len(name) {
			t.Fatalf("RotationBase(%q) = %q, longer", name, got)
		}
		if got != "" && !strings.ContainsAny(got, ".") {
			// a log "<got>.log" rotated is one of its series
			if r := workload.RotationBase(got + "-2026-11-27T10-00-00.000.log.gz"); r != got+".log" {
				t.Fatalf("the rotated name of %q.log gives %q", got, r)
			}
		}
	})
}
