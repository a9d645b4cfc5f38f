package fairqueue

import "testing"

// sums is a level's TotalWorkSum per queue, for Shard.ChooseQueue.
type sums []SeatSeconds

func (s sums) WorkSum(q int) SeatSeconds { return s[q] }

// TestShardChooseQueue pins shuffleShardLocked's rules on a hand of two:
// between queues of equal work the scan's first wins, and the scan starts
// at enqueues%handSize, which every choice turns and Unchoose turns back;
// a queue of strictly less work wins wherever the scan starts.
func TestShardChooseQueue(t *testing.T) {
	sh, err := NewShard(8, 2)
	if err != nil {
		t.Fatal(err)
	}
	const hash = 0x9e3779b97f4a7c15
	hand := sh.DealIntoHand(hash, nil)
	if len(hand) != 2 || hand[0] == hand[1] {
		t.Fatalf("hand %v, want two queues", hand)
	}
	equal := make(sums, 8)
	for i, want := range []int{hand[0], hand[1], hand[0]} {
		if got := sh.ChooseQueue(hash, equal); got != want {
			t.Errorf("choice %d over equal queues: queue %d, want %d", i, got, want)
		}
	}
	// the third choice taken back, the next scan starts where it did
	sh.Unchoose()
	if got := sh.ChooseQueue(hash, equal); got != hand[0] {
		t.Errorf("after Unchoose: queue %d, want %d", got, hand[0])
	}
	// three 3 ms seat-times added and two removed weigh exactly one: no
	// rounding parts queues of equal work
	one, _ := TotalWork(1, 0, 0)
	w := make(sums, 8)
	w[hand[0]] = one + one + one - one - one
	w[hand[1]] = one
	if got := sh.ChooseQueue(hash, w); got != hand[1] {
		t.Errorf("over equal sums from the scan's start at hand[1]: queue %d, want %d", got, hand[1])
	}
	w[hand[0]] = one + 1
	for i := range 2 { // from either start
		if got := sh.ChooseQueue(hash, w); got != hand[1] {
			t.Errorf("choice %d with hand[1] lighter: queue %d, want %d", i, got, hand[1])
		}
	}
	if !CanAccommodateSeats(false, 2, 3, 1, 1) || CanAccommodateSeats(false, 2, 3, 2, 2) {
		t.Error("a level of 3 seats takes 2 more with 1 in use, not with 2")
	}
	if !CanAccommodateSeats(false, 5, 3, 0, 0) || CanAccommodateSeats(false, 5, 3, 1, 1) {
		t.Error("a request wider than its level runs alone: only when nothing executes")
	}
	if !CanAccommodateSeats(true, 100, 0, 50, 50) {
		t.Error("an exempt level always has room")
	}
}
