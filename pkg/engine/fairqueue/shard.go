package fairqueue

import (
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// The queue choice and the seat check of upstream's queue set, shared by
// the simulator (queueSet) and by pkg/reconstruct, which rebuilds a
// recorded server's queues and decides each request's fate over them: one
// implementation, held to upstream by the differential tests of this
// package (FuzzFidelity, the upstream tests).

// EstimatedServiceDuration is G, the service time the virtual world assumes
// for one seat (queueset.go:queueSetCompleter.Complete sets 3 ms).
const EstimatedServiceDuration = 3 * time.Millisecond

// TotalWork mirrors completeWorkEstimate: the work a request weighs in its
// queue, InitialSeats*G + FinalSeats*AdditionalLatency, and the final part
// alone.
func TotalWork(initialSeats, finalSeats uint64, additionalLatency time.Duration) (total, final SeatSeconds) {
	final = SeatsTimesDuration(float64(finalSeats), additionalLatency)
	return SeatsTimesDuration(float64(initialSeats), EstimatedServiceDuration) + final, final
}

// WorkSums gives the TotalWorkSum of a level's queue by its index: the sum
// of the work of the requests waiting in it (queueset/types.go:queueSum).
type WorkSums interface {
	WorkSum(queue int) SeatSeconds
}

// Shard is one level's shuffle sharding: its dealer, the hand dealt last and
// the count of enqueues that turns the offset the choice starts from.
type Shard struct {
	dealer   *engine.Dealer
	hand     []int
	enqueues int
}

// NewShard returns the shuffle sharding of a level with the given number of
// queues and hand size; it rejects what engine.NewDealer rejects.
func NewShard(queues, handSize int) (*Shard, error) {
	d, err := engine.NewDealer(queues, handSize)
	if err != nil {
		return nil, err
	}
	return &Shard{dealer: d, hand: make([]int, 0, handSize)}, nil
}

// DealIntoHand deals hash's hand into hand (engine.Dealer.DealIntoHand),
// without choosing a queue.
func (s *Shard) DealIntoHand(hash uint64, hand []int) []int {
	return s.dealer.DealIntoHand(hash, hand)
}

// HandSize is the level's hand size.
func (s *Shard) HandSize() int { return s.dealer.HandSize() }

// ChooseQueue mirrors shuffleShardLocked: it deals hash's hand and returns the
// first queue of it, from the offset enqueues%handSize, with the strictly
// smallest TotalWorkSum; every choice turns the offset.
func (s *Shard) ChooseQueue(hash uint64, sums WorkSums) int {
	s.hand = s.dealer.DealIntoHand(hash, s.hand)
	handSize := len(s.hand)
	offset := s.enqueues % handSize
	s.enqueues++
	best := -1
	minSum := MaxSeatSeconds
	for i := 0; i < handSize; i++ {
		idx := s.hand[(offset+i)%handSize]
		if sum := sums.WorkSum(idx); sum < minSum {
			minSum, best = sum, idx
		}
	}
	return best
}

// Unchoose takes the last choice's turn of the offset back, for a caller
// that learns the request reached the choice later (pkg/reconstruct holds
// back a request it cannot place yet, and chooses again when it can).
func (s *Shard) Unchoose() {
	s.enqueues--
}

// CanAccommodateSeats mirrors canAccommodateSeatsLocked: whether a request
// of seats can start now on a level with limit seats, seatsInUse of them
// taken by executing requests. An exempt level always can; a request
// wider than the whole level runs alone.
func CanAccommodateSeats(exempt bool, seats, limit, seatsInUse, executing int) bool {
	switch {
	case exempt:
		return true
	case seats > limit:
		return executing == 0
	}
	return seatsInUse+seats <= limit
}
