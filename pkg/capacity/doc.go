// Package capacity computes the seat arithmetic of API Priority and Fairness
// priority levels for "kubectl apf capacity": the per-level limits and wait limit,
// and the shuffle-sharding collision probabilities of each queuing level. It is
// pure: flowcontrol v1 objects and numbers in, values out.
package capacity
