// Package explain answers "what does API Priority and Fairness (APF) do with
// this request, and why" and "why are requests being rejected with HTTP 429
// now". It joins three things, all handed in as plain values:
//
//   - the configuration, digested by package engine (classification with a
//     rule-by-rule trace, flow identity, shuffle-sharding hand, limits);
//   - the live state of one apiserver instance (a dump.Snapshot: the debug
//     dumps and the APF metrics; package dump is pure, so this one stays
//     free of client libraries);
//   - the request (engine.Request) or a message pasted by the user
//     (ParseMessage), which may turn out not to be about APF at all.
//
// Explain builds an Explanation of one request; Explain429 builds the
// rejections visible in the live state in the one explain 429 schema
// (package rejections), each level's figures from package levels. WriteText
// renders an Explanation for people, package rejections/render a Report;
// both types marshal to stable JSON for -o json.
//
// The package is pure: no client-go, no cobra, no terminal styling and no
// wall clock (an imports test keeps it so). The caller fetches, this package
// computes, the printers render.
package explain
