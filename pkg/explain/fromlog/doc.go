// Package fromlog is explain's path through recorded logs: the request of
// --from-log and --from-audit read from them (ReadRecorded), compared with
// the replay, and its moment reconstructed from the log's files or a
// VictoriaLogs' events around it (Explain); and the incidents of explain
// 429 reconstructed from a log (Incidents, JoinIncidents, IncidentsVLogs).
//
// The workload is opened by package logs; package reconstruct tells what
// APF did; package explain holds the answers. This package prints nothing
// and reads no flags: cmd/kubectl-apf turns its flags into the values it
// takes.
package fromlog
