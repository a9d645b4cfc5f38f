package explain

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// A client's HTTP trace (kubectl -v=6 to -v=9, or any client-go program at
// those levels) shows each response the server gave. client-go's
// transport/round_trippers.go (debuggingRoundTripper.RoundTrip) logs, in
// klog's text form:
//
//	"Request" verb="GET" url="https://h/api/v1/pods"                      (-v=7, -v=8)
//	"Response" verb="GET" url="..." status="429 Too Many Requests" milliseconds=3   (-v=6)
//	"Response" status="429 Too Many Requests" headers=<                  (-v=8; -v=9 adds verb and url)
//		Retry-After: 32
//		X-Kubernetes-Pf-Flowschema-Uid: ...
//	 > milliseconds=3
//
// the headers one a line after a tab (headersMap.String), closed by " >";
// a JSON logger writes the same keys ("msg":"Response","status":...,
// "headers":{"Retry-After":["32"]}). Before structured logging (client-go
// up to 1.26) the lines were "GET https://h/api/v1/pods 429 Too Many
// Requests in 3 milliseconds" or "Response Status: 429 Too Many Requests in
// 3 milliseconds", then "Response Headers:" and one klog line per header,
// indented. When a 429 or 5xx carries Retry-After, client-go's
// rest/with_retry.go waits and retries, logging at -v=4 "Got a Retry-After
// response" delay="32s" attempt=1 url="..." (before 1.22, request.go's
// "Got a Retry-After 1s response for attempt 1 to URL").
var (
	reStatus429 = reStatus("429")
	// any response, for the PF headers of one APF let through
	reStatusAny = reStatus(`\d{3}`)
	// the request of a structured line (text or JSON)
	reTextVerbURL = regexp.MustCompile(`\bverb="([A-Z]+)"[^\n]*?\burl="([^"]*)"`)
	reJSONVerbURL = regexp.MustCompile(`"verb":\s*"([A-Z]+)"[^\n]*?"url":\s*"([^"]*)"`)
	reRequestLine = regexp.MustCompile(`"Request"|"msg":\s*"Request"`)
	// a header's value: "Retry-After: 32", JSON "Retry-After":["32"]
	reRetryAfterHeader = regexp.MustCompile(`(?i)\bretry-after["']?\s*[:=]\s*\[?\s*["']?(\d+)`)
	// client-go's wait for a Retry-After, structured and before 1.22
	reRetryWait    = regexp.MustCompile(`"Got a Retry-After response"[^\n]*?\bdelay="([^"]*)"(?:[^\n]*?\battempt=(\d+))?(?:[^\n]*?\burl="([^"]*)")?`)
	reRetryWaitOld = regexp.MustCompile(`Got a Retry-After (\d+)s response for attempt (\d+) to (\S+)`)
	// the klog text header of a line: "I1202 10:00:00.000000   12345 round_trippers.go:632] "
	reKlogHeader = regexp.MustCompile(`^\s*[IWEF]\d{4} [\d:.]+\s+\d+ [^\]\s]+\] ?`)
	// a header line of a response: indented "Key: value"
	reHeaderLine = regexp.MustCompile(`^\s+[A-Za-z0-9-]+: `)
)

// reStatus matches a response line of the status code pattern code.
func reStatus(code string) *regexp.Regexp {
	return regexp.MustCompile(strings.NewReplacer("CODE", code).Replace(
		`status="(CODE[^"]*)"|"status":\s*"(CODE[^"]*)"|Response Status: (CODE\b[^\n]*?) in \d+ milliseconds|\b([A-Z]+) (\S+) (CODE [A-Za-z ]*?)\s+in \d+ milliseconds`))
}

// traceResponse is the last 429 response of a client's trace.
type traceResponse struct {
	method, url, status string
	retryAfter          string // seconds, as the header gives them
	waited              string // client-go's wait before retrying ("32s"), when the trace shows it
	attempt             string
	fsUID, plUID        *string
	// lines are the response's own: its line, and its headers
	lines string
	// curl: the output of curl -i or -v, not of a client-go trace
	curl bool
}

// findResponse429 returns the last 429 response of a client's trace, nil
// when the text shows none.
func findResponse429(text string) *traceResponse {
	if r := findResponse(text, reStatus429); r != nil {
		return r
	}
	return findCurlResponse(text, "429")
}

// findResponse returns the last response of a client's trace whose
// status re matches, nil when the text shows none.
func findResponse(text string, re *regexp.Regexp) *traceResponse {
	lines := strings.Split(text, "\n")
	last := -1
	var m []string
	for i, l := range lines {
		if sm := re.FindStringSubmatch(l); sm != nil {
			last, m = i, sm
		}
	}
	if last < 0 {
		return nil
	}
	r := &traceResponse{}
	switch {
	case m[1] != "":
		r.status = m[1]
	case m[2] != "":
		r.status = m[2]
	case m[3] != "":
		r.status = m[3]
	default:
		r.method, r.url, r.status = m[4], m[5], m[6]
	}
	r.status = strings.TrimSpace(r.status)
	end := last + 1
	for end < len(lines) && responseContinues(lines[end]) {
		end++
	}
	r.lines = strings.Join(lines[last:end], "\n")
	if r.url == "" {
		r.method, r.url = verbURL(lines[last])
	}
	// -v=8 logs the request's verb and URL on its "Request" line only
	for i := last - 1; i >= 0 && r.url == ""; i-- {
		if reRequestLine.MatchString(lines[i]) {
			r.method, r.url = verbURL(lines[i])
			break
		}
		if reStatusAny.MatchString(lines[i]) || strings.Contains(lines[i], `"Response"`) {
			break // another response's request
		}
	}
	r.readHeaders()
	// client-go's wait after this response, before the next one
	for i := last + 1; i < len(lines); i++ {
		if reStatusAny.MatchString(lines[i]) || strings.Contains(lines[i], `"Response"`) {
			break
		}
		if w := reRetryWait.FindStringSubmatch(lines[i]); w != nil {
			r.waited, r.attempt = w[1], w[2]
			if r.url == "" {
				r.url = w[3]
			}
			break
		}
		if w := reRetryWaitOld.FindStringSubmatch(lines[i]); w != nil {
			r.waited, r.attempt = w[1]+"s", w[2]
			if r.url == "" {
				r.url = w[3]
			}
			break
		}
	}
	return r
}

// readHeaders reads the response's Retry-After and PF UIDs from its own
// lines (r.lines) alone: a UID that is cut or elided is no UID.
func (r *traceResponse) readHeaders() {
	if h := reRetryAfterHeader.FindStringSubmatch(r.lines); h != nil {
		r.retryAfter = h[1]
	}
	r.fsUID, r.plUID = pfHeaderUIDs(r.lines)
}

// pfHeaderUIDs are the UIDs of the X-Kubernetes-PF-*-UID headers in text
// (nil: no such header).
func pfHeaderUIDs(text string) (fs, pl *string) {
	refs, err := dump.ParseUIDRefs(text)
	if err != nil {
		return nil, nil
	}
	for _, ref := range refs {
		uid := ref.UID
		switch ref.Kind {
		case dump.KindFlowSchema:
			fs = &uid
		case dump.KindPriorityLevel:
			pl = &uid
		}
	}
	return fs, pl
}

// responseContinues reports whether a line after a response's own is
// still part of it: one of its headers, the "Response Headers:" line of
// old client-go, or the " >" that closes a structured header block.
func responseContinues(l string) bool {
	rest := reKlogHeader.ReplaceAllString(l, "")
	if reKlogHeader.MatchString(l) {
		// old client-go: one klog line per header, indented after the header
		return strings.TrimSpace(rest) == "Response Headers:" || reHeaderLine.MatchString(rest)
	}
	t := strings.TrimSpace(rest)
	return reHeaderLine.MatchString(rest) || strings.HasPrefix(t, ">") || strings.HasPrefix(t, "milliseconds=")
}

// verbURL reads the request of a structured line, text or JSON.
func verbURL(l string) (method, url string) {
	if m := reTextVerbURL.FindStringSubmatch(l); m != nil {
		return m[1], m[2]
	}
	if m := reJSONVerbURL.FindStringSubmatch(l); m != nil {
		return m[1], m[2]
	}
	return "", ""
}

// newMessage is the message of kind about r: its status and PF UIDs, and
// its request when the trace shows it.
func (r *traceResponse) newMessage(kind string) *Message {
	m := &Message{Kind: kind, APF: true, Status: r.status, FlowSchemaUID: r.fsUID, PriorityLevelUID: r.plUID}
	if path := pathOf(r.url); path != "" {
		m.Path, m.Method = path, r.method
	}
	return m
}

// requestText names m's request in a sentence.
func requestText(m *Message) string {
	if m.Path == "" {
		return "the request"
	}
	return strings.TrimSpace(m.Method + " " + m.Path)
}

// message explains the 429 of a trace. The text around it may say whose
// 429 it is: client-go logs the body at -v=8 once it stops retrying, and
// a Status body names the watch cache, the Eviction API or EventRateLimit
// (errorText recognises them); APF's body is plain text.
func (r *traceResponse) message(text string) *Message {
	m := r.newMessage(MessageAPF429)
	if r.retryAfter != "" {
		m.RetryAfter = r.retryAfter + "s"
	}
	m.Delay = r.waited
	if other := errorText(text); other != nil && !other.APF {
		other.Status, other.RetryAfter, other.FlowSchemaUID, other.PriorityLevelUID = m.Status, m.RetryAfter, m.FlowSchemaUID, m.PriorityLevelUID
		other.Method, other.Path, other.Delay = m.Method, m.Path, m.Delay
		return other
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s shows the server answered %s with %s", r.what(), requestText(m), m.Status)
	if m.RetryAfter != "" {
		fmt.Fprintf(&b, " and Retry-After: %s", r.retryAfter)
	}
	b.WriteString("; ")
	if r.curl {
		b.WriteString("curl does not retry it; a client-go program (kubectl, a controller) would wait the Retry-After and send it again, up to 10 times. ")
	} else if r.retryAfter != "" {
		b.WriteString("client-go waits that long and sends it again (up to 10 times), so the command stalls rather than fails")
		if r.waited != "" {
			fmt.Fprintf(&b, " (it waited %s before retry %s)", r.waited, r.attempt)
		}
		b.WriteString(". ")
	} else {
		b.WriteString("without Retry-After client-go does not retry it. ")
	}
	secs, _ := strconv.Atoi(r.retryAfter)
	switch {
	case strings.Contains(strings.ToLower(text), "too many requests, please try again later"):
		b.WriteString("Its body is the one API Priority and Fairness writes when a priority level rejects a request (concurrency-limit, queue-full or time-out). ")
	case secs > 30:
		fmt.Fprintf(&b, "A Retry-After of %d s is API Priority and Fairness's: it grows to 32 s while a level keeps rejecting, and the watch cache sends at most 30, the Eviction API 10. ", secs)
	default:
		b.WriteString("API Priority and Fairness answers its rejections so (Retry-After from 1 s, growing to 32 s while a level keeps rejecting); so do the watch cache while it initializes (up to 30 s) and the Eviction API for a PodDisruptionBudget (10 s), whose Status body the trace shows (\"Response Body\", -v=8) once client-go stops retrying. ")
	}
	if ids := pfUIDs(m); ids != "" {
		b.WriteString(ids + " ")
	}
	b.WriteString("Explain the request with its identity for its FlowSchema, level and queues, or run 'kubectl apf explain 429' to see which levels reject now and why")
	m.Explanation = b.String()
	return m
}

// pfUIDs says what the response's X-Kubernetes-PF-*-UID headers name.
func pfUIDs(m *Message) string {
	var parts, uids []string
	for _, u := range []struct {
		what string
		uid  *string
	}{{"FlowSchema", m.FlowSchemaUID}, {"priority level", m.PriorityLevelUID}} {
		switch {
		case u.uid == nil:
		case *u.uid == "":
			parts = append(parts, "an empty "+u.what+" UID (a mandatory object the apiserver imagined, exempt or catch-all)")
		default:
			parts = append(parts, "the "+u.what+" UID "+*u.uid)
			uids = append(uids, *u.uid)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	s := "The response names " + strings.Join(parts, " and ") + ": the objects APF classified it with (and rejected it at, when the 429 is APF's)"
	if len(uids) > 0 {
		s += "; 'kubectl apf whois " + strings.Join(uids, " ") + "' names them"
	}
	return s + "."
}

// retryWaitMessage explains client-go's wait for a Retry-After alone, a
// line of a trace without the response it answers.
func retryWaitMessage(t string) *Message {
	var delay, attempt, raw string
	if m := reRetryWait.FindStringSubmatch(t); m != nil {
		delay, attempt, raw = m[1], m[2], m[3]
	} else if m := reRetryWaitOld.FindStringSubmatch(t); m != nil {
		delay, attempt, raw = m[1]+"s", m[2], m[3]
	} else {
		return nil
	}
	msg := &Message{Kind: MessageAPF429, APF: true, Delay: delay, Path: pathOf(raw)}
	at := ""
	if attempt != "" {
		at = " before retry " + attempt
	}
	msg.Explanation = fmt.Sprintf("client-go waited %s%s because the server asked it to: the response before was a 429 (or a 5xx) with Retry-After, which API Priority and Fairness sends when a priority level rejects a request. The trace's \"Response\" line before it (-v=8) shows the status and the X-Kubernetes-PF-* headers; explain the request with its identity to see its level and queues", delay, at)
	return msg
}

// findPFResponse returns the last response of a client's trace, of any
// status, when it carries an X-Kubernetes-PF-*-UID header: APF classified
// it (kubectl get -v=8 --as USER shows which FlowSchema a request gets).
func findPFResponse(text string) *traceResponse {
	r := findResponse(text, reStatusAny)
	if r == nil {
		r = findCurlResponse(text, "")
	}
	if r == nil {
		// the headers alone, as "kubectl get -v=8 ... | grep -i
		// x-kubernetes-pf" leaves them
		r = &traceResponse{}
		r.fsUID, r.plUID = pfHeaderUIDs(text)
	}
	if r.fsUID == nil && r.plUID == nil {
		return nil
	}
	return r
}

// curl's response: "curl -i" prints the status line and the headers
// before the body ("HTTP/2 429", "retry-after: 1", then a blank line),
// "curl -v" each prefixed with "< " after the request's "> GET /path
// HTTP/2". Users look up a pod's FlowSchema so (curl -i with the service
// account's token, in the EKS Best Practices Guide's test of its
// FlowSchema).
var (
	reCurlStatus  = regexp.MustCompile(`^(?:< )?HTTP/[0-9.]+ (\d{3})\b[ \t]*([^\r\n]*)`)
	reCurlRequest = regexp.MustCompile(`^> ([A-Z]+) (\S+) HTTP/[0-9.]+`)
	reCurlHeader  = regexp.MustCompile(`^[A-Za-z0-9-]+:`)
)

// what names the text the response was read from, for a sentence.
func (r *traceResponse) what() string {
	if r.curl {
		return "curl's output"
	}
	return "the client's trace"
}

// findCurlResponse returns the last response of curl's output whose
// status is code ("" for any), nil when the text shows none.
func findCurlResponse(text, code string) *traceResponse {
	lines := strings.Split(text, "\n")
	last := -1
	var m []string
	for i, l := range lines {
		if sm := reCurlStatus.FindStringSubmatch(strings.TrimRight(l, "\r")); sm != nil && (code == "" || sm[1] == code) {
			last, m = i, sm
		}
	}
	if last < 0 {
		return nil
	}
	r := &traceResponse{status: strings.TrimSpace(m[1] + " " + m[2]), curl: true}
	block := []string{lines[last]}
	for _, l := range lines[last+1:] {
		h := strings.TrimSpace(strings.TrimPrefix(strings.TrimRight(l, "\r"), "<"))
		if !reCurlHeader.MatchString(h) {
			break
		}
		block = append(block, h)
	}
	r.lines = strings.Join(block, "\n")
	for i := last - 1; i >= 0; i-- {
		if reCurlStatus.MatchString(lines[i]) {
			break // another response's request
		}
		if q := reCurlRequest.FindStringSubmatch(lines[i]); q != nil {
			r.method, r.url = q[1], q[2]
			break
		}
	}
	r.readHeaders()
	return r
}

// classifiedMessage explains a response APF classified and let through
// (or answered otherwise than 429): its PF headers name the FlowSchema and
// the level, which the replay of the request with its identity is compared
// with.
func (r *traceResponse) classifiedMessage() *Message {
	m := r.newMessage(MessagePFHeaders)
	var b strings.Builder
	if m.Status != "" {
		fmt.Fprintf(&b, "%s shows the server answered %s with %s, classified by API Priority and Fairness. ", r.what(), requestText(m), m.Status)
	} else {
		b.WriteString("the response headers show API Priority and Fairness classified the request. ")
	}
	if ids := pfUIDs(m); ids != "" {
		b.WriteString(ids + " ")
	}
	b.WriteString("Explain the request with its identity: the replay's FlowSchema and level are compared with these headers")
	m.Explanation = b.String()
	return m
}
