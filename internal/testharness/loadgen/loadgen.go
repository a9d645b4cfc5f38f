// Package loadgen drives a kube-apiserver into APF queueing and 429 rejections on
// purpose, for e2e tests and the demo.
//
// Setup creates a deliberately tiny priority level ("apf-load": one seat, no
// lending or borrowing, few short queues) and a FlowSchema routing the load
// identities there by user, a Reject level ("apf-load-reject") for one of them,
// and a namespace of ConfigMaps that makes each LIST take a measurable time.
// Run then sends bounded, simultaneous bursts from several flows (each flow is
// one identity) and reports what the server answered: status codes, Retry-After
// values and the X-Kubernetes-PF-* headers resolved to names. Everything is
// bounded by a request count and a duration: Run stops by itself. RunPlan
// sends a seeded open-loop plan, from goroutines or from many client
// processes (PlanOptions.Processes, RunChildIfAsked).
package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Names of the objects Setup creates.
const (
	Namespace   = "apf-load"
	Level       = "apf-load"
	FlowSchema  = "apf-load"
	RejectLevel = "apf-load-reject"
	RejectFlow  = "apf-load-reject"
	// Group is the group every load identity belongs to.
	Group = "apf-load"
)

// SetupOptions shapes the objects Setup creates.
type SetupOptions struct {
	// RejectUser is routed to the Reject level; empty means no Reject level.
	RejectUser string
	// ConfigMaps and ConfigMapBytes size the LIST every request makes.
	// Zero means 100 ConfigMaps of 32 KiB.
	ConfigMaps     int
	ConfigMapBytes int
	// KeepEdits creates the priority levels and FlowSchemas that are
	// missing and leaves those that exist as they are: make demo's load,
	// run again after a user changed its configuration to see the change
	// at work, used to put the configuration back first.
	KeepEdits bool
}

// Setup creates (or updates) the priority levels, FlowSchemas, namespace,
// ConfigMaps and RBAC the load needs. admin must be allowed to do all of that.
func Setup(ctx context.Context, admin kubernetes.Interface, o SetupOptions) error {
	if o.ConfigMaps == 0 {
		o.ConfigMaps = 100
	}
	if o.ConfigMapBytes == 0 {
		o.ConfigMapBytes = 32 << 10
	}
	pls, fss := SetupObjects(o)
	if err := applyObjects(ctx, admin, pls, fss, !o.KeepEdits); err != nil {
		return err
	}

	core := admin.CoreV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", Namespace, err)
	}
	payload := strings.Repeat("x", o.ConfigMapBytes)
	for i := 0; i < o.ConfigMaps; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%03d", i)}, Data: map[string]string{"payload": payload}}
		if _, err := core.ConfigMaps(Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("configmap %s: %w", cm.Name, err)
		}
	}
	rb := admin.RbacV1()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "apf-load-reader", Namespace: Namespace},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}},
	}
	if _, err := rb.Roles(Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("role: %w", err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "apf-load-reader", Namespace: Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: "rbac.authorization.k8s.io", Name: Group}},
	}
	if _, err := rb.RoleBindings(Namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("role binding: %w", err)
	}
	return nil
}

// SetupObjects are the priority levels and FlowSchemas Setup creates.
func SetupObjects(o SetupOptions) ([]*flowcontrolv1.PriorityLevelConfiguration, []*flowcontrolv1.FlowSchema) {
	pls := []*flowcontrolv1.PriorityLevelConfiguration{{
		ObjectMeta: metav1.ObjectMeta{Name: Level},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				// One share of the ~250 the defaults hold: a nominal limit of 1 seat
				// on a small server, and no lending or borrowing to blur it.
				NominalConcurrencyShares: ptr.To[int32](1),
				LendablePercent:          ptr.To[int32](0),
				BorrowingLimitPercent:    ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{
					Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{
						Queues: 8, HandSize: 2, QueueLengthLimit: 3,
					},
				},
			},
		},
	}}
	fss := []*flowcontrolv1.FlowSchema{{
		ObjectMeta: metav1.ObjectMeta{Name: FlowSchema},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: Level},
			MatchingPrecedence:         500,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: Group}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					Namespaces: []string{"*"}, ClusterScope: true,
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}}
	if o.RejectUser != "" {
		pls = append(pls, &flowcontrolv1.PriorityLevelConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: RejectLevel},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
				Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
					NominalConcurrencyShares: ptr.To[int32](1),
					LendablePercent:          ptr.To[int32](0),
					BorrowingLimitPercent:    ptr.To[int32](0),
					LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
				},
			},
		})
		rej := fss[0].DeepCopy()
		rej.Name = RejectFlow
		rej.Spec.PriorityLevelConfiguration.Name = RejectLevel
		rej.Spec.MatchingPrecedence = 400
		rej.Spec.Rules[0].Subjects = []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: o.RejectUser}}}
		fss = append(fss, rej)
	}
	return pls, fss
}

// Apply creates or updates priority levels and FlowSchemas (their specs).
func Apply(ctx context.Context, admin kubernetes.Interface, pls []*flowcontrolv1.PriorityLevelConfiguration, fss []*flowcontrolv1.FlowSchema) error {
	return applyObjects(ctx, admin, pls, fss, true)
}

// applyObjects creates priority levels and FlowSchemas and, with update,
// updates the specs of those that exist.
func applyObjects(ctx context.Context, admin kubernetes.Interface, pls []*flowcontrolv1.PriorityLevelConfiguration, fss []*flowcontrolv1.FlowSchema, update bool) error {
	fc := admin.FlowcontrolV1()
	for _, pl := range pls {
		if err := apply(update, func() error {
			_, err := fc.PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{})
			return err
		}, func() error {
			cur, err := fc.PriorityLevelConfigurations().Get(ctx, pl.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec = pl.Spec
			mergeAnnotations(&cur.ObjectMeta, pl.Annotations)
			_, err = fc.PriorityLevelConfigurations().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("priority level %s: %w", pl.Name, err)
		}
	}
	for _, fs := range fss {
		if err := apply(update, func() error {
			_, err := fc.FlowSchemas().Create(ctx, fs, metav1.CreateOptions{})
			return err
		}, func() error {
			cur, err := fc.FlowSchemas().Get(ctx, fs.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec = fs.Spec
			mergeAnnotations(&cur.ObjectMeta, fs.Annotations)
			_, err = fc.FlowSchemas().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("flow schema %s: %w", fs.Name, err)
		}
	}
	return nil
}

// mergeAnnotations sets the annotations an applied object carries (such
// as apf.kubernetes.io/autoupdate-spec: "false" on a suggested object
// whose spec it changes) on the object updated.
func mergeAnnotations(m *metav1.ObjectMeta, a map[string]string) {
	for k, v := range a {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[k] = v
	}
}

// apply creates an object and, where it exists, updates it with update,
// or leaves it as it is.
func apply(update bool, create, updateFn func() error) error {
	err := create()
	if apierrors.IsAlreadyExists(err) {
		err = nil
		if update {
			err = updateFn()
		}
	}
	return err
}

// Options bounds a load run.
type Options struct {
	// Flows are the identities sending load, one flow each.
	Flows []*rest.Config
	// Burst is how many requests each flow sends at once per round.
	Burst int
	// Rounds is the maximum number of rounds; Duration the maximum run time.
	Rounds   int
	Duration time.Duration
	// Pause between rounds.
	Pause time.Duration
	// Path is requested with GET; default lists the load namespace's ConfigMaps.
	// RequestTimeout, when set, is sent as ?timeout= (it also shortens APF's
	// queue wait limit to a quarter of it).
	Path           string
	RequestTimeout time.Duration
	// Names resolves PF header UIDs to object names (see Names).
	Names map[string]string
}

// Result is one response.
type Result struct {
	Flow         int
	Status       int
	RetryAfter   string
	FlowSchema   string
	Priority     string
	Err          error
	ResponseTime time.Duration
}

// Report summarises a run.
type Report struct {
	Sent        int
	Errors      int
	Rounds      int
	Elapsed     time.Duration
	ByStatus    map[int]int
	RetryAfter  map[string]int
	ByPriority  map[string]int
	ByFlowSched map[string]int
	FirstError  error
}

// add counts one response.
func (r *Report) add(res Result) {
	r.Sent++
	if res.Err != nil {
		r.Errors++
		if r.FirstError == nil {
			r.FirstError = res.Err
		}
		return
	}
	r.ByStatus[res.Status]++
	if res.RetryAfter != "" {
		r.RetryAfter[res.RetryAfter]++
	}
	r.ByPriority[res.Priority]++
	r.ByFlowSched[res.FlowSchema]++
}

// Rejected is the number of 429 responses.
func (r *Report) Rejected() int { return r.ByStatus[http.StatusTooManyRequests] }

// Names lists FlowSchemas and priority levels and maps their UIDs to
// "flowschema/NAME" and "prioritylevel/NAME".
func Names(ctx context.Context, admin kubernetes.Interface) (map[string]string, error) {
	names := map[string]string{}
	fss, err := admin.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, fs := range fss.Items {
		names[string(fs.UID)] = fs.Name
	}
	pls, err := admin.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, pl := range pls.Items {
		names[string(pl.UID)] = pl.Name
	}
	return names, nil
}

// Run sends the load and returns what the server answered. It stops after
// Rounds rounds or Duration, whichever comes first, or when ctx is done.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Burst <= 0 {
		o.Burst = 10
	}
	if o.Rounds <= 0 {
		o.Rounds = 1
	}
	if o.Duration <= 0 {
		o.Duration = time.Minute
	}
	if o.Path == "" {
		o.Path = "/api/v1/namespaces/" + Namespace + "/configmaps"
	}
	if o.RequestTimeout > 0 {
		sep := "?"
		if strings.Contains(o.Path, "?") {
			sep = "&"
		}
		o.Path += fmt.Sprintf("%stimeout=%ds", sep, int(o.RequestTimeout.Seconds()))
	}
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()

	clients := make([]*http.Client, len(o.Flows))
	for i, cfg := range o.Flows {
		rt, err := rest.TransportFor(cfg)
		if err != nil {
			return nil, err
		}
		clients[i] = &http.Client{Transport: rt, Timeout: 2 * time.Minute}
	}
	rep := &Report{ByStatus: map[int]int{}, RetryAfter: map[string]int{}, ByPriority: map[string]int{}, ByFlowSched: map[string]int{}}
	start := time.Now()
	for round := 0; round < o.Rounds && ctx.Err() == nil; round++ {
		results := make(chan Result, len(o.Flows)*o.Burst)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for f := range o.Flows {
			for b := 0; b < o.Burst; b++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-gate
					results <- send(ctx, clients[f], o.Flows[f].Host+o.Path, f, o.Names)
				}()
			}
		}
		close(gate) // every request of the round leaves at once
		wg.Wait()
		close(results)
		for r := range results {
			rep.add(r)
		}
		rep.Rounds++
		select {
		case <-ctx.Done():
		case <-time.After(o.Pause):
		}
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

func send(ctx context.Context, c *http.Client, url string, flow int, names map[string]string) Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Result{Flow: flow, Err: err}
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return Result{Flow: flow, Err: err}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	name := func(uid string) string {
		if n, ok := names[uid]; ok {
			return n
		}
		return uid
	}
	return Result{
		Flow:         flow,
		Status:       resp.StatusCode,
		RetryAfter:   resp.Header.Get("Retry-After"),
		FlowSchema:   name(resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)),
		Priority:     name(resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)),
		ResponseTime: time.Since(start),
	}
}

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "sent %d requests in %d rounds over %s (%d transport errors)\n", r.Sent, r.Rounds, r.Elapsed.Round(time.Millisecond), r.Errors)
	if r.FirstError != nil {
		fmt.Fprintf(w, "  first error: %v\n", r.FirstError)
	}
	printCounts(w, "status", intKeys(r.ByStatus))
	printCounts(w, "Retry-After", r.RetryAfter)
	printCounts(w, "X-Kubernetes-PF-PriorityLevel", r.ByPriority)
	printCounts(w, "X-Kubernetes-PF-FlowSchema", r.ByFlowSched)
}

func intKeys(m map[int]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[fmt.Sprint(k)] = v
	}
	return out
}

func printCounts(w io.Writer, title string, m map[string]int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		label := k
		if label == "" {
			label = "(none)"
		}
		parts = append(parts, fmt.Sprintf("%s=%d", label, m[k]))
	}
	fmt.Fprintf(w, "  %-30s %s\n", title+":", strings.Join(parts, " "))
}

// WaitForLevel waits until the apiserver has digested the objects Setup
// created: a request from flow is answered with the load level's headers. The
// server's configuration controller works asynchronously, so the first
// requests after Setup may still land elsewhere.
func WaitForLevel(ctx context.Context, flow *rest.Config, names map[string]string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		rep, err := Run(ctx, Options{Flows: []*rest.Config{flow}, Burst: 1, Rounds: 1, Duration: time.Minute, Names: names})
		if err != nil {
			return err
		}
		if rep.ByPriority[Level] > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not classify load into %s within %s", Level, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
