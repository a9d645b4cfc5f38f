// Package engine replays the classification, flow identity, shuffle sharding
// and concurrency arithmetic of Kubernetes API Priority and Fairness (APF)
// exactly as k8s.io/apiserver v0.37 does, as pure functions over
// k8s.io/api/flowcontrol/v1 objects.
//
// Shuffle sharding: NewDealer, (*Dealer).Deal, (*Dealer).DealIntoHand,
// RequiredEntropyBits and MaxHashBits mirror
// k8s.io/apiserver/pkg/util/shufflesharding; HashFlowID mirrors the
// unexported hashFlowID of pkg/util/flowcontrol/apf_controller.go.
package engine
