// Package dump reads the API Priority and Fairness (APF) state of
// kube-apiserver instances, from a live cluster or from an offline bundle,
// and returns it as plain Go values. It never writes to a cluster: every
// request it sends is a GET.
//
// # The snapshot
//
// A Snapshot is "the state of one apiserver instance at one time", the unit
// that dump, top, whois, explain, lint and the live view all read:
//
//   - Instance: the URL of the instance that answered (each instance has its
//     own limits, queues and dumps; only the configuration is shared);
//   - ServerVersion and CapturedAt (the client's clock);
//   - FlowSchemas and PriorityLevels: the configuration objects as
//     k8s.io/api/flowcontrol/v1 types, converted when the server only serves
//     v1beta3, v1beta2 or v1beta1 (FlowcontrolVersion says which was read);
//   - PriorityLevelDump, QueueDump, RequestDump: the three debug dumps
//     (/debug/api_priority_and_fairness/dump_*), parsed in every column layout
//     from Kubernetes 1.20 on (see ParsePriorityLevels, ParseQueues,
//     ParseRequests);
//   - Metrics: zero, one or two scrapes of the APF families of /metrics
//     (package metrics), oldest first; two give rates.
//
// Raw keeps the bodies as read, which is what a bundle stores, so that a
// bundle read back goes through the same parsers as a live capture.
//
// # Sources
//
// A Source returns a Capture: one Snapshot per reachable instance and one
// InstanceError per instance that could not be read. ClusterSource talks to a
// cluster (the kubeconfig's server, an explicit list of instance URLs, or
// every instance listed in the default/kubernetes EndpointSlice);
// BundleSource reads a bundle written by WriteBundle. Commands and the live
// view take a Source, so tests inject either, or an httptest.Server.
//
// # Bundles and redaction
//
// WriteBundle stores a Capture as a directory or a .tar.gz (layout in
// Manifest); BundleSource reads it back through the same parsers, so a
// command prints the same from a bundle as from the live capture it was
// made of. Redactor replaces user names, namespaces, object names and
// request paths with keyed-hash pseudonyms before a bundle is written.
//
// # Other pieces
//
// ParseUIDRefs and Resolve name the UIDs of the X-Kubernetes-PF-*-UID
// response headers ("kubectl apf whois"). Package render prints snapshots as
// tables, JSON or YAML.
//
// # Errors
//
// Fetch errors are translated into one actionable line each (see
// ExplainFetchError): a 403 names the missing RBAC rule, a 404 says APF is
// off or not served there, a timeout names the instance and
// --request-timeout, a refused connection or a truncated body says so.
package dump
