// Package testharness holds, in its subpackages, everything the project runs
// to test itself and nothing it ships: a real control plane (testcluster), a
// real Prometheus (testprom), load (loadgen), recordings of overloads
// (recording), promtool unit-test input (promunit), fixtures, golden files,
// purity checks, and the developer commands built on them (cmd/). No package
// built into kubectl-apf may import it; harness_test.go checks that.
package testharness
