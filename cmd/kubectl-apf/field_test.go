package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The field test: every artifact of testdata/field (origins in its README)
// run through the commands a user would run on it, each answer compared with
// figures checked by hand against the artifact's own numbers. The comment
// of each row says what was checked and where in the artifact it comes
// from. A row whose right answer the code does not give yet names the fix
// it waits for in pending (an R-row of issue 47, or N1... for a wrong answer
// found here that the issue does not list) and is skipped with that reason;
// it still runs, and says so when it passes, so that pending can go.
//
// TestFieldArtifactsHaveRows fails when an artifact has no row: add its row
// when you add an artifact.

type fieldRow struct {
	name     string
	artifact string // a file or directory under testdata/field
	stdin    bool   // the artifact is piped to standard input
	// args, with "@" for the artifact's path, "@text" for its content and
	// "@line:N" for its line N (from 1).
	args      []string
	code      int
	want      []string // substrings of stdout+stderr
	wantRe    []string // regular expressions over stdout+stderr
	notWant   []string
	notWantRe []string
	pending   string
}

func fieldRows() []fieldRow {
	return []fieldRow{
		// docs-dump_priority_levels.txt, the ten-column layout: its
		// workload-high line reads 0, true, false, 0, 0, 500, 0, 0, 0 and
		// global-default dispatched 46; IsQuiescing is not a column of the
		// table. Eight data lines, so 8 levels.
		{name: "docs levels: the workload-high and global-default lines", artifact: "docs-dump_priority_levels.txt",
			args:   []string{"dump", "levels", "--from", "@"},
			want:   []string{"dump_priority_levels (8 levels)"},
			wantRe: []string{`workload-high\s+-\s+0\s+true\s+0\s+0\s+500\s+0\s+0\s+0\n`, `global-default\s+-\s+0\s+true\s+0\s+0\s+46\s+0\s+0\s+0\n`}},
		// Every RejectedRequests cell of the same dump is 0, so nothing is
		// rejecting; piped, as a user pastes it.
		{name: "docs levels piped to explain 429: nothing rejected", artifact: "docs-dump_priority_levels.txt", stdin: true,
			args: []string{"explain", "429", "--from", "-"},
			want: []string{"no priority level is rejecting requests", "dump_priority_levels (8 levels)"}},
		// docs-dump_queues.txt: queue 14 of workload-low has 27 pending, 0
		// executing, 0 seats in use and InitialSeatsSum 270; queue 74 has
		// 26 and 260. Two "..." lines.
		{name: "docs queues: workload-low 14 and 74", artifact: "docs-dump_queues.txt",
			args:   []string{"dump", "queues", "--from", "@"},
			want:   []string{"skipped 2 elision lines"},
			wantRe: []string{`workload-low\s+14\s+27\s+0\s+0\s+270\n`, `workload-low\s+74\s+26\s+0\s+0\s+260\n`}},
		// docs-dump_requests-details.txt (1.28 layout): two loadtest LISTs
		// wait in queue 14 (positions 0 and 1) with InitialSeats 10 each,
		// so 2 waiting and 20 waiting seats; the exempt LIST has a
		// StartTime, so it executes, with InitialSeats 1.
		{name: "docs requests: loadtest's flow waits with 20 seats", artifact: "docs-dump_requests-details.txt",
			args:   []string{"top", "flows", "--from", "@"},
			wantRe: []string{`workload-low\s+service-accounts\s+system:serviceaccount:default:loadtest\s+2\s+20\s+0\s+0\n`, `exempt\s+exempt\s+-\s+0\s+0\s+1\s+1\n`}},
		{name: "docs requests: queue 14, positions 0 and 1", artifact: "docs-dump_requests-details.txt",
			args:   []string{"dump", "requests", "--from", "@"},
			want:   []string{"dump_requests (3 requests)"},
			wantRe: []string{`workload-low\s+service-accounts\s+waiting\s+14\s+0\s`, `workload-low\s+service-accounts\s+waiting\s+14\s+1\s`}},
		// The same dump's ages: the newest arrival is 00:13:09.086476021
		// on 2023-07-18; the first loadtest LIST came 99.94ms before it
		// (100ms), the exempt LIST on 2023-07-15 at 04:51:25.596404345,
		// 67h21m43.49s before. The figures are right, but the table does
		// not say that AGE counts from the newest arrival (issue 47, also
		// seen).
		{name: "docs requests: AGE from the newest arrival, said so", artifact: "docs-dump_requests-details.txt",
			args:   []string{"dump", "requests", "--from", "@"},
			wantRe: []string{`waiting\s+14\s+0\s+\S+\s+10\s+100ms\s`, `executing\s+-\s+-\s+-\s+1\s+67h21m43.49s\s`, `(?i)newest`}},
		// dump has no -f flag, yet its note suggests "-f" (issue 47, also
		// seen).
		{name: "docs requests: the note suggests no -f to dump", artifact: "docs-dump_requests-details.txt",
			args:    []string{"dump", "requests", "--from", "@"},
			notWant: []string{"a bundle or -f"}},
		// k8s-93376: the only data line is the exempt level's phantom,
		// every cell <none>: no request at all.
		{name: "pre-1.20 phantom row is no request", artifact: "k8s-93376-dump_requests-none.txt",
			args: []string{"dump", "requests", "--from", "@"},
			want: []string{"dump_requests (0 requests)"}, notWant: []string{"exempt"}},
		// eks-concurrency-limit.txt: catch-all 13, workload-low 245 (EKS
		// 1.24, 600 seats); the same figures as 600 × shares / 245 of the
		// default shares, rounded up.
		{name: "EKS limits: top levels", artifact: "eks-concurrency-limit.txt",
			args:   []string{"top", "levels", "--from", "@"},
			wantRe: []string{`catch-all\s+13\s+13\s`, `workload-low\s+245\s+245\s`, `global-default\s+49\s+49\s`}},
		// The metrics hold no exempt series: capacity must not invent an
		// exempt row of 0/0 (R6).
		{name: "EKS limits: capacity invents no exempt row", artifact: "eks-concurrency-limit.txt",
			args:      []string{"capacity", "--from", "@"},
			wantRe:    []string{`eks-concurrency-limit.txt\s+workload-low\s+245\s+245\s`},
			notWantRe: []string{`eks-concurrency-limit.txt\s+exempt\s`}},
		// The metrics show the whole default set of levels at their
		// default limits (catch-all 13 = ceil(600 × 5/245)); with a
		// FlowSchema added by -f the starting configuration is not the
		// mandatory objects alone with catch-all at 600 (R6).
		{name: "EKS limits with -f: catch-all is not imagined at 600", artifact: "eks-concurrency-limit.txt",
			args:      []string{"capacity", "--from", "@", "-f", fieldPath("eks-list-events-flowschema.yaml")},
			wantRe:    []string{`catch-all\s+Reject[^\n]*\s13\s`},
			notWantRe: []string{`catch-all\s+Reject\s+5\s+0\s+unlimited\s+600\s`}},
		{name: "EKS limits: --defaults beside --from", artifact: "eks-concurrency-limit.txt",
			args:   []string{"capacity", "--defaults", "--from", "@"},
			wantRe: []string{`workload-low\s+Queue\s+100\s`}, notWant: []string{"give one"}},
		// The grep holds one family, the limits: no
		// apiserver_flowcontrol_rejected_requests_total and no dump, so
		// whether a level rejects is not in it. It said "no priority level
		// is rejecting requests" (N10, not in issue 47); a partial answer,
		// exit 0.
		{name: "EKS limits: explain 429 does not claim no rejections", artifact: "eks-concurrency-limit.txt",
			args:    []string{"explain", "429", "--from", "@"},
			want:    []string{"cannot tell whether a priority level is rejecting requests: its metrics have no apiserver_flowcontrol_rejected_requests_total", "rejected_requests_total (kubectl get --raw /metrics)"},
			notWant: []string{"no priority level is rejecting requests"}},
		// eks-rejected-inqueue.txt: limit 245, 145 in use (145/245 =
		// 59.2%), 10 in queue, 100 time-out rejections.
		{name: "EKS rejections: top levels", artifact: "eks-rejected-inqueue.txt",
			args:   []string{"top", "levels", "--from", "@"},
			want:   []string{"metrics (4 APF families)", "skipped 4 command lines"},
			wantRe: []string{`workload-low\s+245\s+245\s+145\s+59%\s+10\s`}},
		{name: "EKS rejections: explain 429's figures", artifact: "eks-rejected-inqueue.txt",
			args: []string{"explain", "429", "--from", "@"},
			want: []string{"Level workload-low: rejected time-out 100", "limit 245 seats (nominal 245), 145 in use, 10 waiting"}},
		// All 100 rejections are time-outs, at 59% use: the cause is the
		// wait, not a shortage of seats (R4).
		{name: "EKS rejections: the cause is time-outs", artifact: "eks-rejected-inqueue.txt",
			args: []string{"explain", "429", "--from", "@"},
			want: []string{"cause time-outs"}, notWant: []string{"cause too-little-concurrency"}},
		// The 2016 trace has Content-Type, Date and Content-Length headers
		// and no X-Kubernetes-PF-* header.
		{name: "2016 trace: no PF header", artifact: "cabin-34-kubectl-v99-trace.txt", stdin: true,
			args: []string{"whois", "-"}, code: 1,
			want: []string{"holds no X-Kubernetes-PF-FlowSchema-UID or X-Kubernetes-PF-PriorityLevel-UID header at all"}},

		// k8s-docs-2020-dump_priority_levels.txt, the six-column 1.20
		// layout: seven data lines, exempt all <none>; the layout has no
		// dispatched/rejected/timed-out/cancelled columns, so those are -.
		{name: "2020 docs levels: six columns, exempt <none>", artifact: "k8s-docs-2020-dump_priority_levels.txt",
			args:   []string{"dump", "levels", "--from", "@"},
			want:   []string{"dump_priority_levels (7 levels)"},
			wantRe: []string{`exempt\s+-\s+-\s+-\s+-\s+-\s+-\s+-\s+-\s+-\n`, `workload-low\s+-\s+0\s+true\s+0\s+0\s+-\s+-\s+-\s+-\n`}},
		// The six-column layout has no Dispatched/Rejected/TimedOut/
		// Cancelled columns and the exempt line is all <none>: the table
		// shows "-" for these, JSON gives 0 and false (N7, not in issue
		// 47; R8 is the same for dump_queues).
		{name: "2020 docs levels JSON: absent counters are not 0", artifact: "k8s-docs-2020-dump_priority_levels.txt",
			args:    []string{"dump", "levels", "-o", "json", "--from", "@"},
			want:    []string{`"name": "workload-low"`, `"isIdle": true`},
			notWant: []string{`"dispatchedRequests": 0`, `"rejectedRequests": 0`, `"isIdle": false`}},
		// That layout has no RejectedRequests column: whether a level
		// rejects is not in the input. explain 429 answered "no priority
		// level is rejecting requests", counted "from dump_priority_levels
		// only" (N9, not in issue 47); a partial answer, exit 0.
		{name: "2020 docs levels: explain 429 does not claim no rejections", artifact: "k8s-docs-2020-dump_priority_levels.txt",
			args:    []string{"explain", "429", "--from", "@"},
			want:    []string{"cannot tell whether a priority level is rejecting requests: its dump_priority_levels has no RejectedRequests column", "apiserver_flowcontrol_rejected_requests_total"},
			wantRe:  []string{`(?i)unknown|not count|no rejectedrequests`},
			notWant: []string{"no priority level is rejecting requests", "counted from dump_priority_levels only"}},
		// k8s-docs-2020-dump_queues.txt (VirtualStart layout): five
		// queues, all 0 pending and 0 executing; no SeatsInUse column.
		{name: "2020 docs queues: --all shows the five", artifact: "k8s-docs-2020-dump_queues.txt",
			args:   []string{"dump", "queues", "--all", "--from", "@"},
			want:   []string{"dump_queues (5 queues)", "skipped 1 elision line"},
			wantRe: []string{`leader-election\s+15\s+0\s+0\s+-\s+-\n`, `workload-high\s+2\s+0\s+0\s+-\s+-\n`}},
		// The layout has no SeatsInUse, InitialSeatsSum, MaxSeatsSum or
		// TotalWorkSum: JSON must not give them as 0 (R8).
		{name: "2020 docs queues JSON: absent columns are not 0", artifact: "k8s-docs-2020-dump_queues.txt",
			args:    []string{"dump", "queues", "--all", "-o", "json", "--from", "@"},
			want:    []string{`"index": 15`, `"pendingRequests": 0`},
			notWant: []string{`"seatsInUse": 0`, `"initialSeatsSum": 0`, `"maxSeatsSum": 0`, `"totalWorkSum": 0`}},
		// Without --all the five idle queues are hidden: the table is a
		// bare header, and the note says the five were read but not shown
		// and how to see them; JSON is an empty list, not "null" (N1, not
		// in issue 47).
		// every queue idle: no table of a header alone, as kubectl's
		// "No resources found"
		{name: "2020 docs queues: hidden idle queues are said to be hidden", artifact: "k8s-docs-2020-dump_queues.txt",
			args: []string{"dump", "queues", "--from", "@"},
			want: []string{"No queue has a request waiting or executing (5 queues); --all shows them"}, notWant: []string{"LEVEL"}},
		{name: "2020 docs queues JSON without --all is not null", artifact: "k8s-docs-2020-dump_queues.txt",
			args: []string{"dump", "queues", "-o", "json", "--from", "@"},
			want: []string{"[]"}, notWantRe: []string{`(?m)^null$`}},
		// k8s-docs-2020-dump_requests.txt: the exempt phantom line and one
		// system-nodes request of system:node:127.0.0.1, queue 12,
		// position 0; the layout has no seats and no executing requests.
		{name: "2020 docs requests: one waiting, the phantom dropped", artifact: "k8s-docs-2020-dump_requests.txt",
			args:    []string{"dump", "requests", "--from", "@"},
			want:    []string{"dump_requests (1 request)"},
			wantRe:  []string{`system\s+system-nodes\s+waiting\s+12\s+0\s+system:node:127.0.0.1\s`},
			notWant: []string{"exempt"}},
		// The 1.20 layout has no seat columns; the table and top flows
		// count the request as 1 seat, dump requests -o json gave
		// initialSeats 0 (N8, not in issue 47): one input, two figures.
		// Absent is null, and the table's 1 is said to be assumed.
		{name: "2020 docs requests JSON: the seats the table shows", artifact: "k8s-docs-2020-dump_requests.txt",
			args:    []string{"dump", "requests", "-o", "json", "--from", "@"},
			want:    []string{`"queueIndex": 12`, `"flowDistinguisher": "system:node:127.0.0.1"`, `"initialSeats": null`},
			notWant: []string{`"initialSeats": 0`}},
		{name: "2020 docs requests: the table's 1 seat is said to be assumed", artifact: "k8s-docs-2020-dump_requests.txt",
			args:   []string{"dump", "requests", "--from", "@"},
			want:   []string{"SEATS shows 1 for its request, an assumption"},
			wantRe: []string{`system:node:127.0.0.1\s+1\s`}},
		{name: "2020 docs requests: top levels executing unknown", artifact: "k8s-docs-2020-dump_requests.txt",
			args:   []string{"top", "levels", "--from", "@"},
			wantRe: []string{`system\s+-\s+-\s+-\s+-\s+1\s+1\s+-\s`}},
		// A dump older than 1.28 lists no executing request: top flows
		// must show EXECUTING as -, not 0 (R2).
		{name: "2020 docs requests: top flows executing unknown", artifact: "k8s-docs-2020-dump_requests.txt",
			args:      []string{"top", "flows", "--from", "@"},
			wantRe:    []string{`system\s+system-nodes\s+system:node:127.0.0.1\s+1\s+1\s+-\s+-\n`},
			notWantRe: []string{`system:node:127.0.0.1\s+1\s+1\s+0\s+0\n`}},
		// k8s-docs-2020-dump_requests-details.txt: the documentation's
		// rows stop after APIPath (9 of the header's 14 columns); what is
		// there is two system-nodes creates in queue 12, positions 0 and
		// 1, each by system:node:127.0.0.1, create, with its APIPath. It
		// was refused whole; a partial input gives a partial answer that
		// says what is missing (N2, not in issue 47).
		{name: "2020 docs detailed requests: the columns present are read", artifact: "k8s-docs-2020-dump_requests-details.txt",
			args: []string{"dump", "requests", "--from", "@"},
			want: []string{"2 rows of dump_requests stop after column APIPath: the columns after it are not in the input and show as -"},
			wantRe: []string{`system\s+system-nodes\s+waiting\s+12\s+0\s[^\n]*system:node:127.0.0.1\s+create\s+/api/v1/namespaces/scaletest/configmaps\n`,
				`system\s+system-nodes\s+waiting\s+12\s+1\s`}},

		// k8s-106826: kubectl 1.21 against an exempt request (/version of
		// an admin), headers Audit-Id, Cache-Control, Content-Type,
		// Content-Length, Date and no PF header.
		{name: "exempt trace: no PF header", artifact: "k8s-106826-kubectl-v10-exempt-trace.txt", stdin: true,
			args: []string{"whois", "-"}, code: 1,
			want: []string{"holds no X-Kubernetes-PF-FlowSchema-UID"}},
		// Before kubernetes/kubernetes#106827 (1.23) exempt responses
		// carried no PF headers: the likeliest cause for this 2021 trace.
		{name: "exempt trace: the exempt cause is named", artifact: "k8s-106826-kubectl-v10-exempt-trace.txt", stdin: true,
			args: []string{"whois", "-"}, code: 1,
			want: []string{"exempt"}},

		// k8s-106085-prometheus-table.txt: a Prometheus UI table pasted as
		// Markdown; its rows give concurrency_limit 14 (catch-all), 53
		// (global-default), 27 (leader-election), 105 (node-high), 79
		// (system), 105 (workload-high), and nothing else: no use, no
		// waiting (R9).
		{name: "Prometheus UI table: the six limits", artifact: "k8s-106085-prometheus-table.txt",
			args: []string{"top", "levels", "--from", "@"},
			wantRe: []string{`catch-all\s+14\s+14\s+-\s`, `global-default\s+53\s+53\s+-\s`, `leader-election\s+27\s+27\s+-\s`,
				`node-high\s+105\s+105\s+-\s`, `system\s+79\s+79\s+-\s`, `workload-high\s+105\s+105\s+-\s`},
			notWantRe: []string{`workload-low\s`}},

		// kueue-4508-httplog-kuberay-pods.log, line 2: the first POST of
		// pods (audit-ID 33e27fd2...), apf_fs service-accounts, apf_pl
		// workload-low, resp 201; logged at 22:40:41.976983 after a latency
		// of 11.586316ms, so it arrived at 22:40:41.965396684, on the date
		// its CRI prefix gives, 2025-03-05. The next POST arrived at
		// 42.025081 - 8.426362ms = 42.016655, after this one ended, so it
		// ran with nobody else in the log: dispatched at once (R1).
		{name: "kueue pods log: the year from the CRI prefix, run at once", artifact: "kueue-4508-httplog-kuberay-pods.log",
			args: []string{"explain", "request", "--defaults", "--from-log", "@", "--audit-id", "33e27fd2-d22d-4c4d-9b46-d4efeca06f05", "--service-account", "ray-system/kuberay-operator", "-o", "json"},
			want: []string{`"at": "2025-03-05T22:40:41.965396684Z"`}},
		{name: "kueue pods log: classification agrees, not queued", artifact: "kueue-4508-httplog-kuberay-pods.log",
			args:    []string{"explain", "request", "--defaults", "--from-log", "@", "--audit-id", "33e27fd2-d22d-4c4d-9b46-d4efeca06f05", "--service-account", "ray-system/kuberay-operator"},
			want:    []string{"AGREES: the replay agrees with the server: FlowSchema service-accounts, priority level workload-low", "Verdict: runs", "latency 11.586316ms, execution 11.024848ms"},
			notWant: []string{"Verdict: queued"}},

		// The same request's moment: the log starts with it, so no
		// borrowing pass has seen any demand of the log; the
		// reconstruction's current limit of workload-low is the share
		// borrowing gives an idle level, its lower limit scaled to the
		// server's seats: 245 - round(245 × 90%) = 24 of the lower limits
		// 13 + 24 + 25 + 73 + 50 + 49 + 24 = 258, so 600 × 24/258 = 55.8,
		// 56 seats; its nominal limit is ceil(600 × 100/245) = 245. It
		// printed "0 of
		// workload-low's 56 seats" under "nominal limit 245 seats" without
		// saying which was which (N11, not in issue 47).
		{name: "kueue pods log: the assumed current limit is said to be one", artifact: "kueue-4508-httplog-kuberay-pods.log",
			args: []string{"explain", "request", "--defaults", "--from-log", "@", "--audit-id", "33e27fd2-d22d-4c4d-9b46-d4efeca06f05", "--service-account", "ray-system/kuberay-operator"},
			want: []string{"nominal limit 245 seats (of a server limit of 600)", "workload-low: 0 of 56 seats in use (current limit; nominal 245), 0 waiting",
				"workload-low's 56 seats at the time: an assumed current limit, not a figure of the log"}},

		// k8s-120126, line 1: GET configmaps/nginx-cfgmap by a kubelet,
		// apf_fs system-nodes, apf_pl system, latency 1.926865ms,
		// execution 1.269527ms. As system:node:node-1 in system:nodes
		// it matches system-nodes (precedence 500), whose distinguisher is
		// ByUser, so the flow is the user given.
		{name: "kubelet line: given identity, system-nodes", artifact: "k8s-120126-kubelet-configmap-httplog.txt",
			args: []string{"explain", "request", "--defaults", "--from-log", "@line:1", "--user-name", "system:node:node-1", "--group", "system:nodes"},
			want: []string{"✓ system-nodes (precedence 500, level system)", `Flow: distinguisher "system:node:node-1" (method ByUser)`,
				"AGREES: the replay agrees with the server: FlowSchema system-nodes, priority level system",
				"the server took latency 1.926865ms, execution 1.269527ms"}},
		// The file: its last request (08:58:14) took 1.563356ms of which
		// 929.214µs executing, so 634.142µs before execution, with
		// nobody else in the log. The hand of that flow (printed as
		// 31 41 53 23 38 17) holds the queue it would wait in and the
		// queues listed; 634µs alone is not a wait in a queue (R1).
		{name: "kubelet log file: hand, queue and verdict agree", artifact: "k8s-120126-kubelet-configmap-httplog.txt",
			args:      []string{"explain", "request", "--defaults", "--from-log", "@", "--user-name", "system:node:node-1", "--group", "system:nodes"},
			want:      []string{"Hand of queues: 31 41 53 23 38 17", "queue 41:", "queue 17:"},
			notWant:   []string{"Verdict: queued", "queue 28", "queue 37:"},
			notWantRe: []string{`in queue (0|28|30|37|48) of system`}},
		// The CRI prefix of each line carries the year: 2023-08-23.
		{name: "kubelet log file JSON: the year from the log", artifact: "k8s-120126-kubelet-configmap-httplog.txt",
			args:    []string{"explain", "request", "--defaults", "--from-log", "@", "--user-name", "system:node:node-1", "--group", "system:nodes", "-o", "json"},
			want:    []string{`"at": "2023-08-23T08:58:14`},
			notWant: []string{`"at": "2000-`}},

		// k8s-105370, the node-problem-detector line: apf_fs and apf_pl
		// global-default, apf_fd system:node-problem-detector, latency
		// 5.586004ms. No 1.37 default FlowSchema before global-default
		// (9900) matches that user, and global-default is ByUser.
		{name: "NPD line: global-default, flow of its user", artifact: "k8s-105370-httplog-global-default.txt",
			args: []string{"explain", "request", "--defaults", "--from-log", "@line:7", "--user-name", "system:node-problem-detector"},
			want: []string{"✓ global-default (precedence 9900, level global-default)", `Flow: distinguisher "system:node-problem-detector" (method ByUser)`,
				"AGREES: the replay agrees with the server: FlowSchema global-default, priority level global-default", "the server took latency 5.586004ms"}},
		// The same line explained as bob: the server's apf_fd says the
		// flow was system:node-problem-detector's, so the given identity
		// is not the request's; the answer said AGREES and never named
		// the logged flow (N4, not in issue 47).
		{name: "NPD line as another user: the logged flow disagrees", artifact: "k8s-105370-httplog-global-default.txt",
			args:    []string{"explain", "request", "--defaults", "--from-log", "@line:7", "--user-name", "bob"},
			want:    []string{`DISAGREES: the replay's FlowSchema global-default and priority level global-default are the server's, but its flow is not: the server's flow distinguisher (apf_fd) was "system:node-problem-detector", the replay's "bob"`},
			notWant: []string{"AGREES: the replay agrees"}},
		// The kube-proxy line as published has no klog header, but holds
		// "HTTP", verb, URI, apf_pl, apf_fs and apf_fd global-default /
		// system:kube-proxy, latency 1.36583ms: it is an httplog request
		// whose time is unknown (N3, not in issue 47; it was "no ...
		// request found in the line given").
		{name: "kube-proxy line without klog header", artifact: "k8s-105370-httplog-global-default.txt",
			args: []string{"explain", "request", "--defaults", "--from-log", "@line:3", "--user-name", "system:kube-proxy"},
			want: []string{"✓ global-default (precedence 9900, level global-default)", `Flow: distinguisher "system:kube-proxy"`,
				"AGREES: the replay agrees with the server: FlowSchema global-default, priority level global-default", "the server took latency 1.36583ms",
				"the log line has no klog header", "when the request was logged is unknown"},
			notWant: []string{"no kube-apiserver httplog"}},

		// kueue-4508, line 2: kuberay-operator's POST of a pod, apf_fs
		// service-accounts, apf_pl workload-low, apf_iseats=1,
		// apf_fseats=2, apf_additionalLatency 5ms, latency 11.586316ms,
		// execution 11.024848ms. Any service account outside kube-system
		// falls to service-accounts (precedence 9000).
		{name: "kuberay POST: service-accounts, the server's seats", artifact: "kueue-4508-httplog-posts.txt",
			args: []string{"explain", "request", "--defaults", "--from-log", "@line:2", "--service-account", "ray-system/kuberay-operator"},
			want: []string{"✓ service-accounts (precedence 9000, level workload-low)", "AGREES: the replay agrees with the server: FlowSchema service-accounts, priority level workload-low",
				"the server estimated 1 seat, then 2 final seats for 5ms", "the server took latency 11.586316ms, execution 11.024848ms"}},
		// Line 6: kube-scheduler's binding, apf_fs kube-scheduler, apf_pl
		// workload-high. kube-scheduler (precedence 800, as in
		// get-flowschemas-eks.txt) distinguishes ByNamespace, so the flow
		// is the namespace e2e-tas-rayjob-lgmbj.
		{name: "kube-scheduler binding: kube-scheduler, flow of the namespace", artifact: "kueue-4508-httplog-posts.txt",
			args: []string{"explain", "request", "--defaults", "--from-log", "@line:6", "--user-name", "system:kube-scheduler"},
			want: []string{"✓ kube-scheduler (precedence 800, level workload-high", `Flow: distinguisher "e2e-tas-rayjob-lgmbj" (method ByNamespace)`,
				"AGREES: the replay agrees with the server: FlowSchema kube-scheduler, priority level workload-high"}},
		// The file as kube-scheduler: the last binding was logged at
		// 43.002218 after 4.112935ms, so it arrived at 42.998105; the
		// other three bindings arrived at 42.995806, 42.996342 and
		// 42.997477 and ended at 42.999502, 42.999677 and 43.000337, so
		// three of the scheduler's one-seat requests executed when it
		// came, nobody waited, and it ran at once.
		{name: "kube-scheduler bindings file: three seats in use, runs at once", artifact: "kueue-4508-httplog-posts.txt",
			args: []string{"explain", "request", "--defaults", "--from-log", "@", "--user-name", "system:kube-scheduler"},
			want: []string{"Verdict: runs", "at 22:40:42.998 it was dispatched at once: workload-high had 3 of its", "seats held by: kube-scheduler/e2e-tas-rayjob-lgmbj ×3",
				"the server took latency 4.112935ms, execution 3.769201ms"}},
		// The CRI prefix carries the year 2025 (R1: today 2000).
		{name: "kube-scheduler bindings file JSON: the year from the log", artifact: "kueue-4508-httplog-posts.txt",
			args:    []string{"explain", "request", "--defaults", "--from-log", "@", "--user-name", "system:kube-scheduler", "-o", "json"},
			want:    []string{`"at": "2025-03-05T22:40:42.998105065Z"`},
			notWant: []string{`"at": "2000-`}},
		// The same file through explain 429 without a cluster, as the
		// README's offline example runs it (S5 of issue 58: --defaults was
		// an unknown flag): eight requests, every answer 201, no 429,
		// and the reconstruction agrees with all eight.
		{name: "kueue POSTs and bindings: explain 429 --workload --defaults offline", artifact: "kueue-4508-httplog-posts.txt",
			args: []string{"explain", "429", "--defaults", "--workload", "@", "--server", "http://127.0.0.1:1"},
			want: []string{"No 429 from APF in the log.", "agree with the log's answers on 8 of 8 requests"}},
		// k3s-2278: a 1.18 httplog line (verb=, URI=, resp=200, no "HTTP"
		// and no apf_* field) and four lines of other components.
		{name: "1.18 httplog file: no request of the -v=3 form", artifact: "k3s-2278-httplog-pre-apf.txt",
			args: []string{"explain", "request", "--defaults", "--from-log", "@"}, code: 1,
			want: []string{`no kube-apiserver httplog ("HTTP" lines, -v=3) request found in`}},
		// Given as a line, it was taken for a file name and the error was
		// "open <the whole line>: no such file or directory" (N5, not in
		// issue 47); it is read as a line, and refused with why.
		{name: "1.18 httplog line is not taken for a file name", artifact: "k3s-2278-httplog-pre-apf.txt",
			args: []string{"explain", "request", "--defaults", "--from-log", "@line:1"}, code: 1,
			want:    []string{"request found in the line given: it is an httplog line of the form before 1.22", `without the "HTTP" message and the apf_* fields`},
			notWant: []string{"no such file or directory"}},

		// get-flowschemas-eks.txt is the table of "kubectl get
		// flowschemas", not objects: a clear refusal.
		{name: "kubectl get table: explain 429 refuses it", artifact: "get-flowschemas-eks.txt",
			args: []string{"explain", "429", "--from", "@"}, code: 1,
			want: []string{`line 2: "NAME`}},
		// lint said "cannot unmarshal string into Go value of type
		// lint.typeMeta" (N6, not in issue 47): the answer says the file
		// is a table and how to get objects.
		{name: "kubectl get table: lint refuses it plainly", artifact: "get-flowschemas-eks.txt",
			args: []string{"lint", "--defaults", "-f", "@"}, code: 2,
			want:   []string{`a "kubectl get" table, not objects`},
			wantRe: []string{`-o (yaml|json)`}, notWant: []string{"typeMeta", "Go value"}},
		// eks-list-events-flowschema.yaml: precedence 8000, level
		// catch-all, ServiceAccount default/default, list events in
		// default. The guide: catch-all "only allows 13 inflight
		// requests", and the 1.37 default catch-all is ceil(600 × 5/245)
		// = 13 too; catch-all rejects instead of queuing.
		{name: "EKS FlowSchema: default/default's event LIST goes to catch-all", artifact: "eks-list-events-flowschema.yaml",
			args: []string{"explain", "request", "--defaults", "-f", "@", "--service-account", "default/default", "list", "/api/v1/namespaces/default/events"},
			want: []string{"✓ list-events-default-service-accounts (precedence 8000, level catch-all)", "Priority level catch-all", "limitResponse Reject", "nominal limit 13 seats (of a server limit of 600)"}},
		{name: "EKS FlowSchema: lint warns of a Reject level with traffic", artifact: "eks-list-events-flowschema.yaml",
			args: []string{"lint", "--defaults", "-f", "@"},
			want: []string{"reject-level-with-traffic  flowschema/list-events-default-service-accounts prioritylevelconfiguration/catch-all", "0 errors, 1 warning"}},
		// k8s-134196: a level of 0 shares (0 seats) that rejects, for one
		// service account. Upstream starts a request wider than the
		// level's limit when nothing else executes there (queueset.go
		// canAccommodateSeatsLocked): 1 seat > 0, so the jail admits one
		// request at a time, the 200s the reporter saw.
		{name: "jail of 0 seats: a request runs when the level is idle", artifact: "k8s-134196-jail-reject.yaml",
			args:    []string{"explain", "request", "--defaults", "-f", "@", "--service-account", "monitoring/grafana-alloy", "get", "pods/x", "-n", "monitoring"},
			want:    []string{"✓ jail-grafana-alloy (precedence 5, level workload-jail)", "nominal limit 0 seats", "workload-jail has no queues, so the request runs at once only when nothing else executes there (its 1 seat is more than the level's limit of 0", "kubernetes/kubernetes#134196"},
			notWant: []string{"if its 1 seat fits beside those in use"}},
		{name: "jail of 0 seats: lint says it admits when idle", artifact: "k8s-134196-jail-reject.yaml",
			args: []string{"lint", "--defaults", "-f", "@"},
			want: []string{"reject-level-admits-when-idle  prioritylevelconfiguration/workload-jail flowschema/jail-grafana-alloy", "yet admits one request whenever none executes there"}},
		// k8s-106286: two JSON fragments of an audit event, not an event.
		{name: "eviction fragments: not an audit event", artifact: "k8s-106286-eviction-429-audit.txt",
			args: []string{"explain", "request", "--defaults", "--from-audit", "@"}, code: 1,
			want: []string{"no audit event"}},
		// Their message: "Cannot evict pod as it would violate the pod's
		// disruption budget." with reason TooManyRequests, code 429.
		{name: "eviction fragments as a message: PodDisruptionBudget", artifact: "k8s-106286-eviction-429-audit.txt",
			args: []string{"explain", "request", "--defaults", "--from-message", "@text"},
			want: []string{"pod-disruption-budget (not API Priority and Fairness)"}},
		// k8s-123317: two audit events reduced by their reporter (" ..."
		// inside the JSON, each in backquotes): no whole event, two lines
		// unreadable.
		{name: "reduced audit events: refused, both lines counted", artifact: "k8s-123317-audit-events-reduced.txt",
			args: []string{"explain", "request", "--defaults", "--from-audit", "@"}, code: 1,
			want: []string{"no audit event (ResponseComplete stage) request found in", "2 lines could not be read as requests"}},
		// stackengine: line 1 is kubectl's text of a plain-text 429; line 2
		// is client-go's own wait of 1.237s for GET .../default/pods.
		{name: "stackengine line 1: an APF 429", artifact: "stackengine-429-client-throttling.txt",
			args: []string{"explain", "request", "--defaults", "--from-message", "@line:1"},
			want: []string{"Message: apf-429 (API Priority and Fairness)"}},
		{name: "stackengine line 2: client-side throttling", artifact: "stackengine-429-client-throttling.txt",
			args: []string{"explain", "request", "--defaults", "--from-message", "@line:2"},
			want: []string{"client-side-throttling (not API Priority and Fairness)", "request GET /api/v1/namespaces/default/pods, delayed 1.237s"}},
		// drill-9: kubectl -v=8 as its author pasted it, the header block
		// joined into the Response line and the URL elided: a 429 with
		// Retry-After 32 (above the watch cache's 30 and the Eviction
		// API's 10, so APF's), and client-go's wait of 32s before its
		// first retry of .../api/v1/namespaces/default/pods (S9 of issue
		// 58: unrecognised). The paste names no method and no user.
		{name: "drill-9 kubectl -v=8: the 429 and its Retry-After", artifact: "drill-9-kubectl-v8-429.txt",
			args: []string{"explain", "request", "--defaults", "--from-message", "@text"},
			want: []string{"Message: apf-429 (API Priority and Fairness)", "request /api/v1/namespaces/default/pods, delayed 32s",
				"answered 429 Too Many Requests, Retry-After 32s", "A Retry-After of 32 s is API Priority and Fairness's", "but not its method nor who sent it"}},
		// built/kubectl-v8-429-trace.txt: GET of default's pods (limit
		// 500) on its Request line; the Response's headers Retry-After 32
		// and both PF UIDs; the wait of 32s before retry 1.
		{name: "built kubectl -v=8 trace: request, Retry-After, PF UIDs", artifact: "built/kubectl-v8-429-trace.txt",
			args: []string{"explain", "request", "--defaults", "--from-message", "@text"},
			want: []string{"request GET /api/v1/namespaces/default/pods?limit=500, delayed 32s", "answered 429 Too Many Requests, Retry-After 32s",
				"X-Kubernetes-PF-FlowSchema-UID: 7a6f0a3e-9b1c-4c1e-8b8a-2d1c0e9f4a11", "X-Kubernetes-PF-PriorityLevel-UID: 0c9d1f2a-4e5b-4a6c-9d7e-8f9a0b1c2d3e",
				"kubectl apf whois 7a6f0a3e-9b1c-4c1e-8b8a-2d1c0e9f4a11 0c9d1f2a-4e5b-4a6c-9d7e-8f9a0b1c2d3e"}},
		// With the user, the request is classified: alice's LIST of pods in
		// default goes to global-default (precedence 9900) at 1.37.
		{name: "built kubectl -v=8 trace with the user: classified", artifact: "built/kubectl-v8-429-trace.txt",
			args: []string{"explain", "request", "--defaults", "--user-name", "alice", "--from-message", "@text"},
			want: []string{"✓ global-default (precedence 9900, level global-default)", "the client's trace shows the server answered GET /api/v1/namespaces/default/pods?limit=500 with 429 Too Many Requests"}},
		// built/curl-i-200.txt: HTTP/2 200 with both PF UIDs in
		// lowercase headers, then the body (cut); curl -i names no
		// request.
		{name: "built curl -i: a classified 200", artifact: "built/curl-i-200.txt", stdin: true,
			args: []string{"explain", "request", "--defaults", "--from-message", "-"},
			want: []string{"Message: apf-headers (API Priority and Fairness)", "answered 200", "X-Kubernetes-PF-FlowSchema-UID: f8e3d442-b850-492c-88be-91f6e9a33596",
				"X-Kubernetes-PF-PriorityLevel-UID: 50416bbd-317f-4c47-b73c-eb681e7bf50a"}},
		// built/curl-v-429.txt: "> GET /api/v1/namespaces/apf-load/configmaps",
		// then HTTP/2 429 with retry-after 32 and both PF UIDs.
		{name: "built curl -v: the 429, its request and Retry-After", artifact: "built/curl-v-429.txt", stdin: true,
			args: []string{"explain", "request", "--defaults", "--from-message", "-"},
			want: []string{"Message: apf-429 (API Priority and Fairness)", "request GET /api/v1/namespaces/apf-load/configmaps", "answered 429, Retry-After 32s",
				"X-Kubernetes-PF-FlowSchema-UID: 962e88bc-1f4a-4b43-9735-9a432973ac3a", "curl's output shows the server answered", "curl does not retry it"},
			notWant: []string{"client-go waits that long"}},
		// explain 429 has no --from-message; the answer points to the
		// command that has (R11).
		{name: "stackengine line 1 to explain 429", artifact: "stackengine-429-client-throttling.txt",
			args: []string{"explain", "429", "--from-message", "@line:1"}, code: 1,
			want: []string{"explain request --from-message"}},

		// kueue: the FlowSchema visibility names level "kueue-visibility"
		// (spec.priorityLevelConfiguration.name), the level is named
		// "visibility"; both carry metadata.namespace "system".
		{name: "kueue: dangling level, unused level", artifact: "kueue",
			args: []string{"lint", "--defaults", "-f", "@"}, code: 1,
			want: []string{`FlowSchema visibility references priority level "kueue-visibility": no such PriorityLevelConfiguration`,
				"priority level visibility is used by no FlowSchema", `metadata.namespace "system"`}},
		// The same objects: the FlowSchema (precedence 9000) matches
		// alice's GET of the visibility API but is dangling, so the
		// apiserver skips it and global-default (9900) takes it. The unused
		// level visibility still has 10 shares: 245 + 10 = 255, and
		// global-default gets ceil(600 × 20/255) = 48 seats.
		{name: "kueue: the dangling schema is skipped, global-default at 48", artifact: "kueue",
			args: []string{"explain", "request", "--defaults", "-f", "@", "--user-name", "alice", "get", "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"},
			want: []string{`skipped: dangling, priority level "kueue-visibility" is missing`, "✓ global-default (precedence 9900, level global-default)", "nominal limit 48 seats (of a server limit of 600)"}},
		// karpenter in its own namespace: service account karpenter/
		// karpenter is in no default FlowSchema's subjects before 200 and
		// 1000, so nothing shadows it.
		{name: "karpenter in karpenter: clean", artifact: "karpenter-karpenter-ns",
			args: []string{"lint", "--defaults", "-f", "@"},
			want: []string{"0 errors, 0 warnings"}},
		// karpenter in kube-system: system-leader-election (100) takes
		// kube-system's service accounts' leases before
		// karpenter-leader-election (200), and kube-system-service-accounts
		// (900) takes everything of them before karpenter-workload (1000).
		{name: "karpenter in kube-system: both schemas shadowed", artifact: "karpenter-kube-system",
			args: []string{"lint", "--defaults", "-f", "@"}, code: 1,
			want: []string{"FlowSchema karpenter-leader-election (precedence 200) can never match: every request it matches is matched first by system-leader-election (precedence 100)",
				"FlowSchema karpenter-workload (precedence 1000) can never match: every request it matches is matched first by kube-system-service-accounts (precedence 900)"}},
		// openshift-kube-apiserver-operator: probes (precedence 2) sends
		// groups system:authenticated and system:unauthenticated to exempt
		// for GET of /healthz, /readyz and /livez alone: upstream's
		// suggested probes (k8s.io/apiserver
		// pkg/apis/flowcontrol/bootstrap/default.go), its two subjects in
		// the other order and distinguisherMethod ByUser where upstream's
		// has none. Exempting the health checks is not flagged (S4 of
		// issue 58), and the order of the subjects is no difference: the
		// one difference named is distinguisherMethod.
		{name: "openshift kube-apiserver operator: probes exempts the health checks alone", artifact: "openshift-kube-apiserver-operator",
			args:    []string{"lint", "--defaults", "-f", "@"},
			want:    []string{"flowschema/probes differs from the v1.37 suggestion in distinguisherMethod but", "0 errors, 2 warnings"},
			notWant: []string{"exempt-beyond-masters", "FlowSchema probes routes", "distinguisherMethod, rules"}},
		// Its level openshift-control-plane-operators has
		// assuredConcurrencyShares 10, 128 queues, hand 6, length 50.
		// Default shares 5+20+10+40+30+40+100 = 245, so nominal limits at
		// 600 seats sum to 13+49+25+98+74+98+245 = 602; with 10 more
		// shares (255): ceil(600 × 10/255) = 24 for the new level, 236
		// for workload-low (600 × 100/255 = 235.3) and the sum 605.
		{name: "openshift kube-apiserver operator: capacity of the new level", artifact: "openshift-kube-apiserver-operator",
			args:   []string{"capacity", "--defaults", "-f", "@"},
			want:   []string{"nominal limits sum to 602->605"},
			wantRe: []string{`openshift-control-plane-operators \(new\)\s+Queue\s+10\s+0\s+unlimited\s+24\s`, `workload-low\s+Queue\s+100\s+90\s+unlimited\s+245->236\s`, `128/6/50`}},
		// openshift-apiserver-operator alone: its FlowSchemas name levels
		// openshift-aggregated-api-delegated-auth and
		// openshift-control-plane-operators, defined in neither file ...
		{name: "openshift apiserver operator alone: two dangling levels", artifact: "openshift-apiserver-operator",
			args: []string{"lint", "--defaults", "-f", "@"}, code: 1,
			want: []string{`references priority level "openshift-control-plane-operators": no such PriorityLevelConfiguration`,
				`references priority level "openshift-aggregated-api-delegated-auth": no such PriorityLevelConfiguration`}},
		// ... and with the kube-apiserver operator's file, which defines
		// openshift-control-plane-operators, only the other is missing.
		{name: "both openshift operators: one dangling level", artifact: "openshift-apiserver-operator",
			args: []string{"lint", "--defaults", "-f", "@", "-f", fieldPath("openshift-kube-apiserver-operator")}, code: 1,
			want:    []string{`references priority level "openshift-aggregated-api-delegated-auth": no such PriorityLevelConfiguration`},
			notWant: []string{`references priority level "openshift-control-plane-operators"`}},
		// kubernetes-docs: health-for-strangers (precedence 1000) sends
		// system:unauthenticated's /healthz, /livez, /readyz to exempt,
		// every verb: the health checks alone, as upstream's probes
		// exempts them, so not flagged (S4 of issue 58); the 1.37 default
		// probes (precedence 2) matches their GETs first.
		{name: "docs examples: lint", artifact: "kubernetes-docs",
			args:    []string{"lint", "--defaults", "-f", "@"},
			want:    []string{"reject-level-with-traffic  flowschema/list-events-default-service-account prioritylevelconfiguration/catch-all", "0 errors, 1 warning"},
			notWant: []string{"exempt-beyond-masters"}},
		{name: "docs examples: an anonymous /healthz meets probes first", artifact: "kubernetes-docs",
			args: []string{"explain", "request", "--defaults", "-f", "@", "--anonymous", "get", "/healthz"},
			want: []string{"✓ probes (precedence 2, level exempt)"}, notWant: []string{"✓ health-for-strangers"}},

		// built/two-scrapes: the EKS grep twice, as two scrapes of one
		// server: workload-low's limit is 245, not 245 + 245 (R7).
		{name: "two scrapes: series not summed", artifact: "built/two-scrapes",
			args:   []string{"top", "levels", "--from", "@"},
			wantRe: []string{`workload-low\s+245\s+245\s`}, notWant: []string{"490"}},
		// built/metrics-two-sources: the EKS guide's limits of seven levels
		// (eks-concurrency-limit.txt) and its four greps of workload-low
		// (eks-rejected-inqueue.txt: in use 145, 10 waiting, 100 time-outs)
		// in one directory. No file holds the seats in use or the waiting
		// requests of the six other levels, which each file alone does not
		// show: the join gave them 0 ("global-default ... 0 of 49 seats in
		// use and no request waits"; S6 of issue 58). They stay -.
		{name: "metrics of two inputs: what neither holds stays unknown", artifact: "built/metrics-two-sources",
			args:      []string{"top", "levels", "--from", "@"},
			want:      []string{"are not in every input that names a level: their figures of the levels only the other inputs name are unknown (-), not 0"},
			wantRe:    []string{`workload-low\s+245\s+245\s+145\s+59%\s+10\s`, `global-default\s+49\s+49\s+-\s+-\s+-\s`, `catch-all\s+13\s+13\s+-\s+-\s+-\s`},
			notWantRe: []string{`global-default\s+49\s+49\s+0\s`}},
		// The rejections of the six levels are not in the input either.
		{name: "metrics of two inputs: explain 429 does not take the others' rejections for none", artifact: "built/metrics-two-sources",
			args: []string{"explain", "429", "--from", "@"},
			want: []string{"Level workload-low: rejected time-out 100", "limit 245 seats (nominal 245), 145 in use, 10 waiting",
				"whether catch-all, global-default, leader-election, node-high, system, workload-high reject requests is unknown"}},
		// built/metrics-and-flowschema: the EKS limits and the EKS
		// FlowSchema in one directory. The FlowSchema is an object the
		// input holds (one FlowSchema, no PriorityLevelConfiguration), so
		// it is read and takes its place in the matching order at
		// precedence 8000, not "ignored" (issue 47, also seen). Its level,
		// catch-all, is not among the input's objects, but is mandatory
		// (see the next row).
		{name: "metrics and a FlowSchema in one directory: the object is used", artifact: "built/metrics-and-flowschema",
			args:    []string{"explain", "request", "--from", "@", "--service-account", "default/default", "list", "/api/v1/namespaces/default/events"},
			want:    []string{"objects from eks-list-events-flowschema.yaml: 1 FlowSchema, 0 PriorityLevelConfigurations", "list-events-default-service-accounts (precedence 8000, level catch-all)"},
			notWant: []string{"ignored eks-list-events-flowschema.yaml"}},
		// The same: the metrics show catch-all's current limit 13, so the
		// server has that level, and kube-apiserver always creates the
		// mandatory catch-all as an object; with no level among the
		// input's objects, the FlowSchema was called dangling, catch-all
		// "imagined by the server" printed its nominal 600 beside
		// "current 13" with nothing saying which was which (N12, not in
		// issue 47). The mandatory levels are taken as the input's, the
		// FlowSchema matches, and notes say the levels are those alone
		// and that 13 is the server's, outside what 600 allows (lower
		// 600, upper 1200).
		{name: "metrics and a FlowSchema in one directory: no PriorityLevelConfigurations said", artifact: "built/metrics-and-flowschema",
			args: []string{"explain", "request", "--from", "@", "--service-account", "default/default", "list", "/api/v1/namespaces/default/events"},
			want: []string{"✓ list-events-default-service-accounts (precedence 8000, level catch-all)",
				"the input holds FlowSchemas but no PriorityLevelConfigurations: the levels are the mandatory exempt and catch-all",
				"catch-all's current limit 13 is the server's (its metrics), outside the lower and upper limits (600 to 1200)"},
			notWant: []string{"skipped: dangling", "Priority level catch-all (uid none: imagined by the server)"}},
		// built/prometheus-ui-table.txt: the EKS figures in the table view
		// form, labels joined by ", " and the value after a tab. This
		// form is read; R9's refused paste is not public, so R9 has no row.
		{name: "Prometheus UI table", artifact: "built/prometheus-ui-table.txt",
			args:   []string{"top", "levels", "--from", "@"},
			wantRe: []string{`workload-low\s+245\s+245\s`, `catch-all\s+13\s+13\s`}},
		// k8s-129086: the three upper_limit_seats lines of catch-all (613),
		// exempt (600) and global-default (649), a family of no column of
		// top levels. It noted "metrics (1 APF family)", then said the input
		// "gave neither metrics nor debug dumps" (S3 of issue 58): one line
		// says what it holds, of which levels, and what the table needs.
		{name: "upper_limit_seats alone: top levels says what it holds", artifact: "k8s-129086-upper-limit-seats.txt",
			args: []string{"top", "levels", "--from", "@"}, code: 1,
			want:    []string{"its metrics hold apiserver_flowcontrol_upper_limit_seats alone (of levels catch-all, exempt and global-default), which gives no figure of the table", "top levels needs the debug dumps, or metrics of the levels' limits, seats or requests"},
			notWant: []string{"gave neither metrics nor debug dumps"}},
		// k8s-130139: the work_estimated_seats buckets of FlowSchema and
		// level list-pods (84 requests, all of 1 seat), pasted without
		// their TYPE line: the same (S3 of issue 58).
		{name: "work_estimated_seats alone: top levels says what it holds", artifact: "k8s-130139-work-estimated-seats.txt",
			args: []string{"top", "levels", "--from", "@"}, code: 1,
			want:    []string{"its metrics hold apiserver_flowcontrol_work_estimated_seats_bucket alone (of level list-pods), which gives no figure of the table"},
			notWant: []string{"gave neither metrics nor debug dumps"}},
		// built/prometheus-ui-table-rejected.txt: workload-low's 100
		// time-out rejections in a Prometheus UI table. One scrape of a
		// counter gives no rate: the answer says so and where its totals
		// are read (S3 of issue 58) ...
		{name: "rejections table alone: top levels points to explain 429", artifact: "built/prometheus-ui-table-rejected.txt",
			args: []string{"top", "levels", "--from", "@"}, code: 1,
			want:    []string{"its metrics hold apiserver_flowcontrol_rejected_requests_total alone (of level workload-low)", "one scrape's totals since the apiserver started are explain 429's"},
			notWant: []string{"gave neither metrics nor debug dumps"}},
		// ... and explain 429 reads them.
		{name: "rejections table: explain 429's totals", artifact: "built/prometheus-ui-table-rejected.txt",
			args: []string{"explain", "429", "--from", "@"},
			want: []string{"Level workload-low: rejected time-out 100"}},
		// The EKS grep of the limits alone: the partial table, and a note
		// of the columns its families do not give (S3 of issue 58).
		{name: "EKS limits: top levels names what the grep lacks", artifact: "eks-concurrency-limit.txt",
			args:   []string{"top", "levels", "--from", "@"},
			want:   []string{"its metrics are part of a scrape (apiserver_flowcontrol_request_concurrency_limit alone), without the families of SEATS-IN-USE, UTIL, WAITING, WAITING-SEATS, EXECUTING and WAIT-P99: they show as -"},
			wantRe: []string{`workload-low\s+245\s+245\s+-\s`}},
		// built/dump-levels-rejected-plus-grep.txt: global-default's
		// RejectedRequests 1533 in the dump, and one metric line of
		// another level.
		{name: "dump with a grepped line: dump levels", artifact: "built/dump-levels-rejected-plus-grep.txt",
			args:   []string{"dump", "levels", "--from", "@"},
			wantRe: []string{`global-default\s+-\s+0\s+true\s+0\s+0\s+46\s+1533\s+0\s+0\n`}},
		// explain 429 must still count the dump's 1533 rejections (R3),
		// printed as a count, not 1.53e+03.
		{name: "dump with a grepped line: explain 429 sees 1533 rejected", artifact: "built/dump-levels-rejected-plus-grep.txt",
			args:    []string{"explain", "429", "--from", "@"},
			wantRe:  []string{`global-default[^\n]*\b1,?533\b`},
			notWant: []string{"no priority level is rejecting requests", "e+03", "--seat level"}},
		// The same dump's global-default line: WaitingRequests 0 and
		// ExecutingRequests 0 (its fifth and sixth columns); a dump counts
		// requests, not seats, so the seats in use are unknown. explain 429
		// printed "- in use" and left the executing count out, which its
		// JSON held (issue 58, also seen).
		{name: "dump with a grepped line: explain 429 shows the dump's executing count", artifact: "built/dump-levels-rejected-plus-grep.txt",
			args:    []string{"explain", "429", "--from", "@"},
			want:    []string{"limit - seats (nominal -), 0 executing (seats in use unknown), 0 waiting", "0 requests executing, from dump_priority_levels"},
			notWant: []string{"- in use"}},
		// built/prose-then-rejected.txt: the guide's sentence, then its
		// block (100 time-out rejections of workload-low), piped (R10).
		{name: "prose then metrics, piped to explain 429", artifact: "built/prose-then-rejected.txt", stdin: true,
			args:    []string{"explain", "429", "--from", "-"},
			want:    []string{"Level workload-low: rejected time-out 100"},
			notWant: []string{"standard input is empty"}},
		// built/bundle-files-raw: a bundle's files of its instance in a
		// raw directory; flowschemas.json and
		// prioritylevelconfigurations.json are the apiserver's typed lists
		// (FlowSchemaList, PriorityLevelConfigurationList) of 13 and 10
		// items without kind. lint said "holds no FlowSchema or
		// PriorityLevelConfiguration (13 other objects)" (S7 of issue 58):
		// the 13 are FlowSchemas, and without the levels' file apf-load and
		// apf-load-reject name levels -f does not define.
		{name: "bundle's FlowSchemaList: lint reads its 13 FlowSchemas", artifact: "built/bundle-files-raw",
			args: []string{"lint", "--defaults", "-f", fieldPath("built/bundle-files-raw/flowschemas.json")}, code: 1,
			want:    []string{`FlowSchema apf-load references priority level "apf-load": no such PriorityLevelConfiguration`, `FlowSchema apf-load-reject references priority level "apf-load-reject"`},
			notWant: []string{"other objects", "nothing to apply"}},
		// The directory read with --from: both lists are its objects (the
		// FlowSchema apf-load, precedence 500, takes group apf-load to
		// level apf-load, 3 nominal seats in the levels' file), where they
		// were "ignored" with no reason and the input said to hold no
		// objects; version.json and metrics-0.time are ignored, with why.
		{name: "bundle's files in a raw directory: the lists are its objects", artifact: "built/bundle-files-raw",
			args: []string{"explain", "request", "--from", "@", "--user-name", "load-1", "--group", "apf-load", "list", "/api/v1/namespaces/default/pods"},
			want: []string{"objects from flowschemas.json, prioritylevelconfigurations.json: 13 FlowSchemas, 10 PriorityLevelConfigurations",
				"✓ apf-load (precedence 500, level apf-load", "nominal limit 3 seats",
				"ignored metrics-0.time (neither a debug dump, /metrics text, nor a .yaml, .yml or .json file of objects), version.json (no FlowSchema or PriorityLevelConfiguration in it)"},
			notWant: []string{"holds no FlowSchemas or PriorityLevelConfigurations", "ignored flowschemas.json"}},
		// built/bundle-prometheus-ui-table: a bundle whose metrics file is
		// k8s-106085's Prometheus UI table (without its code fence). It was
		// refused at the table's rule ("-- | --": not the Prometheus text
		// format) though --from of the table reads it (S8 of issue 58): the
		// same six limits as the raw table's row above.
		{name: "bundle holding a Prometheus UI table: the six limits", artifact: "built/bundle-prometheus-ui-table",
			args: []string{"top", "levels", "--from", "@"},
			wantRe: []string{`catch-all\s+14\s+14\s+-\s`, `global-default\s+53\s+53\s+-\s`, `leader-election\s+27\s+27\s+-\s`,
				`node-high\s+105\s+105\s+-\s`, `system\s+79\s+79\s+-\s`, `workload-high\s+105\s+105\s+-\s`},
			notWant: []string{"not the Prometheus text format"}},
		// k8s-audit-blog-jq-event.json: one audit event as jq prints it,
		// over 36 lines: kubernetes-admin (groups system:masters,
		// system:authenticated) creates secret audit-test-secret in
		// default, answered 201, received 05:25:51.281925 and complete at
		// 05:25:51.289909. system:masters matches exempt (precedence 1).
		// It was "holds jsonl, not audit events: give httplog lines with
		// --from-log" (S1 of issue 58).
		{name: "jq-printed audit event: explain request reads it", artifact: "k8s-audit-blog-jq-event.json",
			args: []string{"explain", "request", "--defaults", "--from-audit", "@"},
			want: []string{"POST /api/v1/namespaces/default/secrets?fieldManager=kubectl-create&fieldValidation=Strict", "user kubernetes-admin, groups system:masters, system:authenticated",
				"✓ exempt (precedence 1, level exempt)", "at 05:25:51.281 it was dispatched at once", "Compared with the server (audit), HTTP 201"},
			notWant: []string{"jsonl", "--from-log"}},
		// The same event as simulate's workload: one request of the exempt
		// level, which it was "36 lines that could not be decoded as a
		// JSONL record (...: unexpected EOF)" (S1 of issue 58).
		{name: "jq-printed audit event: simulate replays it", artifact: "k8s-audit-blog-jq-event.json",
			args:    []string{"simulate", "--defaults", "--workload", "@"},
			want:    []string{"Workload: 1 request replayed"},
			notWant: []string{"JSONL record"}},
		// built/eks-get-query-results-audit.json: the same event as the
		// @message of the one row of a get-query-results answer, its
		// @logStream kube-apiserver-audit-8f3c2a1b9d7e4f60 (S2 of issue 58).
		{name: "get-query-results of an audit event: explain request reads it", artifact: "built/eks-get-query-results-audit.json",
			args: []string{"explain", "request", "--defaults", "--from-audit", "@", "-o", "json"},
			want: []string{`"at": "2022-10-27T05:25:51.281925Z"`, `"flowSchema": "exempt"`}},
		{name: "get-query-results of an audit event: simulate names its stream", artifact: "built/eks-get-query-results-audit.json",
			args: []string{"simulate", "--defaults", "--workload", "@"},
			want: []string{"Workload: 1 request replayed"}},
		// aws-workshop-get-query-results-api-gw.json: four rows of the
		// fields integrationErrorMessage and @ptr of API Gateway's log: no
		// audit event. The refusal says so and which query keeps the
		// events; it pointed to --from-log (S2 of issue 58).
		{name: "get-query-results of other fields: refused with what they hold", artifact: "aws-workshop-get-query-results-api-gw.json",
			args: []string{"explain", "request", "--defaults", "--from-audit", "@"}, code: 1,
			want:    []string{"4 Logs Insights rows without @message or an audit event's fields (its fields: integrationErrorMessage, @ptr", "fields @timestamp, @message, @logStream"},
			notWant: []string{"jsonl", "--from-log"}},
		// built/gke-logentry-pretty.json: one GKE LogEntry (Elastic's
		// sample: system:gke-master-healthcheck reading readyz on
		// 2025-07-13 at 08:38:39) pretty-printed, as Logs Explorer shows
		// it: the documented GKE summary, as for the entry on one line
		// (S1 of issue 58).
		{name: "GKE LogEntry pretty-printed: the GKE summary", artifact: "built/gke-logentry-pretty.json",
			args: []string{"simulate", "--defaults", "--workload", "@"}, code: 1,
			want:    []string{"a GKE Cloud Logging export", "1 entry from 2025-07-13T08:38:39Z to 2025-07-13T08:38:39Z", "system:gke-master-healthcheck 1"},
			notWant: []string{"JSONL record"}},
		// openshift-api-performance-dashboard.yaml: OpenShift's "API
		// Performance" dashboard in its ConfigMap: 31 panels with targets,
		// 8 of them ("Priority & Fairness: ...") on apiserver_flowcontrol_*
		// recording rules. No figure of a cluster is in it. It was refused
		// as '"---" is neither a debug dump ...' (issue 58, item 3).
		{name: "Grafana dashboard in a ConfigMap: top levels names it", artifact: "openshift-api-performance-dashboard.yaml",
			args: []string{"top", "levels", "--from", "@"}, code: 1,
			want:    []string{`is ConfigMap grafana-dashboard-apiserver-performance holding the Grafana dashboard "API Performance" (31 panels of queries, 8 of them on APF series`, "--prometheus URL", "kubectl get --raw /metrics"},
			notWant: []string{"is neither a debug dump"}},
		// built/openshift-api-performance-dashboard.json: the same
		// dashboard's JSON alone, as Grafana's export gives it.
		{name: "Grafana dashboard export: explain 429 names it", artifact: "built/openshift-api-performance-dashboard.json",
			args: []string{"explain", "429", "--from", "@"}, code: 1,
			want:    []string{`is the Grafana dashboard "API Performance" (31 panels of queries, 8 of them on APF series`, "a dashboard holds PromQL queries, not their answers"},
			notWant: []string{"is neither a debug dump"}},
		// The same dashboard given where requests are read: simulate
		// --workload said 'no line is an httplog "HTTP" line ... (first
		// line: "\",\n")', quoting a fragment of the JSON, and explain
		// request --from-audit "at least 2424 lines could not be read as
		// requests" (the known failure of testdata/field/README.md). Both
		// name it now, and say to give the audit log or httplog, or to
		// read its queries' Prometheus.
		{name: "Grafana dashboard in a ConfigMap: simulate --workload names it", artifact: "openshift-api-performance-dashboard.yaml",
			args: []string{"simulate", "--defaults", "--workload", "@"}, code: 1,
			want: []string{`ConfigMap grafana-dashboard-apiserver-performance holding the Grafana dashboard "API Performance" (31 panels of queries, 8 of them on APF series, apiserver_flowcontrol_*) (key api-performance.json), not a workload`,
				"audit log", "httplog", "--prometheus URL"},
			notWant: []string{"no line is an httplog", "first line"}},
		{name: "Grafana dashboard export: explain request --from-audit names it", artifact: "built/openshift-api-performance-dashboard.json",
			args: []string{"explain", "request", "--defaults", "--from-audit", "@"}, code: 1,
			want:    []string{`the Grafana dashboard "API Performance" (31 panels of queries, 8 of them on APF series, apiserver_flowcontrol_*), not a workload`, "audit log", "--prometheus URL"},
			notWant: []string{"could not be read", "first record's keys"}},
		{name: "Grafana dashboard in a ConfigMap: explain request --from-audit names it", artifact: "openshift-api-performance-dashboard.yaml",
			args: []string{"explain", "request", "--defaults", "--from-audit", "@"}, code: 1,
			want:    []string{`ConfigMap grafana-dashboard-apiserver-performance holding the Grafana dashboard "API Performance"`, "not a workload"},
			notWant: []string{"at least 2424 lines"}},
		{name: "Grafana dashboard export: simulate --workload names it", artifact: "built/openshift-api-performance-dashboard.json",
			args: []string{"simulate", "--defaults", "--workload", "@"}, code: 1,
			want: []string{`the Grafana dashboard "API Performance" (31 panels of queries, 8 of them on APF series`, "not a workload"}},
		// openshift-authentication-operator-flowschemas.yaml: four v1
		// FlowSchemas; openshift-oauth-apiserver-sar (precedence 2, level
		// exempt) takes oauth-apiserver-sa's subjectaccessreviews and
		// tokenreviews; openshift-authentication-operator (2000) names level
		// openshift-control-plane-operators, which the file does not
		// define (cluster-kube-apiserver-operator's manifest does): a
		// dangling level, at INFO since the objects are the OpenShift
		// cluster-version operator's.
		{name: "OpenShift authentication operator: the level it names is not in the file", artifact: "openshift-authentication-operator-flowschemas.yaml",
			args: []string{"lint", "--defaults", "--min-severity=info", "-f", "@"},
			want: []string{`FlowSchema openshift-authentication-operator references priority level "openshift-control-plane-operators": no such PriorityLevelConfiguration`,
				"managed by: the OpenShift cluster-version operator (release manifest)", "0 errors, 0 warnings"}},
		{name: "OpenShift authentication operator: a SubjectAccessReview is exempt", artifact: "openshift-authentication-operator-flowschemas.yaml",
			args: []string{"explain", "request", "--defaults", "-f", "@", "--service-account", "openshift-oauth-apiserver/oauth-apiserver-sa", "create", "/apis/authorization.k8s.io/v1/subjectaccessreviews"},
			want: []string{"✓ openshift-oauth-apiserver-sar (precedence 2, level exempt", "Verdict: exempt"}},
		// openshift-kube-apiserver-operator-flowschemas-v1.yaml defines
		// openshift-control-plane-operators: nominal shares 10 beside the
		// 245 of the defaults, ceil(600 × 10 / 255) = 24 seats; lendable
		// 33%, round(24 × 0.33) = 8, so lower 16; upper 600 + 24 = 624.
		// With both files nothing dangles.
		{name: "OpenShift operators' files together: the operator's level, 24 seats", artifact: "openshift-kube-apiserver-operator-flowschemas-v1.yaml",
			args: []string{"explain", "request", "--defaults", "-f", fieldPath("openshift-authentication-operator-flowschemas.yaml"), "-f", "@",
				"--service-account", "openshift-authentication-operator/authentication-operator", "list", "/api/v1/namespaces/openshift-authentication/pods"},
			want: []string{"✓ openshift-authentication-operator (precedence 2000, level openshift-control-plane-operators", "nominal limit 24 seats (of a server limit of 600), lower 16, upper 624"}},
		{name: "OpenShift operators' files together: no dangling level", artifact: "openshift-kube-apiserver-operator-flowschemas-v1.yaml",
			args:    []string{"lint", "--defaults", "--min-severity=info", "-f", fieldPath("openshift-authentication-operator-flowschemas.yaml"), "-f", "@"},
			notWant: []string{"dangling-priority-level"}},
		// kueue-2973-global-default-v1.yaml: kubectl get -o yaml of the
		// suggested global-default FlowSchema and level (flowcontrol v1)
		// as the defaults have them: nothing to report; a user's read of
		// Kueue's visibility API goes there: shares 20 of 245, ceil(600 ×
		// 20 / 245) = 49 seats, lendable round(49 × 0.5) = 25, lower 24,
		// upper 600 + 49 = 649; 128 queues, hand 6, length 50.
		{name: "Kueue thread's global-default objects: lint finds nothing", artifact: "kueue-2973-global-default-v1.yaml",
			args: []string{"lint", "--defaults", "-f", "@"},
			want: []string{"0 errors, 0 warnings, 0 info"}},
		{name: "Kueue thread's global-default objects: the visibility API's level", artifact: "kueue-2973-global-default-v1.yaml",
			args: []string{"explain", "request", "--defaults", "-f", "@", "--user-name", "alice", "--group", "system:authenticated",
				"get", "/apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/cluster-queue/pendingworkloads"},
			want: []string{"✓ global-default (precedence 9900, level global-default)", "nominal limit 49 seats (of a server limit of 600), lower 24, upper 649",
				"128 queues, hand size 6, queue length limit 50"}},
		// kueue-3043-dump_priority_levels.txt: five rows of the ten-column
		// layout; global-default is the one busy level (IsIdle false, 1
		// executing, 287 dispatched), kueue-visibility dispatched 3547;
		// every RejectedRequests cell is 0.
		{name: "Kueue PR's dump_priority_levels: the five rows", artifact: "kueue-3043-dump_priority_levels.txt",
			args: []string{"dump", "levels", "--from", "@"},
			wantRe: []string{`global-default\s+-\s+0\s+false\s+0\s+1\s+287\s+0\s+0\s+0\n`, `kueue-visibility\s+-\s+0\s+true\s+0\s+0\s+3547\s+0\s+0\s+0\n`,
				`exempt\s+-\s+0\s+true\s+0\s+0\s+573\s`}},
		{name: "Kueue PR's dump_priority_levels: nothing rejected", artifact: "kueue-3043-dump_priority_levels.txt", stdin: true,
			args: []string{"explain", "429", "--from", "-"},
			want: []string{"no priority level is rejecting requests", "dump_priority_levels (5 levels)"}},
		// deckhouse-helm-lib-flow-schema.tpl: Deckhouse's helm_lib template
		// of a module's FlowSchema: one "kind: FlowSchema" at the top level
		// (the subject's "kind: Group" is indented), and ten template
		// actions: the usage comment, define, the two variables, the name,
		// the namespace, the labels' include, the level, the group and end.
		// It was "document 1: json: offset 2: invalid character '{'
		// looking for beginning of object key string".
		{name: "Deckhouse helm_lib FlowSchema template: named a template, with its actions", artifact: "deckhouse-helm-lib-flow-schema.tpl",
			args: []string{"lint", "--defaults", "-f", "@"}, code: 2,
			want:    []string{"is a Helm (Go) template, not objects: 1 FlowSchema with 10 {{ }} actions not rendered", "helm template"},
			notWant: []string{"invalid character"}},
		// karpenter-docs-apply-flowschemas.sh: the Karpenter docs' step
		// "apply flowschemas": two FlowSchemas (karpenter-leader-election,
		// karpenter-workload) in a here-document piped through envsubst,
		// their subjects' namespace ${KARPENTER_NAMESPACE}. It was
		// "document 1: not a Kubernetes object: text".
		{name: "Karpenter docs' apply script: named a shell script, with its objects and variable", artifact: "karpenter-docs-apply-flowschemas.sh",
			args: []string{"explain", "request", "--defaults", "-f", "@", "--service-account", "karpenter/karpenter", "list", "/api/v1/nodes"}, code: 1,
			want: []string{"is a shell script, not objects: its here-document (cat <<EOF | envsubst | kubectl apply -f -) holds 2 FlowSchemas",
				"with ${KARPENTER_NAMESPACE} replaced by its value"},
			notWant: []string{"not a Kubernetes object: text"}},
		// giantswarm-fairness-rules.yml: a Helm template of a PrometheusRule
		// (fairness.rules) of two alerts, FlowcontrolRejectedRequests and
		// FlowcontrolTooManyRequests, both on apiserver_flowcontrol_*
		// series; four Helm actions (the labels' include, the namespace,
		// and the two descriptions' raw strings, whose {{ $labels.* }} are
		// Prometheus' own). --from said 'line 3: "metadata:" is neither a
		// debug dump ...'.
		{name: "Giant Swarm APF alerts: --from names the PrometheusRule", artifact: "giantswarm-fairness-rules.yml",
			args: []string{"explain", "429", "--from", "@"}, code: 1,
			want:    []string{"is PrometheusRule fairness.rules (2 alerting rules, 2 of them on APF series, apiserver_flowcontrol_*): rules hold PromQL queries, not their answers", "--prometheus URL"},
			notWant: []string{"is neither a debug dump"}},
		{name: "Giant Swarm APF alerts: lint -f names the template and its kind", artifact: "giantswarm-fairness-rules.yml",
			args: []string{"lint", "--defaults", "-f", "@"}, code: 2,
			want: []string{"is a Helm (Go) template, not objects: 1 PrometheusRule with 4 {{ }} actions not rendered"}},
		// openshift-flowcontrol-storage-version-migration.yaml: two
		// StorageVersionMigrations of flowschemas and
		// prioritylevelconfigurations (v1beta1): objects about APF objects,
		// none of them one.
		{name: "OpenShift flowcontrol storage migrations: no APF object, two others", artifact: "openshift-flowcontrol-storage-version-migration.yaml",
			args: []string{"lint", "--defaults", "-f", "@"}, code: 2,
			want: []string{"holds no FlowSchema or PriorityLevelConfiguration (2 other objects)"}},
		// built/eventratelimit-log-line.txt: the key of the User limit is
		// system:serviceaccount:kube-system:replicaset-controller; the
		// Event printed after it is not part of it (R5).
		{name: "EventRateLimit log line: the key ends at the quote", artifact: "built/eventratelimit-log-line.txt",
			args:    []string{"explain", "request", "--defaults", "--from-message", "@text"},
			want:    []string{`user "system:serviceaccount:kube-system:replicaset-controller"`, "EventRateLimit admission plugin"},
			notWant: []string{"&Event"}},
	}
}

func fieldArg(t *testing.T, arg, artifact string) string {
	t.Helper()
	switch {
	case arg == "@":
		return fieldPath(artifact)
	case arg == "@text":
		return strings.TrimSpace(fieldText(t, artifact))
	case strings.HasPrefix(arg, "@line:"):
		n, err := strconv.Atoi(strings.TrimPrefix(arg, "@line:"))
		lines := strings.Split(fieldText(t, artifact), "\n")
		if err != nil || n < 1 || n > len(lines) {
			t.Fatalf("%s: no line %q", artifact, arg)
		}
		return lines[n-1]
	}
	return arg
}

// fieldCheck returns what the output lacks or has that it should not.
func fieldCheck(r fieldRow, code int, out, errOut string) []string {
	all := out + errOut
	var bad []string
	if code != r.code {
		bad = append(bad, "exit "+strconv.Itoa(code)+", want "+strconv.Itoa(r.code))
	}
	// A refusal is one line (lint's findings are not refusals).
	if r.code == 1 && r.args[0] != "lint" && strings.Count(errOut, "\n") != 1 {
		bad = append(bad, "want one error line, got "+strconv.Quote(errOut))
	}
	for _, w := range r.want {
		if !strings.Contains(all, w) {
			bad = append(bad, "lacks "+strconv.Quote(w))
		}
	}
	for _, w := range r.wantRe {
		if !regexp.MustCompile(w).MatchString(all) {
			bad = append(bad, "lacks /"+w+"/")
		}
	}
	for _, w := range r.notWant {
		if strings.Contains(all, w) {
			bad = append(bad, "has "+strconv.Quote(w))
		}
	}
	for _, w := range r.notWantRe {
		if regexp.MustCompile(w).MatchString(all) {
			bad = append(bad, "has /"+w+"/")
		}
	}
	return bad
}

func TestFieldArtifacts(t *testing.T) {
	for _, r := range fieldRows() {
		t.Run(r.name, func(t *testing.T) {
			var stdin string
			if r.stdin {
				stdin = fieldText(t, r.artifact)
			}
			args := make([]string, len(r.args))
			for i, a := range r.args {
				args[i] = fieldArg(t, a, r.artifact)
			}
			code, out, errOut := runWithStdin(stdin, args...)
			bad := fieldCheck(r, code, out, errOut)
			if r.pending != "" {
				if len(bad) == 0 {
					t.Skipf("pending %s, but the row passes now: remove pending", r.pending)
				}
				t.Skipf("pending %s: %s", r.pending, strings.Join(bad, "; "))
			}
			for _, b := range bad {
				t.Error(b)
			}
			if len(bad) > 0 {
				t.Logf("output:\n%s%s", out, errOut)
			}
		})
	}
}

// TestFieldArtifactsHaveRows: every artifact of testdata/field (and of
// testdata/field/built) has a row, and every row's artifact exists.
func TestFieldArtifactsHaveRows(t *testing.T) {
	rows := map[string]bool{}
	for _, r := range fieldRows() {
		if _, err := os.Stat(fieldPath(r.artifact)); err != nil {
			t.Errorf("row %q: %v", r.name, err)
		}
		rows[r.artifact] = true
	}
	var names []string
	for _, dir := range []string{"", "built"} {
		entries, err := os.ReadDir(fieldPath(dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() == "README.md" || (dir == "" && e.Name() == "built") {
				continue
			}
			names = append(names, filepath.ToSlash(filepath.Join(dir, e.Name())))
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if !rows[n] {
			t.Errorf("artifact %s has no row in fieldRows", n)
		}
	}
	if len(names) < 30 {
		t.Errorf("%d artifacts, want at least 30", len(names))
	}
}
