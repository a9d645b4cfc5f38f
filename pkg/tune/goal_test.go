package tune

import (
	"strings"
	"testing"
)

// FuzzParseTargets: a --protect or --ignore target read is of a known
// kind and reads back to itself (a service account as NAMESPACE/NAME);
// a --keep names FlowSchemas or levels by the name given.
func FuzzParseTargets(f *testing.F) {
	for _, s := range []string{"user=alice", "sa=kube-system/my-controller", "SERVICEACCOUNT=a/b", "group=system:nodes", "flowschema=global-default", "level=workload-low", "pod=x", "user=", "sa=a/", "fs/global-default", "plc/x", "fs/", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if tg, err := ParseFlagTarget("--ignore", s); err == nil {
			switch tg.Kind {
			case TargetUser, TargetGroup, TargetFlowSchema, TargetLevel:
			case TargetServiceAccount:
				if ns, name, ok := strings.Cut(tg.Name, "/"); !ok || ns == "" || name == "" {
					t.Fatalf("%q: service account %q", s, tg.Name)
				}
			default:
				t.Fatalf("%q: kind %q", s, tg.Kind)
			}
			if again, err := ParseFlagTarget("--ignore", tg.String()); err != nil || again != tg {
				t.Fatalf("%q is %v, which reads as %v, %v", s, tg, again, err)
			}
		} else if !strings.HasPrefix(err.Error(), "--ignore ") {
			t.Fatalf("%q: the error %q does not name the flag", s, err)
		}
		keys, err := ParseObjectKey(s)
		if err != nil {
			return
		}
		for _, k := range keys {
			if (k.Kind != KindFlowSchema && k.Kind != KindPriorityLevel) || k.Name == "" || !strings.HasSuffix(s, k.Name) {
				t.Fatalf("--keep %q is %v", s, keys)
			}
		}
	})
}
