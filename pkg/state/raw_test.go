package state

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func field(name string) string { return filepath.Join("..", "..", "testdata", "field", name) }

// TestLoadRawInput: --from a raw dump loads its state and says in one note
// what it held and lacked; a command that classifies requests refuses an
// input without FlowSchemas instead of routing everything to catch-all
// (issue 26, D3), and names the FlowSchemas its request dump shows.
func TestLoadRawInput(t *testing.T) {
	ctx := context.Background()
	o := &Options{From: field("docs-dump_requests-details.txt"), inputs: Config | Instances}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	st, err := o.Load(ctx, Request{Parts: 0xff})
	if err != nil {
		t.Fatal(err)
	}
	if !st.NoObjects || len(st.Snapshots) != 1 || len(st.Snapshots[0].RequestDump) != 3 {
		t.Fatalf("NoObjects %v, %d snapshots", st.NoObjects, len(st.Snapshots))
	}
	var raw []string
	for _, n := range st.Notes {
		if strings.Contains(n, "as raw input") {
			raw = append(raw, n)
		}
	}
	if len(raw) != 1 || !strings.Contains(raw[0], "no FlowSchemas or PriorityLevelConfigurations") {
		t.Errorf("notes %q: want one note on the raw input", st.Notes)
	}

	o = &Options{From: field("docs-dump_requests-details.txt"), inputs: Config | Instances}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	_, err = o.Load(ctx, Request{Parts: 0xff, NeedObjects: "requests cannot be classified"})
	if err == nil || !strings.Contains(err.Error(), "holds no FlowSchemas or PriorityLevelConfigurations, so requests cannot be classified") ||
		!strings.Contains(err.Error(), "FlowSchema exempt, service-accounts") {
		t.Errorf("err = %v", err)
	}

	// With -f, the objects given are what requests are classified against.
	fs := filepath.Join(t.TempDir(), "fs.yaml")
	os.WriteFile(fs, []byte(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: batch}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse: {type: Reject}
`), 0o644)
	o = &Options{From: field("docs-dump_queues.txt"), Files: []string{fs}, inputs: Config | Instances}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	st, err = o.Load(ctx, Request{NeedObjects: "requests cannot be classified"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(st.Notes, "\n"), "only the -f objects and the mandatory ones are used") {
		t.Errorf("notes %q", st.Notes)
	}
}

// TestLoadRawStdin: --from - reads the stdin the command passes.
func TestLoadRawStdin(t *testing.T) {
	f, err := os.Open(field("eks-rejected-inqueue.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := &Options{From: "-", inputs: Instances}
	o.SetStdin(f)
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	st, err := o.Load(context.Background(), Request{Parts: 0xff})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Live) != 1 || st.Live[0].Metrics == nil || o.Source.Describe() != "raw input standard input" {
		t.Errorf("live %d, source %q", len(st.Live), o.Source.Describe())
	}
	if err := (&Options{From: "-", Files: []string{"a", "-"}}).Validate(); err == nil || !strings.Contains(err.Error(), "both read standard input") {
		t.Errorf("--from - with -f -: %v", err)
	}
}
