package capacity

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// docsTable is the "Example Shuffle Sharding Configurations" table of the
// Kubernetes documentation (concepts/cluster-administration/flow-control.md):
// hand size, queues, then the probability that a mouse is crushed by 1, 4 and 16
// elephants.
var docsTable = []struct {
	hand, queues int
	p1, p4, p16  float64
}{
	{12, 32, 4.428838398950118e-09, 0.11431348830099144, 0.9935089607656024},
	{10, 32, 1.550093439632541e-08, 0.0626479840223545, 0.9753101519027554},
	{10, 64, 6.601827268370426e-12, 0.00045571320990370776, 0.49999929150089345},
	{9, 64, 3.6310049976037345e-11, 0.00045501212304112273, 0.4282314876454858},
	{8, 64, 2.25929199850899e-10, 0.0004886697053040446, 0.35935114681123076},
	{8, 128, 6.994461389026097e-13, 3.4055790161620863e-06, 0.02746173137155063},
	{7, 128, 1.0579122850901972e-11, 6.960839379258192e-06, 0.02406157386340147},
	{7, 256, 7.597695465552631e-14, 6.728547142019406e-08, 0.0006709661542533682},
	{6, 256, 2.7134626662687968e-12, 2.9516464018476436e-07, 0.0008895654642000348},
	{6, 512, 4.116062922897309e-14, 4.982983350480894e-09, 2.26025764343413e-05},
	{6, 1024, 6.337324016514285e-16, 8.09060164312957e-11, 4.517408062903668e-07},
}

func relErr(got, want float64) float64 {
	return math.Abs(got-want) / math.Abs(want)
}

func TestCrushProbabilityReproducesDocsTable(t *testing.T) {
	for _, row := range docsTable {
		for _, c := range []struct {
			elephants int
			want      float64
		}{{1, row.p1}, {4, row.p4}, {16, row.p16}} {
			got, err := CrushProbability(row.queues, row.hand, c.elephants)
			if err != nil {
				t.Fatalf("hand %d queues %d elephants %d: %v", row.hand, row.queues, c.elephants, err)
			}
			// 12 significant digits at least; the documentation's values were
			// computed in float64 and differ from the exact ones in the last ulp
			// or two.
			if e := relErr(got, c.want); e > 1e-12 {
				t.Errorf("hand %d queues %d elephants %d: got %v, docs say %v (relative error %.3g)",
					row.hand, row.queues, c.elephants, got, c.want, e)
			}
		}
	}
}

func TestCrushProbabilityClosedForms(t *testing.T) {
	tests := []struct {
		name                    string
		queues, hand, elephants int
		want                    float64
	}{
		// One elephant crushes the mouse only when both were dealt the very
		// same hand: 1/C(n,h).
		{name: "one elephant 64/8 is 1/C(64,8)", queues: 64, hand: 8, elephants: 1, want: 1 / 4426165368.0},
		{name: "no elephants never crush", queues: 64, hand: 8, elephants: 0, want: 0},
		// With a single queue everyone shares it.
		{name: "one queue", queues: 1, hand: 1, elephants: 1, want: 1},
		// Hand 1: the mouse is crushed unless every elephant missed its queue.
		{name: "hand one, 4 queues, 2 elephants", queues: 4, hand: 1, elephants: 2, want: 1 - 0.75*0.75},
		// Hand equal to queues: every hand is the whole deck.
		{name: "hand equals queues", queues: 5, hand: 5, elephants: 1, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CrushProbability(tt.queues, tt.hand, tt.elephants)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == 0 {
				if got != 0 {
					t.Fatalf("got %v, want 0", got)
				}
				return
			}
			if e := relErr(got, tt.want); e > 1e-15 {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCrushProbabilityAgreesWithMarkovChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 30; i++ {
		queues := 1 + rng.IntN(130)
		hand := 1 + rng.IntN(min(queues, 10))
		elephants := rng.IntN(17)
		a, err := CrushProbabilityRat(queues, hand, elephants)
		if err != nil {
			t.Fatal(err)
		}
		b, err := crushProbabilityMarkov(queues, hand, elephants)
		if err != nil {
			t.Fatal(err)
		}
		if a.Cmp(b) != 0 {
			t.Fatalf("queues %d hand %d elephants %d: inclusion-exclusion %s != union chain %s",
				queues, hand, elephants, a.FloatString(20), b.FloatString(20))
		}
	}
}

func TestCrushProbabilityErrors(t *testing.T) {
	tests := []struct {
		name                    string
		queues, hand, elephants int
		wantErr                 string
	}{
		{"zero queues", 0, 1, 1, "queues must be between 1"},
		{"hand above queues", 4, 5, 1, "hand size must be between 1 and the number of queues (4), not 5"},
		{"zero hand", 4, 0, 1, "hand size must be between 1"},
		{"negative elephants", 4, 2, -1, "number of elephants"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CrushProbability(tt.queues, tt.hand, tt.elephants)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func BenchmarkCrushProbability(b *testing.B) {
	b.Run("inclusion-exclusion/128x6x16", func(b *testing.B) {
		for b.Loop() {
			_, _ = CrushProbabilityRat(128, 6, 16)
		}
	})
	b.Run("union-chain/128x6x16", func(b *testing.B) {
		for b.Loop() {
			_, _ = crushProbabilityMarkov(128, 6, 16)
		}
	})
}
