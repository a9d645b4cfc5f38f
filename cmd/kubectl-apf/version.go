package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/output"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=... -X main.buildDate=...".
var (
	version   = "v0.0.0-dev"
	commit    = "unknown"
	buildDate = "unknown"
)

// VersionInfo is what "kubectl apf version -o json" prints.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func currentVersion() VersionInfo {
	return VersionInfo{
		Version:   version,
		Commit:    commit,
		BuildDate: buildDate,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// VersionOptions holds the flags of "kubectl apf version".
type VersionOptions struct {
	// Flags are -o.
	*output.Flags
	genericiooptions.IOStreams
}

// NewVersionCommand builds "kubectl apf version".
func NewVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &VersionOptions{Flags: output.NewFlags(false, "", "json", "yaml"), IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl-apf",
		Example: `  # Print the plugin's version
  kubectl apf version

  # Print it as JSON
  kubectl apf version -o json`,
		Args: noArgs(""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	o.Flags.AddFlags(cmd.Flags())
	return cmd
}

// Validate checks the flags.
func (o *VersionOptions) Validate() error { return o.Flags.Validate() }

// Run prints the version.
func (o *VersionOptions) Run() error {
	v := currentVersion()
	return printObject(o.Out, o.Flags, v, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "kubectl-apf %s (commit %s, built %s, %s, %s)\n", v.Version, v.Commit, v.BuildDate, v.GoVersion, v.Platform)
		return err
	})
}
