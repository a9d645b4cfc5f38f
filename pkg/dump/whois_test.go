package dump

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	uidFS = "4d1b6a7c-0b1e-4c55-9d3a-0f8f2a9c1e01"
	uidPL = "9e8d7c6b-5a49-4837-a261-5f4e3d2c1b0a"
)

func TestParseUIDRefs(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []UIDRef
		wantErr string
	}{
		{"bare uid", uidFS, []UIDRef{{UID: uidFS}}, ""},
		{"kubectl -v=8 lines", `I1121 14:00:00.000000  123 round_trippers.go:632]     X-Kubernetes-Pf-Flowschema-Uid: ` + uidFS + `
I1121 14:00:00.000000  123 round_trippers.go:632]     X-Kubernetes-Pf-Prioritylevel-Uid: ` + strings.ToUpper(uidPL) + "\n",
			[]UIDRef{{KindFlowSchema, uidFS}, {KindPriorityLevel, uidPL}}, ""},
		{"structured klog and duplicates", `headers=<` + "\n" + `	X-Kubernetes-Pf-Flowschema-Uid: ` + uidFS + "\n" + `"X-Kubernetes-PF-FlowSchema-UID"="` + uidFS + `"`,
			[]UIDRef{{KindFlowSchema, uidFS}}, ""},
		{"curl line with empty value", "< X-Kubernetes-PF-PriorityLevel-UID: \r", []UIDRef{{KindPriorityLevel, ""}}, ""},
		{"two bare uids on a line", uidFS + ", " + uidPL, []UIDRef{{UID: uidFS}, {UID: uidPL}}, ""},
		{"garbage", "hello", nil, `"hello" is neither a UID nor an X-Kubernetes-PF-\*-UID header`},
		{"bad header value", "X-Kubernetes-PF-FlowSchema-UID: 1234", nil, `"1234" is not a UID in "X-Kubernetes-PF-FlowSchema-UID: 1234"`},
		{"a word alone is not quoted twice", "0000", nil, `^"0000" is neither a UID nor an X-Kubernetes-PF-\*-UID header$`},
		{"the line of a word among others", uidFS + "\n0000\n", nil, `^"0000" is neither a UID nor an X-Kubernetes-PF-\*-UID header \(line 2\)$`},
		{"the line and its text", uidFS + "\n" + uidPL + " nope", nil, `^"nope" is neither .* in line 2, "` + uidPL + ` nope"$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseUIDRefs(tt.in)
			if tt.wantErr != "" {
				if err == nil || !regexp.MustCompile(tt.wantErr).MatchString(err.Error()) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	s := &Snapshot{
		FlowSchemas:    []flowcontrolv1.FlowSchema{{ObjectMeta: metav1.ObjectMeta{Name: "service-accounts", UID: types.UID(uidFS)}}},
		PriorityLevels: []flowcontrolv1.PriorityLevelConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "workload-low", UID: types.UID(uidPL)}}},
	}
	got := Resolve(s, []UIDRef{{UID: uidPL}, {Kind: KindFlowSchema, UID: uidFS}, {Kind: KindFlowSchema, UID: uidPL}, {Kind: KindPriorityLevel}})
	if got[0].FoundKind != KindPriorityLevel || got[0].Name != "workload-low" || got[1].Name != "service-accounts" {
		t.Errorf("resolved = %+v", got[:2])
	}
	if got[2].Name != "" || !strings.Contains(got[2].Note, "no such object") {
		t.Errorf("a PL UID given as a FlowSchema header must not resolve: %+v", got[2])
	}
	if !strings.Contains(got[3].Note, "imagined") {
		t.Errorf("empty UID note = %q", got[3].Note)
	}
}

func FuzzParseUIDRefs(f *testing.F) {
	f.Add(uidFS)
	f.Add("X-Kubernetes-PF-FlowSchema-UID: " + uidFS + "\nx-kubernetes-pf-prioritylevel-uid=" + uidPL)
	f.Fuzz(func(t *testing.T, s string) {
		refs, err := ParseUIDRefs(s)
		if err != nil {
			return
		}
		for _, r := range refs {
			if r.UID != "" && !uidRE.MatchString(r.UID) {
				t.Fatalf("returned %q, not a UID", r.UID)
			}
		}
	})
}

// TestParseUIDRefsTraceWithoutHeaders: a public kubectl --v=99 trace with no
// PF header at all is told apart from a mistyped UID (issue 26, D6).
func TestParseUIDRefsTraceWithoutHeaders(t *testing.T) {
	_, err := ParseUIDRefs(string(fieldFile(t, "cabin-34-kubectl-v99-trace.txt")))
	if !errors.Is(err, ErrNoPFHeader) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line wrapping ErrNoPFHeader", err)
	}
	// A word that is no UID, outside a trace, is still that.
	if _, err := ParseUIDRefs("nope"); err == nil || errors.Is(err, ErrNoPFHeader) || !strings.Contains(err.Error(), `"nope" is neither a UID`) {
		t.Errorf("err = %v", err)
	}
}
