package loadgen

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestSetupKeepsEdits: make demo's load, run again after a user changed the
// demo's level, keeps the change (KeepEdits); it used to put the level
// back first, so that "apply a change, run the load, watch" showed the old
// configuration at work. Without KeepEdits, Setup puts it back, as the
// recordings and tests need.
func TestSetupKeepsEdits(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	o := SetupOptions{RejectUser: "load-8", ConfigMaps: 2, ConfigMapBytes: 16, KeepEdits: true}
	if err := Setup(ctx, c, o); err != nil {
		t.Fatal(err)
	}
	plcs := c.FlowcontrolV1().PriorityLevelConfigurations()
	queueLength := func() int32 {
		t.Helper()
		pl, err := plcs.Get(ctx, Level, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pl.Spec.Limited.LimitResponse.Queuing.QueueLengthLimit
	}
	made := queueLength()
	pl, err := plcs.Get(ctx, Level, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pl.Spec.Limited.LimitResponse.Queuing.QueueLengthLimit = made + 3
	if _, err := plcs.Update(ctx, pl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Setup(ctx, c, o); err != nil {
		t.Fatal(err)
	}
	if got := queueLength(); got != made+3 {
		t.Errorf("with KeepEdits, the edited queue length %d became %d", made+3, got)
	}
	o.KeepEdits = false
	if err := Setup(ctx, c, o); err != nil {
		t.Fatal(err)
	}
	if got := queueLength(); got != made {
		t.Errorf("without KeepEdits, the queue length is %d, want the load's %d", got, made)
	}
}
