package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	upstream "k8s.io/apiserver/pkg/util/shufflesharding"
)

// TestHashFlowIDVectors checks the flow hash and hand against vectors taken
// from the real hashFlowID (k8s.io/apiserver/pkg/util/flowcontrol/
// apf_controller.go) and shufflesharding.Dealer (the hands are re-checked
// here against upstream's Dealer too).
func TestHashFlowIDVectors(t *testing.T) {
	tests := []struct {
		fs, dist   string
		deck, hand int
		wantHash   uint64
		wantHand   []int
	}{
		{"global-default", "alice", 128, 6, 0xf4de3bd42ccdf6b7, []int{55, 62, 126, 125, 105, 1}},
		{"service-accounts", "system:serviceaccount:default:default", 128, 6, 0xba4dd08bd6ad597f, []int{127, 66, 18, 15, 64, 74}},
		{"kube-system-service-accounts", "kube-system", 128, 6, 0x505593ddbffe965c, []int{92, 95, 124, 69, 84, 46}},
		{"kube-system-service-accounts", "", 128, 6, 0x660fdae26e170951, []int{81, 71, 107, 50, 116, 127}},
		{"system-nodes", "system:node:node1", 64, 6, 0x69b9c3024901276a, []int{42, 10, 53, 35, 9, 34}},
		{"system-node-high", "system:node:node1", 64, 6, 0x990f38d9c0c5740d, []int{13, 26, 59, 4, 47, 60}},
		{"system-leader-election", "system:kube-controller-manager", 16, 4, 0xaa2247e4bfbcc3a0, []int{0, 8, 4, 3}},
		{"kube-controller-manager", "kube-system", 128, 6, 0x1b149fd670be8358, []int{88, 53, 21, 91, 7, 17}},
	}
	for _, tt := range tests {
		t.Run(tt.fs+"/"+tt.dist, func(t *testing.T) {
			h := HashFlowID(tt.fs, tt.dist)
			if h != tt.wantHash {
				t.Fatalf("HashFlowID(%q, %q) = %#x, want %#x", tt.fs, tt.dist, h, tt.wantHash)
			}
			d, err := NewDealer(tt.deck, tt.hand)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.DealIntoHand(h, nil); !slices.Equal(got, tt.wantHand) {
				t.Errorf("hand = %v, want %v", got, tt.wantHand)
			}
			ud, _ := upstream.NewDealer(tt.deck, tt.hand)
			if got := ud.DealIntoHand(h, nil); !slices.Equal(got, tt.wantHand) {
				t.Errorf("upstream hand = %v, want %v (vector is stale)", got, tt.wantHand)
			}
		})
	}
}

// TestNewDealerValidation compares acceptance and error text with upstream on
// the edges of each rule.
func TestNewDealerValidation(t *testing.T) {
	tests := []struct {
		name       string
		deck, hand int
		wantErr    string
	}{
		{"zero deck", 0, 1, "deckSize 0 or handSize 1 is not positive"},
		{"negative hand", 4, -1, "deckSize 4 or handSize -1 is not positive"},
		{"hand above deck", 3, 4, "handSize 4 is greater than deckSize 3"},
		{"deck too large", 1<<26 + 1, 1, "deckSize 67108865 is impractically large"},
		{"largest deck", 1 << 26, 2, ""},
		{"entropy 1024/7", 1024, 7, "required entropy bits of deckSize 1024 and handSize 7 is greater than 60"},
		{"entropy 15/15 fits", 15, 15, ""},
		{"entropy 16/16 too much", 16, 16, "required entropy bits of deckSize 16 and handSize 16 is greater than 60"},
		{"one card", 1, 1, ""},
		{"defaults 128/6", 128, 6, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewDealer(tt.deck, tt.hand)
			_, uerr := upstream.NewDealer(tt.deck, tt.hand)
			if errString(err) != tt.wantErr {
				t.Errorf("err = %q, want %q", errString(err), tt.wantErr)
			}
			if errString(err) != errString(uerr) {
				t.Errorf("err = %q, upstream %q", errString(err), errString(uerr))
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// dealCase draws a random (deck, hand, hash): hands 1..15, decks
// log-uniform up to 1<<26 (so small decks, where collisions of remainders
// are common, are well represented), and hashes that are sometimes tiny or
// have the top bits set.
func dealCase(r *rand.Rand) (deck, hand int, hash uint64) {
	hand = 1 + r.IntN(maxHandSize)
	deck = hand + int(r.Int64N(int64(1)<<r.IntN(27)))
	switch r.IntN(4) {
	case 0:
		hash = r.Uint64() >> r.IntN(64)
	case 1:
		hash = ^uint64(0) - uint64(r.IntN(1000))
	default:
		hash = r.Uint64()
	}
	return deck, hand, hash
}

// TestDealDifferential deals 1,000,000 random (hash, deck, hand) cases with
// valid sizes through both implementations and requires identical hands;
// the invalid sizes drawn on the way must give identical errors.
func TestDealDifferential(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 50_000
	}
	r := rand.New(rand.NewPCG(3, 1))
	var mine, theirs []int
	valid, invalid := 0, 0
	for valid < n {
		deck, hand, hash := dealCase(r)
		d, err := NewDealer(deck, hand)
		ud, uerr := upstream.NewDealer(deck, hand)
		if errString(err) != errString(uerr) {
			t.Fatalf("NewDealer(%d, %d): err %q, upstream %q", deck, hand, errString(err), errString(uerr))
		}
		if err != nil {
			invalid++
			continue
		}
		valid++
		mine = d.DealIntoHand(hash, mine)
		theirs = ud.DealIntoHand(hash, theirs)
		if !slices.Equal(mine, theirs) {
			t.Fatalf("deck %d hand %d hash %#x: got %v, upstream %v", deck, hand, hash, mine, theirs)
		}
	}
	t.Logf("%d valid cases with hands identical to upstream; %d invalid size pairs with identical errors", valid, invalid)
}

// FuzzDeal checks any (deck, hand, hash) against upstream and the dealing
// invariants (cards distinct and in range).
func FuzzDeal(f *testing.F) {
	f.Add(128, 6, uint64(0xf4de3bd42ccdf6b7))
	f.Add(1, 1, uint64(0))
	f.Add(15, 15, ^uint64(0))
	f.Add(1<<26, 2, uint64(1)<<63)
	f.Add(0, 0, uint64(0))
	f.Fuzz(func(t *testing.T, deck, hand int, hash uint64) {
		d, err := NewDealer(deck, hand)
		ud, uerr := upstream.NewDealer(deck, hand)
		if errString(err) != errString(uerr) {
			t.Fatalf("NewDealer(%d, %d): err %q, upstream %q", deck, hand, errString(err), errString(uerr))
		}
		if err != nil {
			return
		}
		got := d.DealIntoHand(hash, nil)
		want := ud.DealIntoHand(hash, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("got %v, upstream %v", got, want)
		}
		seen := map[int]bool{}
		for _, c := range got {
			if c < 0 || c >= deck || seen[c] {
				t.Fatalf("bad hand %v for deck %d", got, deck)
			}
			seen[c] = true
		}
	})
}

func BenchmarkDealIntoHand(b *testing.B) {
	for _, sz := range [][2]int{{64, 6}, {128, 6}, {1 << 20, 3}} {
		d, _ := NewDealer(sz[0], sz[1])
		ud, _ := upstream.NewDealer(sz[0], sz[1])
		buf := make([]int, 0, sz[1])
		b.Run(fmt.Sprintf("engine/%dx%d", sz[0], sz[1]), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				buf = d.DealIntoHand(uint64(i)*0x9e3779b97f4a7c15, buf)
			}
		})
		b.Run(fmt.Sprintf("upstream/%dx%d", sz[0], sz[1]), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				buf = ud.DealIntoHand(uint64(i)*0x9e3779b97f4a7c15, buf)
			}
		})
	}
}
