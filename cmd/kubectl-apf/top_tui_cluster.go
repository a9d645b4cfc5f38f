package main

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
