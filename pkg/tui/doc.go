// Package tui is the live terminal view of "kubectl apf top", built on
// bubbletea, lipgloss and bubbles v2.
//
// # Shape
//
// The view follows fetch → compute → render. A Model takes an injected
// dump.Source (a cluster or a bundle) or a recording (package record) and a
// clock; every capture runs in a tea.Cmd (fetch), never in Update.
//
// Model is a shell over three modes, each a model with its own Update and
// View (its status in the header): live (live.go: refreshes, backoff,
// recording), replay (replay.go: a recording played back) and the store's
// past behind the live view (past.go: read every minute, seeding the live
// sparklines, stepped through with left and right). Replay and the past
// step through frames with one player (player.go). The shell (model.go)
// routes messages and keys to the mode they are for, switches between live
// and the past, and holds what the rest shares: the size, styles and
// keymap, the instance selected and the status line. It draws the header
// and lays out the components, each with its own state, Update and View
// (as gh-dash's): the level table with its selection, sort and filter
// (table.go, its rows and columns in levels.go), the queue map of the
// selected level under it (queuemap.go), the drill-down (drill.go), the
// help and the footer's key line (help.go) and the line input of "/" and
// ":" (input.go). A View draws on a frame: its size, the styles and the
// instance shown, whichever mode it comes from. Each refresh is turned
// into plain rows by ComputeInstance (levels: seats in use against the
// current limit, nominal limit, lent or borrowed seats,
// waiting requests and seats, dispatched and rejected rates by reason,
// wait p99, from metrics.Levels and the three dumps), Queues (the heat map
// of one level) and Waiting (the drill-down). What a component draws is
// computed in Update (Model.relayout, last in every Update: the table's
// rows filtered and sorted, its totals, the selected row and the first one
// visible, the queue map's cells, the drill-down's flows and waiting
// requests), so that a View only lays it out; its one write is the
// selection the table shows (a level gone becomes the first row drawn).
// Render is a function of the model and the clock, exactly width × height
// cells, and drawing it twice draws the same frame and leaves the model as
// it was (TestViewComputesNothing), so golden frames
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
