package explain

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// The releases the causes of a trace without PF headers turn on.
const (
	// apfOnSince: API Priority and Fairness is on by default from 1.20
	// (beta; alpha and off in 1.18 and 1.19).
	apfOnSince = 20
	// exemptHeadersSince: exempt requests' responses carry the PF headers
	// from 1.24. Before kubernetes/kubernetes#106827 (opened and merged on
	// the 1.24 branch of development in December 2021, after 1.23's
	// release branch was cut) startRequest returned for an exempt level
	// without noting its classification, so the filter set no header
	// (k8s.io/apiserver pkg/util/flowcontrol/apf_controller.go).
	exemptHeadersSince = 24
)

var (
	// the server's version, when the trace holds the body of GET /version
	traceServerVersionRE = regexp.MustCompile(`"gitVersion":\s*"v1\.(\d+)`)
	// kubectl's User-Agent, in client-go's curl line or header dump
	traceKubectlRE = regexp.MustCompile(`(?i)user-agent:\s*kubectl/v1\.(\d+)`)
	// the response headers client-go (-v=8 and up) or curl printed
	traceResponseHeadersRE = regexp.MustCompile(`(?im)response headers:|^\s*< [a-z-]+: `)
)

// NoPFHeaderError says why a trace holds no PF header, the likeliest
// cause first as far as the trace tells the server's release: from the
// body of GET /version, or bounded by kubectl's User-Agent (kubectl is
// supported against a server at most one minor release newer).
func NoPFHeaderError(text string) error {
	minor, exact := 0, false
	if m := traceServerVersionRE.FindStringSubmatch(text); m != nil {
		if v, err := strconv.Atoi(m[1]); err == nil && v < 1000 {
			minor, exact = v, true
		}
	} else if m := traceKubectlRE.FindStringSubmatch(text); m != nil {
		if v, err := strconv.Atoi(m[1]); err == nil && v < 1000 {
			minor = v + 1
		}
	}
	server := ""
	switch {
	case exact:
		server = fmt.Sprintf("the server is 1.%d", minor)
	case minor > 0:
		server = fmt.Sprintf("the client is kubectl 1.%d, so the server is at most 1.%d if kubectl's version skew policy is kept", minor-1, minor)
	}
	noAPF := "the server runs with API Priority and Fairness off (--enable-priority-and-fairness=false), or predates it (on by default from 1.20)"
	exempt := "the requests were exempt (a user in system:masters, as kind's and kubeadm's admin kubeconfigs are, or a health probe) and the server is older than 1.24: exempt responses carried no PF header before kubernetes/kubernetes#106827"
	longRunning := "the requests were long-running (logs, exec, attach, port-forward, proxy), which APF does not classify"
	var causes []string
	switch {
	case minor > 0 && minor < apfOnSince:
		causes = []string{server + ", older than 1.20: API Priority and Fairness was off or absent", longRunning}
	case minor > 0 && minor < exemptHeadersSince:
		causes = []string{server + ", older than 1.24, and the requests were exempt (a user in system:masters, as kind's and kubeadm's admin kubeconfigs are, or a health probe): exempt responses carried no PF header before kubernetes/kubernetes#106827", longRunning, noAPF}
	case exact:
		causes = []string{longRunning, noAPF}
	default:
		causes = []string{longRunning, exempt, noAPF}
	}
	if !traceResponseHeadersRE.MatchString(text) {
		// no response header at all, PF or other: the trace did not print them
		causes = append([]string{"the trace was taken below -v=8, which prints no response headers"}, causes...)
	}
	for i := range causes {
		causes[i] = fmt.Sprintf("(%d) %s", i+1, causes[i])
	}
	return fmt.Errorf("the input is an HTTP trace that holds %w at all; the likeliest causes first: %s", dump.ErrNoPFHeader, strings.Join(causes, "; "))
}
