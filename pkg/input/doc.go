// Package input reads recorded API request traffic as a stream of
// Requests for the fair-queuing replay (package fairqueue). Three inputs are
// understood, and Open tells them apart by their first record:
//
//   - kube-apiserver httplog lines (klog text or JSON format, logged at -v=3
//     by k8s.io/apiserver/pkg/server/httplog/httplog.go:(*respLogger).Log):
//     `I1121 14:15:17.980328 1 httplog.go:134] "HTTP" verb="LIST"
//     URI="/api/v1/pods" latency="1.9ms" userAgent="..." contentType="..."
//     audit-ID="..." srcIP="..." apf_pl="..." apf_fs="..." apf_iseats=1
//     apf_fseats=0 apf_additionalLatency="0s" apf_execution_time="1.2ms"
//     resp=200`. The line carries no user: join it to the audit log by
//     audit-ID (Join); without the audit log the identity is unknown and
//     the recorded apf_fs/apf_pl are kept. A line is written when the
//     request completes, so the arrival is the line's time minus latency.
//     klog text headers carry no year: Options.Year supplies it.
//
//   - audit events (audit.k8s.io/v1 Event, one JSON object per line, as
//     written by --audit-log-path with the json format). Only the stages
//     ResponseComplete and Panic are used (one per request); the arrival is
//     requestReceivedTimestamp and the latency stageTimestamp minus it.
//
//   - the JSONL format of this project, one object per line:
//
//     {"arrival":"2026-11-21T14:15:17.980328812Z",  // RFC 3339; or
//     "offset":"1.5s",                               // since the workload's start
//     "user":"alice","groups":["system:authenticated"],
//     "verb":"list",                                 // Kubernetes verb or HTTP method
//     "path":"/api/v1/pods?limit=500",
//     "serviceTime":"20ms",                          // execution time once dispatched
//     "initialSeats":1,"finalSeats":0,"additionalLatency":"0s",
//     "flowSchema":"global-default","priorityLevel":"global-default", // optional
//     "status":200}                                  // optional, what the server answered
//
//     Durations are Go duration strings ("20ms") or numbers of seconds.
//     Exactly one of arrival and offset is given. Absent seats mean "not
//     recorded" (the replay estimates them).
//
// Every reader streams: it holds one line (or, when re-ordering completed
// requests by arrival, the requests of the re-ordering window), never the
// whole input. OpenFiles parses its inputs in goroutines of their own (the
// httplog files apart from the audit files), a few batches of requests
// ahead of the caller; the audit and httplog readers decode their lines in
// parallel, in a few chunks of at most 256 lines at a time, and yield them
// in the order of the lines.
package input
