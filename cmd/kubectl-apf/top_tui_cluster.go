package main

import (
	"net/http"
	"sync/atomic"
)

// clusterName names the cluster in the header: the kubeconfig context.
func (o *TopTUIOptions) clusterName() string {
	cf := o.ConfigFlags()
	switch {
	case cf == nil:
		return ""
	case cf.Context != nil && *cf.Context != "":
		return *cf.Context
	}
	if raw, err := cf.ToRawKubeConfigLoader().RawConfig(); err == nil {
		return raw.CurrentContext
	}
	return ""
}

// countingTransport counts the requests sent through it.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

// RoundTrip counts r and sends it on.
func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.rt.RoundTrip(r)
}
