// Package apfvalidation checks pkg/config's port of kube-apiserver's validation
// and beta conversion of FlowSchemas and PriorityLevelConfigurations against
// upstream's own code (k8s.io/kubernetes pkg/apis/flowcontrol), object by
// object, on generated objects that hit every rule.
package apfvalidation

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/kubernetes/pkg/apis/flowcontrol"
	"k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	"k8s.io/kubernetes/pkg/apis/flowcontrol/validation"

	"github.com/kubectl-apf/kubectl-apf/pkg/config"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	install.Install(s)
	return s
}

// key identifies a field error by what the user reads: the field, the kind
// of error and its detail (the bad value prints differently for internal
// and v1 types, so it is left out).
func keys(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s|%s|%s", e.Field, e.Type, e.Detail))
	}
	slices.Sort(out)
	return out
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func strs(r *rand.Rand, pool ...string) []string {
	n := r.IntN(3)
	out := make([]string, 0, n)
	for range n {
		out = append(out, pick(r, pool...))
	}
	return out
}

func i32p(r *rand.Rand, vals ...int32) *int32 {
	if r.IntN(4) == 0 {
		return nil
	}
	v := pick(r, vals...)
	return &v
}

var names = []string{"ok", "exempt", "catch-all", "Bad_Name", "", "a.b-c", strings.Repeat("x", 254), "global-default"}

func genFlowSchema(r *rand.Rand) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: pick(r, names...)}}
	if r.IntN(6) == 0 {
		// a mandatory object as upstream ships it, sometimes changed below
		m := pick(r, bootstrap.MandatoryFlowSchemas...)
		fs = m.DeepCopy()
		if r.IntN(2) == 0 {
			return fs
		}
	}
	fs.Spec.MatchingPrecedence = pick(r, int32(0), 1, 2, 500, 10000, 10001, -3)
	fs.Spec.PriorityLevelConfiguration.Name = pick(r, "workload-low", "", "Bad_Level", "exempt")
	if r.IntN(3) == 0 {
		fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: pick(r, flowcontrolv1.FlowDistinguisherMethodByUserType, flowcontrolv1.FlowDistinguisherMethodByNamespaceType, "ByColour")}
	}
	for range r.IntN(3) {
		var rule flowcontrolv1.PolicyRulesWithSubjects
		for range r.IntN(3) {
			s := flowcontrolv1.Subject{Kind: pick(r, flowcontrolv1.SubjectKindUser, flowcontrolv1.SubjectKindGroup, flowcontrolv1.SubjectKindServiceAccount, "Robot")}
			if r.IntN(2) == 0 {
				s.User = &flowcontrolv1.UserSubject{Name: pick(r, "alice", "")}
			}
			if r.IntN(2) == 0 {
				s.Group = &flowcontrolv1.GroupSubject{Name: pick(r, "dev", "")}
			}
			if r.IntN(2) == 0 {
				s.ServiceAccount = &flowcontrolv1.ServiceAccountSubject{Namespace: pick(r, "ns", "", "Bad_NS"), Name: pick(r, "sa", "*", "", "Bad_SA")}
			}
			rule.Subjects = append(rule.Subjects, s)
		}
		for range r.IntN(3) {
			rule.ResourceRules = append(rule.ResourceRules, flowcontrolv1.ResourcePolicyRule{
				Verbs:        strs(r, "get", "list", "*", "frobnicate", "proxy", "deletecollection"),
				APIGroups:    strs(r, "", "*", "apps"),
				Resources:    strs(r, "pods", "*", "pods/log"),
				ClusterScope: r.IntN(2) == 0,
				Namespaces:   strs(r, "default", "*", "Bad_NS", ""),
			})
		}
		for range r.IntN(2) {
			rule.NonResourceRules = append(rule.NonResourceRules, flowcontrolv1.NonResourcePolicyRule{
				Verbs:           strs(r, "get", "*", "frobnicate"),
				NonResourceURLs: strs(r, "/healthz", "*", "/", "healthz", "/a b", "//x", "/api/*", "/a*", "/*/x", ""),
			})
		}
		fs.Spec.Rules = append(fs.Spec.Rules, rule)
	}
	for range r.IntN(3) {
		fs.Status.Conditions = append(fs.Status.Conditions, flowcontrolv1.FlowSchemaCondition{Type: pick[flowcontrolv1.FlowSchemaConditionType](r, "Dangling", "", "Other")})
	}
	return fs
}

func genPriorityLevel(r *rand.Rand) *flowcontrolv1.PriorityLevelConfiguration {
	pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: pick(r, names...)}}
	if r.IntN(6) == 0 {
		m := pick(r, bootstrap.MandatoryPriorityLevelConfigurations...)
		pl = m.DeepCopy()
		if r.IntN(2) == 0 {
			return pl
		}
	}
	if r.IntN(8) == 0 {
		pl.Annotations = map[string]string{"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""}
	}
	pl.Spec.Type = pick(r, flowcontrolv1.PriorityLevelEnablementLimited, flowcontrolv1.PriorityLevelEnablementExempt, "", "Sometimes")
	if r.IntN(3) > 0 {
		l := &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: i32p(r, 0, 1, 30, -1),
			LendablePercent:          i32p(r, 0, 50, 100, 101, -1),
			BorrowingLimitPercent:    i32p(r, 0, 200, -1),
		}
		l.LimitResponse.Type = pick(r, flowcontrolv1.LimitResponseTypeQueue, flowcontrolv1.LimitResponseTypeReject, "", "Drop")
		if r.IntN(3) > 0 {
			l.LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{
				Queues:           pick(r, int32(0), 1, 64, 128, 10_000_001, -1),
				HandSize:         pick(r, int32(0), 1, 6, 8, 65, 100, -1),
				QueueLengthLimit: pick(r, int32(0), 50, -1),
			}
		}
		pl.Spec.Limited = l
	}
	if r.IntN(3) == 0 {
		pl.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: i32p(r, 0, 5, -1), LendablePercent: i32p(r, 0, 100, 101, -1)}
	}
	for range r.IntN(3) {
		pl.Status.Conditions = append(pl.Status.Conditions, flowcontrolv1.PriorityLevelConfigurationCondition{Type: pick[flowcontrolv1.PriorityLevelConfigurationConditionType](r, "Ready", "")})
	}
	return pl
}

// TestValidationAgreesWithUpstream validates generated v1 objects with the
// port and with upstream's functions (after upstream's defaulting and
// conversion to the internal types, as the server does) and requires the
// same field errors.
func TestValidationAgreesWithUpstream(t *testing.T) {
	s := newScheme(t)
	r := rand.New(rand.NewPCG(17, 1))
	const n = 20000
	var invalidFS, invalidPL int
	for i := range n {
		fs := genFlowSchema(r)
		up := fs.DeepCopy()
		s.Default(up)
		var in flowcontrol.FlowSchema
		if err := s.Convert(up, &in, nil); err != nil {
			t.Fatal(err)
		}
		want, got := keys(validation.ValidateFlowSchema(&in)), keys(config.ValidateFlowSchema(fs))
		if !slices.Equal(got, want) {
			b, _ := json.Marshal(fs)
			t.Fatalf("FlowSchema %d %s:\n port     %q\n upstream %q", i, b, got, want)
		}
		if len(want) > 0 {
			invalidFS++
		}

		pl := genPriorityLevel(r)
		upl := pl.DeepCopy()
		s.Default(upl)
		var inp flowcontrol.PriorityLevelConfiguration
		if err := s.Convert(upl, &inp, nil); err != nil {
			t.Fatal(err)
		}
		want = keys(validation.ValidatePriorityLevelConfiguration(&inp, flowcontrolv1.SchemeGroupVersion, validation.PriorityLevelValidationOptions{}))
		got = keys(config.ValidatePriorityLevel(pl, ""))
		if !slices.Equal(got, want) {
			b, _ := json.Marshal(pl)
			t.Fatalf("PriorityLevelConfiguration %d %s:\n port     %q\n upstream %q", i, b, got, want)
		}
		if len(want) > 0 {
			invalidPL++
		}
	}
	t.Logf("%d FlowSchemas (%d invalid) and %d priority levels (%d invalid): the port and upstream agree on every one", n, invalidFS, n, invalidPL)
	if min(invalidFS, n-invalidFS, invalidPL, n-invalidPL) < n/20 {
		t.Errorf("the generator should make both valid and invalid objects: %d and %d invalid of %d", invalidFS, invalidPL, n)
	}
}

// TestBetaConversionAgreesWithUpstream reads generated priority levels in
// each beta version with config.ParseObjects and with upstream's decoder
// (defaulting and conversion to the internal version, then validation with
// the request's version), and requires the same verdict and, when valid,
// the same internal object.
func TestBetaConversionAgreesWithUpstream(t *testing.T) {
	s := newScheme(t)
	codecs := serializer.NewCodecFactory(s)
	r := rand.New(rand.NewPCG(17, 2))
	var agreed, valid int
	for i := range 3000 {
		version := pick(r, "v1beta1", "v1beta2", "v1beta3")
		pl := genPriorityLevel(r)
		pl.Name = pick(r, "ok", "other")
		m := map[string]any{}
		b, _ := json.Marshal(pl)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["apiVersion"], m["kind"] = "flowcontrol.apiserver.k8s.io/"+version, "PriorityLevelConfiguration"
		delete(m, "status")
		if spec, _ := m["spec"].(map[string]any); spec != nil {
			if lim, _ := spec["limited"].(map[string]any); lim != nil {
				if version != "v1beta3" {
					if v, ok := lim["nominalConcurrencyShares"]; ok {
						lim["assuredConcurrencyShares"] = v
						delete(lim, "nominalConcurrencyShares")
					}
				}
			}
		}
		doc, _ := json.Marshal(m)

		gv := schema.GroupVersion{Group: "flowcontrol.apiserver.k8s.io", Version: version}
		obj, _, err := codecs.UniversalDecoder(schema.GroupVersion{Group: "flowcontrol.apiserver.k8s.io", Version: runtime.APIVersionInternal}).Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: upstream decoding: %v", doc, err)
		}
		want := obj.(*flowcontrol.PriorityLevelConfiguration)
		upErrs := validation.ValidatePriorityLevelConfiguration(want, gv, validation.PriorityLevelValidationOptions{})

		objs, err := config.ParseObjects(doc, "gen")
		if (err != nil) != (len(upErrs) > 0) {
			t.Fatalf("%d %s:\n port error %v\n upstream   %v", i, doc, err, upErrs)
		}
		if err == nil {
			valid++
			got := objs.PriorityLevels[0].DeepCopy()
			s.Default(got)
			var in flowcontrol.PriorityLevelConfiguration
			if err := s.Convert(got, &in, nil); err != nil {
				t.Fatal(err)
			}
			// the round trip through versions leaves these alone
			in.TypeMeta, want.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
			if !apiequality.Semantic.DeepEqual(&in, want) {
				t.Fatalf("%d %s:\n port     %+v\n upstream %+v", i, doc, in.Spec, want.Spec)
			}
		} else {
			for _, e := range upErrs {
				if !strings.Contains(err.Error(), e.Field) {
					t.Fatalf("%d %s: port error %v lacks upstream's field %s", i, doc, err, e.Field)
				}
			}
		}
		agreed++
	}
	t.Logf("%d beta priority levels (%d valid): the port and upstream agree on every one", agreed, valid)
}
