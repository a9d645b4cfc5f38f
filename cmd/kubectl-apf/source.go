package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/clock"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
)

// SourceOptions are the flags that say where APF state comes from, shared
// by every read-only command: the kubeconfig's apiserver (default), every
// instance (--all-apiservers), named instances (--apiserver-urls), or a
// bundle (--from).
type SourceOptions struct {
	configFlags *genericclioptions.ConfigFlags

	From          string
	AllAPIServers bool
	APIServerURLs []string

	// Source is set by Complete unless a test injected one.
	Source dump.Source
	// Clock stamps live captures (the real clock when nil).
	Clock clock.Clock
}

// NewSourceOptions returns SourceOptions reading the kubeconfig of
// configFlags.
func NewSourceOptions(configFlags *genericclioptions.ConfigFlags) *SourceOptions {
	return &SourceOptions{configFlags: configFlags}
}

// AddFlags registers the source flags.
func (o *SourceOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.From, "from", o.From, "Read a bundle (directory or .tar.gz written by \"kubectl apf dump bundle\") instead of the cluster.")
	fs.BoolVar(&o.AllAPIServers, "all-apiservers", o.AllAPIServers, "Query every apiserver instance listed in the default/kubernetes EndpointSlice, each directly.")
	fs.StringSliceVar(&o.APIServerURLs, "apiserver-urls", o.APIServerURLs, "Query these apiserver instances (comma-separated https://HOST:PORT), each directly with the kubeconfig's credentials.")
}

// Validate checks the source flags; it names the flags in its messages.
func (o *SourceOptions) Validate() error {
	n := 0
	for _, set := range []bool{o.From != "", o.AllAPIServers, len(o.APIServerURLs) > 0} {
		if set {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("--from, --all-apiservers and --apiserver-urls are mutually exclusive")
	}
	for _, u := range o.APIServerURLs {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return fmt.Errorf("--apiserver-urls: %q is not a URL like https://10.0.0.1:6443", u)
		}
	}
	return nil
}

// Complete builds the Source, unless a test injected one.
func (o *SourceOptions) Complete() error {
	if o.Source != nil {
		return nil
	}
	if o.From != "" {
		o.Source = &dump.BundleSource{Path: o.From}
		return nil
	}
	cfg, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w (use --from BUNDLE to work without a cluster)", err)
	}
	urls := make([]string, 0, len(o.APIServerURLs))
	for _, u := range o.APIServerURLs {
		urls = append(urls, strings.TrimRight(u, "/"))
	}
	o.Source = &fetch.ClusterSource{Config: cfg, Instances: urls, AllAPIServers: o.AllAPIServers, Clock: o.Clock}
	return nil
}

// IsLive reports whether the source is a cluster (not a bundle).
func (o *SourceOptions) IsLive() bool {
	_, bundle := o.Source.(*dump.BundleSource)
	return !bundle
}
