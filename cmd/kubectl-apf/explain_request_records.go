package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// readRecorded reads the request of --from-log and/or --from-audit: each
// value is a file name, "-" for stdin, or (for --from-log) the line itself.
// With both, the log line is joined to the audit event of the same audit ID
// (workload.PickJoined), never to another one.
func readRecorded(fromLog, fromAudit, auditID string, stdin io.Reader) (*workload.Request, error) {
	var logRd, auditRd workload.Reader
	var logName, auditName string
	if fromLog != "" {
		rd, name, closeFn, err := openRecordReader(fromLog, true, stdin)
		if err != nil {
			return nil, fmt.Errorf("--from-log: %w", err)
		}
		defer closeFn()
		logRd, logName = rd, name
	}
	if fromAudit != "" {
		rd, name, closeFn, err := openRecordReader(fromAudit, false, stdin)
		if err != nil {
			return nil, fmt.Errorf("--from-audit: %w", err)
		}
		defer closeFn()
		auditRd, auditName = rd, name
	}
	if logRd != nil && auditRd != nil {
		r, err := workload.PickJoined(logRd, auditRd, auditID)
		if err != nil {
			return nil, fmt.Errorf("--from-log %s with --from-audit %s: %w", logName, auditName, err)
		}
		return r, nil
	}
	flag, rd, name, kind := "--from-log", logRd, logName, "kube-apiserver httplog (\"HTTP\" lines, -v=3)"
	if rd == nil {
		flag, rd, name, kind = "--from-audit", auditRd, auditName, "audit event (ResponseComplete stage)"
	}
	r, _, err := workload.Pick(rd, auditID)
	if errors.Is(err, workload.ErrNoRecord) {
		if auditID != "" {
			return nil, fmt.Errorf("%s: no request %s", flag, strings.TrimPrefix(err.Error(), workload.ErrNoRecord.Error()+" "))
		}
		return nil, fmt.Errorf("%s: no %s request found in %s", flag, kind, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return r, nil
}

// openRecordReader opens one value of --from-log or --from-audit.
func openRecordReader(value string, httplog bool, stdin io.Reader) (workload.Reader, string, func(), error) {
	var in io.Reader
	name, closeFn := value, func() {}
	switch {
	case value == "-":
		in, name = stdin, "stdin"
	default:
		if f, err := os.Open(value); err == nil {
			in, closeFn = f, func() { f.Close() }
		} else if httplog && strings.Contains(value, "\"HTTP\"") {
			in, name = strings.NewReader(value), "the line given"
		} else {
			return nil, "", nil, fmt.Errorf("reading %s: %w", value, err)
		}
	}
	// Arrival order does not matter here (one record is kept), so the
	// smallest re-ordering window keeps the reader's memory at one record
	// however long the file is.
	opts := workload.Options{ReorderWindow: time.Nanosecond}
	if httplog {
		return workload.NewHTTPLogReader(in, name, opts, nil), name, closeFn, nil
	}
	return workload.NewAuditReader(in, name, opts, nil), name, closeFn, nil
}
