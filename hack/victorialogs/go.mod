// Builds the VictoriaLogs server used by the audit log store tests (a single
// node, and a cluster: the same binary with -storageNode). A module of its own
// so that VictoriaLogs' dependencies never change what the plugin is built with.
module github.com/kubectl-apf/kubectl-apf/hack/victorialogs

go 1.26.7

tool github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs

require (
	github.com/VictoriaMetrics/VictoriaLogs v1.52.1 // indirect
	github.com/VictoriaMetrics/VictoriaMetrics v1.146.1-0.20260630165203-c82127b6d4d1 // indirect
	github.com/VictoriaMetrics/easyproto v1.2.0 // indirect
	github.com/VictoriaMetrics/metrics v1.44.0 // indirect
	github.com/VictoriaMetrics/metricsql v0.87.2 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang/snappy v1.0.0 // indirect
	github.com/klauspost/compress v1.18.6 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fastjson v1.6.10 // indirect
	github.com/valyala/fastrand v1.1.0 // indirect
	github.com/valyala/fasttemplate v1.2.2 // indirect
	github.com/valyala/gozstd v1.24.0 // indirect
	github.com/valyala/histogram v1.2.0 // indirect
	github.com/valyala/quicktemplate v1.8.0 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
)
