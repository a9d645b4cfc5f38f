package main

import (
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/clock"

	"github.com/kubectl-apf/kubectl-apf/pkg/load"
)

// clockAhead moves every command's "now" ahead by a duration ("8760h"): set
// at build time with -ldflags "-X main.clockAhead=8760h" (or, for a test
// binary, -X github.com/kubectl-apf/kubectl-apf/cmd/kubectl-apf.clockAhead=...)
// and never in a release. CONTRIBUTING.md's clock-ahead run builds the
// plugin so, to find the tests that depend on today's date.
var clockAhead string

// processClock is the clock every command's Options start with: the real
// clock, or the real clock moved ahead by clockAhead.
func processClock() clock.Clock {
	if clockAhead == "" {
		return clock.RealClock{}
	}
	d, err := time.ParseDuration(clockAhead)
	if err != nil {
		panic("kubectl-apf was built with a clockAhead that is not a duration: " + clockAhead)
	}
	return aheadClock{d: d}
}

// aheadClock is the real clock read d ahead; its timers and sleeps are the
// real ones (they measure durations, not dates).
type aheadClock struct {
	clock.RealClock
	d time.Duration
}

func (c aheadClock) Now() time.Time                  { return time.Now().Add(c.d) }
func (c aheadClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// newOptions is load.NewOptions with the process's clock: every command
// takes "now" from its Options' Clock, never from time.Now.
func newOptions(configFlags *genericclioptions.ConfigFlags, inputs load.Inputs) *load.Options {
	o := load.NewOptions(configFlags, inputs)
	o.Clock = processClock()
	return o
}
