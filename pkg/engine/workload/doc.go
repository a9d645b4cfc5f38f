// Package workload is a recorded workload as the engine and the compute
// packages take it: a stream of Requests (Reader), merged in arrival order
// (Merge), kept compactly for later passes (Tape), read ahead in a
// goroutine (Prefetch), or a request picked from it (Pick), and what its
// reading said of the inputs (Files, Stats, JoinStats, the instances each
// input's requests were served by). It opens nothing: the readers of the
// input formats (httplog, audit events, JSONL, and audit events as clouds
// and log pipelines wrap them; files, standard input, directories and
// gzip) are package input's, which a command, pkg/logs or a store's client
// calls and hands the Reader or Files on.
package workload
