package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// mention is "kubectl apf" and what follows it up to the end of the
// command line quoted in a sentence: a quote, a bracket, a comma or a
// semicolon.
var mention = regexp.MustCompile("kubectl apf ([^'\"`(),;\n]*)")

// TestMentionedCommandsExist: every "kubectl apf …" that the plugin's
// messages and help name (a string of its code, not a comment) is a
// command it has, with flags that command has. A hint named "kubectl apf
// bundle --metrics-interval", a command that does not exist.
func TestMentionedCommandsExist(t *testing.T) {
	root := NewRootCommand(genericiooptions.IOStreams{})
	checked := 0
	for _, dir := range []string{"../../pkg", "../../cmd", "../../internal"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				for _, m := range mention.FindAllStringSubmatch(s, -1) {
					checked++
					if why := checkMention(root, m[1]); why != "" {
						t.Errorf("%s: %q: %s", filepath.ToSlash(path), "kubectl apf "+m[1], why)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The docs' command lines, in code spans and blocks.
	docs, _ := filepath.Glob("../../docs/*.md")
	for _, path := range append(docs, "../../README.md", "../../CONTRIBUTING.md") {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mention.FindAllStringSubmatch(string(b), -1) {
			checked++
			if why := checkMention(root, m[1]); why != "" {
				t.Errorf("%s: %q: %s", filepath.ToSlash(path), "kubectl apf "+m[1], why)
			}
		}
	}
	if checked < 50 {
		t.Errorf("%d mentions checked: the scan found too few to mean anything", checked)
	}
	// The check itself: a command and a flag that do not exist are found.
	for _, bad := range []string{"bundle --metrics-interval", "dump bundle --metrics-intervals", "explain nothing"} {
		if checkMention(root, bad) == "" {
			t.Errorf("kubectl apf %s passes the check", bad)
		}
	}
}

// checkMention says what of the words after "kubectl apf" is not the
// plugin's: the first word must be a command, a word after a command with
// subcommands one of them, and a --flag one of the command's. The words
// after the command line (prose, placeholders) are not checked.
func checkMention(root *cobra.Command, words string) string {
	cmd := root
	fields := strings.Fields(words)
	hasFlag := strings.Contains(words, " --") || strings.HasPrefix(words, "--")
	for i, w := range fields {
		if strings.HasPrefix(w, "--") {
			name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
			name = strings.TrimRight(name, ".:")
			if name == "" || name == "help" || strings.ContainsAny(name, "%.[") {
				continue // a placeholder, or cobra's own
			}
			if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil {
				return cmd.CommandPath() + " has no flag --" + name
			}
			continue
		}
		if strings.HasPrefix(w, "-") || !cmd.HasSubCommands() {
			continue
		}
		word := strings.TrimRight(w, ".:")
		var next *cobra.Command
		for _, c := range cmd.Commands() {
			if c.Name() == word || c.HasAlias(word) {
				next = c
			}
		}
		switch {
		case next != nil:
			cmd = next
			if word != w {
				return "" // "kubectl apf top:", the end of the command line
			}
			continue
		case !isWord(word):
			return "" // "%s", a placeholder
		case cmd == root && !hasFlag && i < len(fields)-1:
			return "" // "kubectl apf tells which …": prose about the plugin
		}
		return "no command " + word + " under " + cmd.CommandPath()
	}
	return ""
}

func isWord(w string) bool {
	for _, r := range w {
		if (r < 'a' || r > 'z') && r != '-' {
			return false
		}
	}
	return w != ""
}
