// Package fetch reads the APF state of live kube-apiserver instances into
// dump.Snapshot values. It is the only package that talks to a cluster, and
// it never writes to one: every request it sends is a GET.
//
// ClusterSource is a dump.Source over the kubeconfig's server, an explicit
// list of instance URLs (--apiserver-urls, see InstanceConfig), or every
// instance in the default/kubernetes EndpointSlice (--all-apiservers, see
// DiscoverAPIServers). It stores each body in Snapshot.Raw as read and lets
// Snapshot.ParseRaw decode it, so a bundle read back parses the same way.
//
// # Errors
//
// Fetch errors are translated into one actionable line each (see
// ExplainFetchError): a 403 names the missing RBAC rule, a 404 says APF is
// off or not served there, a timeout names the instance and
// --request-timeout, a refused connection or a truncated body says so.
package fetch
