// Package evidence is what the emulator keeps and concludes about a client's requests: one
// bounded per-tenant log of what happened (requests with their arrival and answer times,
// downloads of output files, balance changes through the control API), the request patterns
// that verify and expected errors match against it, the coverage counters of the contract's
// cases, and the report that judges the client's behaviour from the facts the log recorded.
// It knows no HTTP: the server hands it facts, and tests write logs by hand.
package evidence
