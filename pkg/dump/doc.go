// Package dump holds the API Priority and Fairness (APF) state of
// kube-apiserver instances as plain Go values, and parses, stores, reads back
// and redacts it. It is pure: it does no network I/O and does not import
// client-go (package fetch reads a live cluster into these types).
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
//     ParseRequests), whose strings share the memory of the bodies in Raw
//     (so neither is changed after the parse);
//   - Metrics: zero, one or two scrapes of the APF families of /metrics
//     (package metrics), oldest first; two give rates.
//
// Raw keeps the bodies as read, which is what a bundle stores, so that a
// bundle read back goes through the same parsers as a live capture.
//
// # Sources
//
// A Source returns a Capture: one Snapshot per reachable instance and one
// InstanceError per instance that could not be read. fetch.ClusterSource
// talks to a cluster (the kubeconfig's server, an explicit list of instance
// URLs, or every instance listed in the default/kubernetes EndpointSlice);
// BundleSource reads a bundle written by WriteBundle. Both fill Raw and call
// Snapshot.ParseRaw, so they go through the same parsers. BundleSource also
// reads raw artifacts, told by their content (DetectRaw): dump bodies and
// /metrics text saved or pasted from "kubectl get --raw", with their
// commands and elision lines, a directory of them, or standard input; its
// Capture.Notes say what such an input held and lacked. Commands and the
// live view take a Source, so tests inject either.
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
package dump
