package capacity

import (
	"fmt"
	"math/big"
)

// CrushProbability returns the probability that a mouse flow (a flow sending
// little) is "crushed" in a queuing priority level with the given number of
// queues and hand size: every one of the handSize queues dealt to the mouse is
// also in the hand of at least one of the elephants (heavy flows that keep their
// queues full). Each flow's hand is modelled as an independent, uniformly random
// handSize-subset of the queues, which is what shuffle sharding
// (k8s.io/apiserver/pkg/util/shufflesharding.Dealer) gives to distinct flow
// hashes. This is the quantity tabulated in the Kubernetes documentation
// ("Example Shuffle Sharding Configurations" in concepts/cluster-administration/
// flow-control.md, computed there by https://play.golang.org/p/Gi0PLgVHiUg).
//
// The value is computed exactly with rational arithmetic by inclusion-exclusion
// over the mouse's queues that stay free:
//
//	P = Σ_{j=0..h} (-1)^j C(h,j) (C(n-j,h)/C(n,h))^e
//
// and only then rounded to a float64, so it agrees with the exact value to the
// last bit that float64 can hold.
func CrushProbability(queues, handSize, elephants int) (float64, error) {
	r, err := CrushProbabilityRat(queues, handSize, elephants)
	if err != nil {
		return 0, err
	}
	f, _ := r.Float64()
	return f, nil
}

// CrushProbabilityRat is CrushProbability as an exact rational number.
func CrushProbabilityRat(queues, handSize, elephants int) (*big.Rat, error) {
	if err := validateShuffle(queues, handSize, elephants); err != nil {
		return nil, err
	}
	n, h, e := int64(queues), int64(handSize), elephants
	total := binom(n, h)
	sum := new(big.Rat)
	for j := int64(0); j <= h; j++ {
		// (C(n-j,h)/C(n,h))^e: the chance that e independent hands all avoid j
		// given queues of the mouse.
		free := new(big.Rat).SetFrac(binom(n-j, h), total)
		term := ratPow(free, e)
		term.Mul(term, new(big.Rat).SetInt(binom(h, j)))
		if j%2 == 1 {
			sum.Sub(sum, term)
		} else {
			sum.Add(sum, term)
		}
	}
	return sum, nil
}

// crushProbabilityMarkov computes the same probability by a different route: the
// exact distribution of the size of the union of the elephants' hands, built one
// elephant at a time, then the chance that the mouse's hand lies inside that
// union. It is slower and exists to cross-check CrushProbabilityRat.
func crushProbabilityMarkov(queues, handSize, elephants int) (*big.Rat, error) {
	if err := validateShuffle(queues, handSize, elephants); err != nil {
		return nil, err
	}
	n, h := int64(queues), int64(handSize)
	total := binom(n, h)
	if elephants == 0 {
		return new(big.Rat), nil
	}
	dist := map[int64]*big.Rat{h: big.NewRat(1, 1)}
	for i := 1; i < elephants; i++ {
		next := map[int64]*big.Rat{}
		for u, pu := range dist {
			for fresh := int64(0); fresh <= h; fresh++ {
				if fresh > n-u || h-fresh > u {
					continue
				}
				ways := new(big.Int).Mul(binom(n-u, fresh), binom(u, h-fresh))
				step := new(big.Rat).SetFrac(ways, total)
				step.Mul(step, pu)
				if cur, ok := next[u+fresh]; ok {
					cur.Add(cur, step)
				} else {
					next[u+fresh] = step
				}
			}
		}
		dist = next
	}
	sum := new(big.Rat)
	for u, pu := range dist {
		inside := new(big.Rat).SetFrac(binom(u, h), total)
		sum.Add(sum, inside.Mul(inside, pu))
	}
	return sum, nil
}

// maxQueues mirrors priorityLevelConfigurationQueuingMaxQueues in
// k8s.io/kubernetes/pkg/apis/flowcontrol/validation; larger values are refused
// by the API server, so they cannot describe a real level.
const maxQueues = 10_000_000

func validateShuffle(queues, handSize, elephants int) error {
	switch {
	case queues < 1 || queues > maxQueues:
		return fmt.Errorf("queues must be between 1 and %d, not %d", maxQueues, queues)
	case handSize < 1 || handSize > queues:
		return fmt.Errorf("hand size must be between 1 and the number of queues (%d), not %d", queues, handSize)
	case elephants < 0 || elephants > 1<<16:
		return fmt.Errorf("number of elephants must be between 0 and %d, not %d", 1<<16, elephants)
	}
	return nil
}

func binom(n, k int64) *big.Int {
	if k < 0 || n < 0 || k > n {
		return new(big.Int)
	}
	return new(big.Int).Binomial(n, k)
}

func ratPow(x *big.Rat, e int) *big.Rat {
	num := new(big.Int).Exp(x.Num(), big.NewInt(int64(e)), nil)
	den := new(big.Int).Exp(x.Denom(), big.NewInt(int64(e)), nil)
	return new(big.Rat).SetFrac(num, den)
}
