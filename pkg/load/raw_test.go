package load

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

// TestLoadRawDirObjects: the FlowSchema and PriorityLevelConfiguration
// files of a raw --from directory (kueue's published objects, beside the
// documentation's request dump) are used as a bundle's objects, where they
// were listed as "ignored" and the input refused for holding no objects;
// a YAML file of other kinds (kueue's APIService) is still ignored
// (issue 47).
func TestLoadRawDirObjects(t *testing.T) {
	dir := t.TempDir()
	copyFile := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kueue := filepath.Join("..", "..", "testdata", "lint", "public", "kueue")
	copyFile(field("docs-dump_requests-details.txt"), "requests.txt")
	copyFile(filepath.Join(kueue, "flowschema.yaml"), "flowschema.yaml")
	copyFile(filepath.Join(kueue, "prioritylevelconfigurations.yaml"), "plc.yaml")
	copyFile(filepath.Join(kueue, "apiservice_v1beta2.yaml"), "apiservice.yaml")
	o := &Options{From: dir, inputs: Config | Instances}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	st, err := o.Load(context.Background(), Request{Parts: 0xff, NeedObjects: "requests cannot be classified"})
	if err != nil {
		t.Fatal(err)
	}
	if st.NoObjects || len(st.BaseFlowSchemas) != 1 || st.BaseFlowSchemas[0].Name != "visibility" || len(st.BasePriorityLevels) != 1 || st.BasePriorityLevels[0].Name != "visibility" {
		t.Errorf("NoObjects %v, flow schemas %d, levels %d", st.NoObjects, len(st.BaseFlowSchemas), len(st.BasePriorityLevels))
	}
	notes := strings.Join(st.Notes, "\n")
	_, ignored, _ := strings.Cut(notes, "; ignored ")
	ignored, _, _ = strings.Cut(ignored, "\n")
	if !strings.Contains(notes, "objects from flowschema.yaml, plc.yaml: 1 FlowSchema, 1 PriorityLevelConfiguration") || ignored != "apiservice.yaml (no FlowSchema or PriorityLevelConfiguration in it)" {
		t.Errorf("notes %q", st.Notes)
	}
}

// TestLoadRawDirTypedLists: a bundle's flowschemas.json and
// prioritylevelconfigurations.json beside its metrics in a raw directory
// (testdata/field/built/bundle-files-raw) are the apiserver's typed lists,
// whose items carry no kind: their 13 FlowSchemas and 10 levels are the
// input's objects, where both files were "ignored" and the input said to
// hold no objects; the files read for nothing are named with why.
func TestLoadRawDirTypedLists(t *testing.T) {
	o := &Options{From: field(filepath.Join("built", "bundle-files-raw")), inputs: Config | Instances}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	st, err := o.Load(context.Background(), Request{Parts: 0xff, NeedObjects: "requests cannot be classified"})
	if err != nil {
		t.Fatal(err)
	}
	if st.NoObjects || len(st.BaseFlowSchemas) != 13 || len(st.BasePriorityLevels) != 10 {
		t.Errorf("NoObjects %v, flow schemas %d, levels %d", st.NoObjects, len(st.BaseFlowSchemas), len(st.BasePriorityLevels))
	}
	notes := strings.Join(st.Notes, "\n")
	for _, want := range []string{"objects from flowschemas.json, prioritylevelconfigurations.json: 13 FlowSchemas, 10 PriorityLevelConfigurations",
		"ignored metrics-0.time (neither a debug dump, /metrics text, nor a .yaml, .yml or .json file of objects), version.json (no FlowSchema or PriorityLevelConfiguration in it)"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", st.Notes, want)
		}
	}
}

// TestLoadRawDirFlowSchemasOnly: the EKS guide's limits beside its
// FlowSchema of catch-all, no PriorityLevelConfiguration
// (testdata/field/built/metrics-and-flowschema). kube-apiserver always
// creates the mandatory levels, so they are taken as the input's levels
// (the FlowSchema is not dangling), and a note says that the levels are
// those alone; an input with levels gets none added (issue 47's field
// test, N12).
func TestLoadRawDirFlowSchemasOnly(t *testing.T) {
	o := &Options{From: field(filepath.Join("built", "metrics-and-flowschema")), inputs: Config | Instances}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	st, err := o.Load(context.Background(), Request{Parts: 0xff, NeedObjects: "requests cannot be classified"})
	if err != nil {
		t.Fatal(err)
	}
	var levels []string
	for _, pl := range st.BasePriorityLevels {
		levels = append(levels, pl.Name)
	}
	if strings.Join(levels, ",") != "catch-all,exempt" || len(st.BaseFlowSchemas) != 1 {
		t.Errorf("levels %v, flow schemas %d", levels, len(st.BaseFlowSchemas))
	}
	if notes := strings.Join(st.Notes, "\n"); !strings.Contains(notes, "the input holds FlowSchemas but no PriorityLevelConfigurations: the levels are the mandatory exempt and catch-all") {
		t.Errorf("notes %q", st.Notes)
	}
	if d := st.Config().Dangling; len(d) != 0 {
		t.Errorf("dangling %v", d)
	}
}
