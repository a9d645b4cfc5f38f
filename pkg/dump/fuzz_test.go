package dump

import (
	"os"
	"path/filepath"
	"testing"
)

// addSeeds adds every fixture of the given dump to the fuzz corpus.
func addSeeds(f *testing.F, file string) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "dump", "*", file))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("PriorityLevelName, x\n"))
	f.Add([]byte("PriorityLevelName,ActiveQueues,IsIdle,IsQuiescing,WaitingRequests,ExecutingRequests\na,1,true,false,0,0\n"))
}

// The fuzz targets check that no input panics and that whatever parses is a
// fixpoint of Format∘Parse: rendering and re-parsing never changes it.

func FuzzParsePriorityLevels(f *testing.F) {
	addSeeds(f, "dump_priority_levels.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		a, b2, err := roundTripPL(b)
		if _, ok := err.(*reparseError); ok {
			t.Fatal(err)
		}
		if err == nil && a != b2 {
			t.Fatalf("not a fixpoint:\n%s\n---\n%s", a, b2)
		}
	})
}

func FuzzParseQueues(f *testing.F) {
	addSeeds(f, "dump_queues.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		a, b2, err := roundTripQ(b)
		if _, ok := err.(*reparseError); ok {
			t.Fatal(err)
		}
		if err == nil && a != b2 {
			t.Fatalf("not a fixpoint:\n%s\n---\n%s", a, b2)
		}
	})
}

func FuzzParseRequests(f *testing.F) {
	addSeeds(f, "dump_requests.txt")
	// rows cut after a request detail (the documentation's 1.20 example)
	f.Add([]byte("PriorityLevelName, FlowSchemaName, QueueIndex, RequestIndexInQueue, FlowDistingsher, ArriveTime, UserName, Verb, APIPath, Namespace,\n" +
		"system, system-nodes, 12, 0, u, 2020-07-23T15:31:03.583823404Z, u, create, /api/v1/namespaces/s/configmaps,\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, b2, err := roundTripR(b)
		if _, ok := err.(*reparseError); ok {
			t.Fatal(err)
		}
		if err == nil && a != b2 {
			t.Fatalf("not a fixpoint:\n%s\n---\n%s", a, b2)
		}
	})
}
