// Package tui is the live terminal view of "kubectl apf top", built on
// bubbletea, lipgloss and bubbles v2.
//
// # Shape
//
// The view follows fetch → compute → render. A Model takes an injected
// dump.Source (a cluster or a bundle) or a recording (package record) and a
// clock; every capture runs in a tea.Cmd (fetch), never in Update. Each
// refresh is turned into plain rows by ComputeInstance (levels: seats in
// use against the current limit, nominal limit, lent or borrowed seats,
// waiting requests and seats, dispatched and rejected rates by reason,
// wait p99, from metrics.Levels and the three dumps), Queues (the heat map
// of one level) and Waiting (the drill-down). Render is a pure function of
// the model and the clock, exactly width × height cells, so golden frames
// (testdata/frames, rewritten with -update) pin it down; Styles only
// colours what the characters already say.
//
// # Behaviour
//
// The keys are in one KeyMap, which also generates the "?" help: k9s's
// "/" filter (a regular expression, "!" inverts), ":" jump, "s" sort,
// enter and esc, "p" pause, "r" refresh, "+"/"-" interval, tab between
// apiservers, "q" and ctrl-c. A failed refresh keeps the last data on
// screen, says DISCONNECTED and retries after the interval doubled per
// failure up to 30 s, so the view survives an apiserver restart; a refresh
// older than three intervals plus 5 s is called STALE. The header shows the
// view's own load: requests sent per refresh.
//
// The refreshes of a live view can be recorded (record.Writer) and played
// back with left/right stepping through them; the sparkline of a replayed
// frame is rebuilt from the frames before it.
package tui
