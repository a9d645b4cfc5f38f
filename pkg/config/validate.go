package config

import (
	"fmt"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/util/shufflesharding"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// This file ports the validation kube-apiserver runs on FlowSchemas and
// PriorityLevelConfigurations (k8s.io/kubernetes
// pkg/apis/flowcontrol/validation/validation.go, v1.37), rule for rule, to
// the v1 types: the plugin must not depend on k8s.io/kubernetes, whose
// core validation alone would pull most of the apiserver into it. The
// objects are validated after the server's defaulting, as the server does;
// hack/apfvalidation checks the port against upstream's functions.

var supportedDistinguisherMethods = sets.New(
	string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType),
	string(flowcontrolv1.FlowDistinguisherMethodByUserType),
)

// priorityLevelConfigurationQueuingMaxQueues is upstream's 10^7.
const priorityLevelConfigurationQueuingMaxQueues int32 = 10 * 1000 * 1000

var supportedVerbs = sets.New("get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy")

var supportedSubjectKinds = sets.New(
	string(flowcontrolv1.SubjectKindServiceAccount),
	string(flowcontrolv1.SubjectKindGroup),
	string(flowcontrolv1.SubjectKindUser),
)

var supportedPriorityLevelEnablement = sets.New(
	string(flowcontrolv1.PriorityLevelEnablementExempt),
	string(flowcontrolv1.PriorityLevelEnablementLimited),
)

var supportedLimitResponseType = sets.New(
	string(flowcontrolv1.LimitResponseTypeQueue),
	string(flowcontrolv1.LimitResponseTypeReject),
)

// ValidateFlowSchema returns what kube-apiserver would reject in fs (after
// defaulting it), as field errors; empty when the server accepts it.
func ValidateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	fs = engine.DefaultFlowSchema(fs)
	allErrs := apimachineryvalidation.ValidateObjectMeta(&fs.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateFlowSchemaSpec(fs.Name, &fs.Spec, specPath)...)
	for _, mand := range bootstrap.MandatoryFlowSchemas {
		if mand.Name == fs.Name && !apiequality.Semantic.DeepEqual(fs.Spec, engine.DefaultFlowSchema(mand).Spec) {
			allErrs = append(allErrs, field.Invalid(specPath, fs.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
		}
	}
	allErrs = append(allErrs, validateConditionTypes(fsConditionTypes(fs.Status.Conditions), field.NewPath("status"))...)
	return allErrs
}

func validateFlowSchemaSpec(fsName string, spec *flowcontrolv1.FlowSchemaSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.MatchingPrecedence <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("matchingPrecedence"), spec.MatchingPrecedence, "must be a positive value"))
	}
	if spec.MatchingPrecedence > flowcontrolv1.FlowSchemaMaxMatchingPrecedence {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("matchingPrecedence"), spec.MatchingPrecedence, fmt.Sprintf("must not be greater than %v", flowcontrolv1.FlowSchemaMaxMatchingPrecedence)))
	}
	if spec.MatchingPrecedence == 1 && fsName != flowcontrolv1.FlowSchemaNameExempt {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("matchingPrecedence"), spec.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if spec.DistinguisherMethod != nil && !supportedDistinguisherMethods.Has(string(spec.DistinguisherMethod.Type)) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("distinguisherMethod").Child("type"), spec.DistinguisherMethod, sets.List(supportedDistinguisherMethods)))
	}
	if len(spec.PriorityLevelConfiguration.Name) > 0 {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(spec.PriorityLevelConfiguration.Name, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("priorityLevelConfiguration").Child("name"), spec.PriorityLevelConfiguration.Name, msg))
		}
	} else {
		allErrs = append(allErrs, field.Required(fldPath.Child("priorityLevelConfiguration").Child("name"), "must reference a priority level"))
	}
	for i := range spec.Rules {
		allErrs = append(allErrs, validatePolicyRulesWithSubjects(&spec.Rules[i], fldPath.Child("rules").Index(i))...)
	}
	return allErrs
}

func validatePolicyRulesWithSubjects(rule *flowcontrolv1.PolicyRulesWithSubjects, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(rule.Subjects) > 0 {
		for i := range rule.Subjects {
			allErrs = append(allErrs, validateSubject(&rule.Subjects[i], fldPath.Child("subjects").Index(i))...)
		}
	} else {
		allErrs = append(allErrs, field.Required(fldPath.Child("subjects"), "subjects must contain at least one value"))
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := range rule.ResourceRules {
		allErrs = append(allErrs, validateResourcePolicyRule(&rule.ResourceRules[i], fldPath.Child("resourceRules").Index(i))...)
	}
	for i := range rule.NonResourceRules {
		allErrs = append(allErrs, validateNonResourcePolicyRule(&rule.NonResourceRules[i], fldPath.Child("nonResourceRules").Index(i))...)
	}
	return allErrs
}

func validateSubject(subject *flowcontrolv1.Subject, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	forbidUser := func() {
		if subject.User != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("user"), "user is forbidden when subject kind is not 'User'"))
		}
	}
	forbidGroup := func() {
		if subject.Group != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("group"), "group is forbidden when subject kind is not 'Group'"))
		}
	}
	forbidSA := func() {
		if subject.ServiceAccount != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("serviceAccount"), "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"))
		}
	}
	switch subject.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		allErrs = append(allErrs, validateServiceAccountSubject(subject.ServiceAccount, fldPath.Child("serviceAccount"))...)
		forbidUser()
		forbidGroup()
	case flowcontrolv1.SubjectKindUser:
		if subject.User == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("user"), "user is required when subject kind is 'User'"))
		} else if len(subject.User.Name) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("user").Child("name"), ""))
		}
		forbidSA()
		forbidGroup()
	case flowcontrolv1.SubjectKindGroup:
		if subject.Group == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("group"), "group is required when subject kind is 'Group'"))
		} else if len(subject.Group.Name) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("group").Child("name"), ""))
		}
		forbidSA()
		forbidUser()
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), subject.Kind, sets.List(supportedSubjectKinds)))
	}
	return allErrs
}

func validateServiceAccountSubject(subject *flowcontrolv1.ServiceAccountSubject, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if subject == nil {
		return append(allErrs, field.Required(fldPath, "serviceAccount is required when subject kind is 'ServiceAccount'"))
	}
	if len(subject.Name) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	} else if subject.Name != flowcontrolv1.NameAll {
		for _, msg := range apimachineryvalidation.ValidateServiceAccountName(subject.Name, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("name"), subject.Name, msg))
		}
	}
	if len(subject.Namespace) > 0 {
		for _, msg := range apimachineryvalidation.ValidateNamespaceName(subject.Namespace, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("namespace"), subject.Namespace, msg))
		}
	} else {
		allErrs = append(allErrs, field.Required(fldPath.Child("namespace"), "must specify namespace for service account"))
	}
	return allErrs
}

// validateVerbs is the verb check shared by resource and non-resource rules.
func validateVerbs(verbs []string, fldPath *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(fldPath, "verbs must contain at least one value")}
	case hasWildcard(verbs):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(fldPath, verbs, "if '*' is present, must not specify other verbs")}
		}
	case !supportedVerbs.IsSuperset(sets.New(verbs...)):
		return field.ErrorList{field.NotSupported(fldPath, verbs, sets.List(supportedVerbs))}
	}
	return nil
}

func validateNonResourcePolicyRule(rule *flowcontrolv1.NonResourcePolicyRule, fldPath *field.Path) field.ErrorList {
	allErrs := validateVerbs(rule.Verbs, fldPath.Child("verbs"))
	switch {
	case len(rule.NonResourceURLs) == 0:
		allErrs = append(allErrs, field.Required(fldPath.Child("nonResourceURLs"), "nonResourceURLs must contain at least one value"))
	case hasWildcard(rule.NonResourceURLs):
		if len(rule.NonResourceURLs) > 1 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, u := range rule.NonResourceURLs {
			if err := validateNonResourceURLPath(u, fldPath.Child("nonResourceURLs").Index(i)); err != nil {
				allErrs = append(allErrs, err)
			}
		}
	}
	return allErrs
}

func validateResourcePolicyRule(rule *flowcontrolv1.ResourcePolicyRule, fldPath *field.Path) field.ErrorList {
	allErrs := validateVerbs(rule.Verbs, fldPath.Child("verbs"))
	if len(rule.APIGroups) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	} else if len(rule.APIGroups) > 1 && hasWildcard(rule.APIGroups) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("apiGroups"), rule.APIGroups, "if '*' is present, must not specify other api groups"))
	}
	if len(rule.Resources) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	} else if len(rule.Resources) > 1 && hasWildcard(rule.Resources) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("resources"), rule.Resources, "if '*' is present, must not specify other resources"))
	}
	switch {
	case len(rule.Namespaces) == 0 && !rule.ClusterScope:
		allErrs = append(allErrs, field.Required(fldPath.Child("namespaces"), "resource rules that are not cluster scoped must supply at least one namespace"))
	case hasWildcard(rule.Namespaces):
		if len(rule.Namespaces) > 1 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("namespaces"), rule.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, ns := range rule.Namespaces {
			for _, msg := range apimachineryvalidation.ValidateNamespaceName(ns, false) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("namespaces").Index(i), ns, "each member of this list must be '*' or a DNS-1123 label; "+msg))
			}
		}
	}
	return allErrs
}

// ValidatePriorityLevel returns what kube-apiserver would reject in pl
// (after defaulting it), as field errors; empty when the server accepts it.
// sharesField names the shares field as the object's version does
// (assuredConcurrencyShares in v1beta1 and v1beta2).
func ValidatePriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration, sharesField string) field.ErrorList {
	pl = engine.DefaultPriorityLevel(pl)
	allErrs := apimachineryvalidation.ValidateObjectMeta(&pl.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	// The roundtrip annotation is for v1beta3 only; conversion drops it.
	if _, ok := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; ok {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("metadata").Child("annotations"), fmt.Sprintf("annotation '%s' is forbidden", flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)))
	}
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validatePriorityLevelSpec(&pl.Spec, pl.Name, sharesField, specPath)...)
	allErrs = append(allErrs, validateMandatoryPriorityLevel(pl, specPath)...)
	allErrs = append(allErrs, validateConditionTypes(plConditionTypes(pl.Status.Conditions), field.NewPath("status"))...)
	return allErrs
}

func validateMandatoryPriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration, fldPath *field.Path) field.ErrorList {
	for _, mand := range bootstrap.MandatoryPriorityLevelConfigurations {
		if mand.Name != pl.Name {
			continue
		}
		want := engine.DefaultPriorityLevel(mand).Spec.DeepCopy()
		if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			// the admin may change spec.exempt of the exempt level, nothing else
			have := pl.Spec.DeepCopy()
			have.Exempt = want.Exempt
			if !apiequality.Semantic.DeepEqual(want, have) {
				return field.ErrorList{field.Invalid(fldPath, pl.Spec, fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name))}
			}
			return nil
		}
		if !apiequality.Semantic.DeepEqual(*want, pl.Spec) {
			return field.ErrorList{field.Invalid(fldPath, pl.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name))}
		}
	}
	return nil
}

func validatePriorityLevelSpec(spec *flowcontrolv1.PriorityLevelConfigurationSpec, name, sharesField string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if (name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("type"), spec.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := spec.Exempt; e != nil {
			if e.NominalConcurrencyShares != nil && *e.NominalConcurrencyShares < 0 {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("exempt").Child("nominalConcurrencyShares"), *e.NominalConcurrencyShares, "must be a non-negative integer"))
			}
			if e.LendablePercent != nil && (*e.LendablePercent < 0 || *e.LendablePercent > 100) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("exempt").Child("lendablePercent"), *e.LendablePercent, "must be between 0 and 100, inclusive"))
			}
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("exempt"), "must be nil if the type is Limited"))
		}
		if spec.Limited == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("limited"), "must not be empty when type is Limited"))
		} else {
			allErrs = append(allErrs, validateLimited(spec.Limited, sharesField, fldPath.Child("limited"))...)
		}
	default:
		if len(spec.Type) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("type"), ""))
		} else {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), spec.Type, sets.List(supportedPriorityLevelEnablement)))
		}
	}
	return allErrs
}

func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, sharesField string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if sharesField == "" {
		sharesField = "nominalConcurrencyShares"
	}
	if l.NominalConcurrencyShares != nil && *l.NominalConcurrencyShares < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child(sharesField), *l.NominalConcurrencyShares, "must be a non-negative integer"))
	}
	allErrs = append(allErrs, validateLimitResponse(l.LimitResponse, fldPath.Child("limitResponse"))...)
	if l.LendablePercent != nil && (*l.LendablePercent < 0 || *l.LendablePercent > 100) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("lendablePercent"), *l.LendablePercent, "must be between 0 and 100, inclusive"))
	}
	if l.BorrowingLimitPercent != nil && *l.BorrowingLimitPercent < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("borrowingLimitPercent"), *l.BorrowingLimitPercent, "if specified, must be a non-negative integer"))
	}
	return allErrs
}

func validateLimitResponse(lr flowcontrolv1.LimitResponse, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited"))
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited"))
		} else {
			allErrs = append(allErrs, validateQueuing(lr.Queuing, fldPath.Child("queuing"))...)
		}
	default:
		if len(lr.Type) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("type"), ""))
		} else {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), lr.Type, sets.List(supportedLimitResponseType)))
		}
	}
	return allErrs
}

func validateQueuing(q *flowcontrolv1.QueuingConfiguration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	if q.Queues <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("queues"), q.Queues, "must be positive"))
	} else if q.Queues > priorityLevelConfigurationQueuingMaxQueues {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", priorityLevelConfigurationQueuingMaxQueues)))
	}
	if q.HandSize <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("handSize"), q.HandSize, "must be positive"))
	} else if q.HandSize > q.Queues {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("handSize"), q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	} else if entropy := shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)); entropy > shufflesharding.MaxHashBits {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("handSize"), q.HandSize, fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
	}
	return allErrs
}

func fsConditionTypes(cs []flowcontrolv1.FlowSchemaCondition) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c.Type)
	}
	return out
}

func plConditionTypes(cs []flowcontrolv1.PriorityLevelConfigurationCondition) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c.Type)
	}
	return out
}

// validateConditionTypes: every status condition has a type, and no type
// appears twice.
func validateConditionTypes(types []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, t := range types {
		p := fldPath.Child("conditions").Index(i)
		if seen.Has(t) {
			allErrs = append(allErrs, field.Duplicate(p.Child("type"), t))
		}
		seen.Insert(t)
		if len(t) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("type"), ""))
		}
	}
	return allErrs
}

// validateNonResourceURLPath: a leading slash, no white space, no double
// slash, and "*" only as a "/*" suffix.
func validateNonResourceURLPath(path string, fldPath *field.Path) *field.Error {
	if len(path) == 0 {
		return field.Invalid(fldPath, path, "must not be empty")
	}
	if path == "/" {
		return nil
	}
	if !strings.HasPrefix(path, "/") {
		return field.Invalid(fldPath, path, "must start with slash")
	}
	if strings.Contains(path, " ") {
		return field.Invalid(fldPath, path, "must not contain white-space")
	}
	if strings.Contains(path, "//") {
		return field.Invalid(fldPath, path, "must not contain double slash")
	}
	if n := strings.Count(path, "*"); n > 1 || (n == 1 && path[len(path)-2:] != "/*") {
		return field.Invalid(fldPath, path, "wildcard can only do suffix matching")
	}
	return nil
}

func hasWildcard(xs []string) bool {
	for _, x := range xs {
		if x == "*" {
			return true
		}
	}
	return false
}
