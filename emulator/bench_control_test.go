package emulator

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// The control API's costs over a full journal: what one verify, one unexpected listing and one
// whole-run report cost, and what expected-error patterns hold. They drive the server's handler
// only, so the same file measures any version of the tree.

// fillJournal sends n requests to the tenant: generations answered 422 with bodies of about
// 1 KiB, each with a few headers.
func fillJournal(b *testing.B, s *Server, tenant string, n int) {
	b.Helper()
	body := map[string]any{"model": "test/pixel", "input": map[string]any{"prompt": strings.Repeat("x", 1000)}, "quote_id": "nope"}
	for i := range n {
		rec := tenantCall(b, s, tenant, "POST", "/v1/generate", "key_a", body, "Idempotency-Key", fmt.Sprint("k", i), "X-Trace", fmt.Sprint("t", i))
		if rec.Code/100 != 4 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// wideHeaders is a pattern of n headers nothing sends.
func wideHeaders(n int) map[string]any {
	h := map[string]any{}
	for i := range n {
		h[fmt.Sprint("X-H", i)] = "v"
	}
	return map[string]any{"method": "POST", "headers": h}
}

// BenchmarkVerifyWidePattern verifies a pattern of 63 headers that no entry matches against
// a journal of 2,000 entries: every entry misses every header.
func BenchmarkVerifyWidePattern(b *testing.B) {
	s := flowServer(b)
	fillJournal(b, s, "wide", 2000)
	pattern := wideHeaders(63) // the widest a pattern may be (64 members with the method)
	b.ReportAllocs()
	for b.Loop() {
		if rec := tenantCall(b, s, "wide", "POST", "/_emulator/verify", "", pattern); rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkUnexpectedWidePatterns lists the unexpected errors of a journal of 2,000 error
// answers with 10 expected patterns of 63 headers each, none matching.
func BenchmarkUnexpectedWidePatterns(b *testing.B) {
	s := flowServer(b)
	fillJournal(b, s, "wide", 2000)
	for range 10 {
		if rec := tenantCall(b, s, "wide", "POST", "/_emulator/expected-errors", "", wideHeaders(63)); rec.Code != 201 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if rec := tenantCall(b, s, "wide", "GET", "/_emulator/unexpected", "", nil); rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkRunReport asks for the whole run's report over 10 tenants of 2,000 entries each.
func BenchmarkRunReport(b *testing.B) {
	s := flowServer(b)
	for i := range 10 {
		fillJournal(b, s, fmt.Sprint("t", i), 2000)
	}
	b.ReportAllocs()
	for b.Loop() {
		if rec := control(b, s, "GET", "/_emulator/report?scope=run", nil); rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkExpectedPatternHeap adds 100 expected-error patterns, each a path pattern of 1 KiB
// with stars, and reports the heap they hold per pattern.
func BenchmarkExpectedPatternHeap(b *testing.B) {
	path := "/v1/" + strings.Repeat("a*b/", 240) // about 1 KiB, within the glob's bound
	for b.Loop() {
		s := flowServer(b)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range 100 {
			if rec := tenantCall(b, s, "heap", "POST", "/_emulator/expected-errors", "", map[string]any{"path": path + fmt.Sprint(i)}); rec.Code != 201 {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/100, "heap-B/pattern")
		runtime.KeepAlive(s)
	}
}
