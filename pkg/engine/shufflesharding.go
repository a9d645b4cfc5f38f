package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
)

// MaxHashBits is the largest number of hash bits a Dealer may consume. It
// mirrors k8s.io/apiserver/pkg/util/shufflesharding.MaxHashBits: using all 64
// bits would make the last card dealt uneven up to 2:3, 60 bits keep it at
// 32:33.
const MaxHashBits = 60

// maxHandSize is the largest hand any valid Dealer can have: the smallest
// deck that admits a hand of n cards is n cards, and ceil(log2(16)*16) = 64 >
// MaxHashBits while ceil(log2(15)*15) = 59. Upstream's Deal uses a [15]int
// array for the same reason.
const maxHandSize = 15

// RequiredEntropyBits is a slightly conservative estimate of the number of
// hash bits consumed when dealing a hand of handSize cards from a deck of
// deckSize cards: ceil(log2(deckSize) * handSize). It is meaningful only for
// 1 <= handSize <= deckSize <= 1<<26. It mirrors upstream
// shufflesharding.RequiredEntropyBits exactly (same float computation).
func RequiredEntropyBits(deckSize, handSize int) int {
	return int(math.Ceil(math.Log2(float64(deckSize)) * float64(handSize)))
}

// Dealer deals hands of queue indices by shuffle sharding, bit for bit like
// k8s.io/apiserver/pkg/util/shufflesharding.Dealer. A Dealer is immutable and
// safe for concurrent use.
type Dealer struct {
	deckSize int
	handSize int
}

// NewDealer returns a Dealer for the given deck and hand sizes. It rejects
// the same inputs as upstream shufflesharding.NewDealer, with the same
// messages: non-positive sizes, a hand larger than the deck, a deck larger
// than 1<<26, and more than MaxHashBits of required entropy.
func NewDealer(deckSize, handSize int) (*Dealer, error) {
	if deckSize <= 0 || handSize <= 0 {
		return nil, fmt.Errorf("deckSize %d or handSize %d is not positive", deckSize, handSize)
	}
	if handSize > deckSize {
		return nil, fmt.Errorf("handSize %d is greater than deckSize %d", handSize, deckSize)
	}
	if deckSize > 1<<26 {
		return nil, fmt.Errorf("deckSize %d is impractically large", deckSize)
	}
	if RequiredEntropyBits(deckSize, handSize) > MaxHashBits {
		return nil, fmt.Errorf("required entropy bits of deckSize %d and handSize %d is greater than %d", deckSize, handSize, MaxHashBits)
	}
	return &Dealer{deckSize: deckSize, handSize: handSize}, nil
}

// DeckSize returns the number of cards (queues) in the deck.
func (d *Dealer) DeckSize() int { return d.deckSize }

// HandSize returns the number of cards dealt per hand.
func (d *Dealer) HandSize() int { return d.handSize }

// Deal deals one hand for hashValue, calling pick once per card in deal
// order. Each card is in [0, deckSize) and no card repeats.
//
// The algorithm is upstream's (shufflesharding.go:(*Dealer).Deal): the full
// 64-bit hash (nothing is masked to MaxHashBits) is decomposed in mixed radix
// deckSize, deckSize-1, ...; each remainder is then shifted up past every
// earlier raw remainder it is not below, comparing in descending order. The
// comparison against the raw (not the adjusted) remainders is what upstream
// does, and it is what makes the cards distinct.
func (d *Dealer) Deal(hashValue uint64, pick func(int)) {
	var cards [maxHandSize]int
	for _, c := range d.deal(hashValue, &cards) {
		pick(c)
	}
}

// deal deals the hand of hashValue into cards and returns it.
func (d *Dealer) deal(hashValue uint64, cards *[maxHandSize]int) []int {
	var remainders [maxHandSize]int
	for i := 0; i < d.handSize; i++ {
		next := hashValue / uint64(d.deckSize-i)
		remainders[i] = int(hashValue - uint64(d.deckSize-i)*next)
		hashValue = next
	}
	for i := 0; i < d.handSize; i++ {
		card := remainders[i]
		for j := i; j > 0; j-- {
			if card >= remainders[j-1] {
				card++
			}
		}
		cards[i] = card
	}
	return cards[:d.handSize]
}

// DealIntoHand deals one hand for hashValue and appends the cards to
// hand[:0], returning the result. A hand with capacity for handSize cards is
// reused without allocation, as upstream's DealIntoHand; a smaller one
// (nil) is replaced by one allocation of handSize cards.
func (d *Dealer) DealIntoHand(hashValue uint64, hand []int) []int {
	var cards [maxHandSize]int
	return append(hand[:0], d.deal(hashValue, &cards)...)
}

// HashFlowID returns the flow hash of upstream
// apf_controller.go:hashFlowID: the first 8 bytes, little-endian, of
// SHA-256(fsName || 0x00 || distinguisher). Nothing else (no priority level,
// no salt, no server identity) enters the hash, so it is the same on every
// apiserver and across restarts.
func HashFlowID(fsName, distinguisher string) uint64 {
	h := sha256.New()
	h.Write([]byte(fsName))
	h.Write([]byte{0})
	h.Write([]byte(distinguisher))
	var sum [32]byte
	return binary.LittleEndian.Uint64(h.Sum(sum[:0])[:8])
}
