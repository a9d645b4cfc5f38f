package tui

import (
	"charm.land/bubbles/v2/key"
)

// KeyMap is every key binding of the view, in one place: Update matches
// against it and the help view ("?") is generated from it, so the two cannot
// disagree. The keys are k9s's where k9s has the action.
type KeyMap struct {
	Up, Down      key.Binding
	Enter, Back   key.Binding
	Sort          key.Binding
	Filter, Jump  key.Binding
	Instance      key.Binding
	Pause         key.Binding
	Refresh       key.Binding
	Faster        key.Binding
	Slower        key.Binding
	Earlier       key.Binding
	Later         key.Binding
	Help          key.Binding
	Quit          key.Binding
	ForceQuit     key.Binding
	replayEnabled bool
	// historyEnabled: left and right step through a store's past from
	// the live view.
	historyEnabled bool
}

// DefaultKeyMap returns the bindings; replay enables left/right.
func DefaultKeyMap(replay bool) KeyMap {
	k := KeyMap{
		Up:        key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "previous level")),
		Down:      key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "next level")),
		Enter:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "flows and waiting requests")),
		Back:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back, clear the filter")),
		Sort:      key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "next sort column")),
		Filter:    key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter levels (regex, !inverts)")),
		Jump:      key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "jump to a level")),
		Instance:  key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next apiserver")),
		Pause:     key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause/resume")),
		Refresh:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh now")),
		Faster:    key.NewBinding(key.WithKeys("-"), key.WithHelp("-", "shorter interval")),
		Slower:    key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "longer interval")),
		Earlier:   key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "earlier frame")),
		Later:     key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "later frame")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:      key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
	}
	k.replayEnabled = replay
	k.Earlier.SetEnabled(replay)
	k.Later.SetEnabled(replay)
	return k
}

// withHistory enables left and right in the live view, for a store's past.
func (k KeyMap) withHistory() KeyMap {
	k.historyEnabled = true
	k.Earlier.SetEnabled(true)
	k.Later.SetEnabled(true)
	k.Earlier.SetHelp("←/h", "earlier frame (the store's past)")
	k.Later.SetHelp("→/l", "later frame, then live")
	return k
}

// withBundle disables what a bundle, read once, has no use for: pause,
// refresh and the interval (help leaves a disabled binding out).
func (k KeyMap) withBundle() KeyMap {
	for _, b := range []*key.Binding{&k.Pause, &k.Refresh, &k.Faster, &k.Slower} {
		b.SetEnabled(false)
	}
	return k
}

// ShortHelp is the footer line (bubbles/help KeyMap): the same bindings
// with one-word descriptions.
func (k KeyMap) ShortHelp() []key.Binding {
	short := func(b key.Binding, keys, desc string) key.Binding {
		b.SetHelp(keys, desc)
		return b
	}
	// Quit comes second so that the narrowest terminal still shows it.
	b := []key.Binding{short(k.Help, "?", "help"), short(k.Quit, "q", "quit"), short(k.Filter, "/", "filter"), short(k.Jump, ":", "jump"),
		short(k.Sort, "s", "sort"), short(k.Enter, "enter", "flows"), short(k.Pause, "p", "pause")}
	if k.replayEnabled {
		b = append(b, short(k.Earlier, "←/→", "step"))
	} else {
		if k.historyEnabled {
			b = append(b, short(k.Earlier, "←/→", "history"))
		}
		b = append(b, short(k.Refresh, "r", "refresh"), short(k.Slower, "+/-", "interval"))
	}
	return append(b, short(k.Instance, "tab", "apiserver"))
}

// FullHelp is the "?" page (bubbles/help KeyMap), in columns.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.Enter, k.Back, k.Sort, k.Filter, k.Jump},
		{k.Instance, k.Pause, k.Refresh, k.Slower, k.Faster, k.Earlier, k.Later},
		{k.Help, k.Quit, k.ForceQuit},
	}
}
