package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// allocated is how many bytes f allocates. The tests that call it do not run in parallel, so
// little else allocates meanwhile.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// wide is a pattern of n headers nothing sends.
func wide(t *testing.T, n int) *Pattern {
	t.Helper()
	h := map[string]any{}
	for i := range n {
		h[fmt.Sprint("X-H", i)] = "v"
	}
	p, errs := Parse(map[string]any{"method": "POST", "headers": h})
	if errs != nil {
		t.Fatal(errs)
	}
	return p
}

// errorLog is a journal of n generations answered 402, with bodies.
func errorLog(n int) *Journal {
	j := NewBounded(n, 1<<40)
	for i := range n {
		j.AddRequest(Entry{Method: "POST", Path: "/v1/generate", Status: 402, Code: "insufficient_credits",
			RequestBody: json.RawMessage(fmt.Sprintf(`{"model":"m","input":{"prompt":%q}}`, strings.Repeat("x", 500)))},
			map[string][]string{"Idempotency-Key": {fmt.Sprint("k", i)}}, 0)
	}
	return j
}

// TestPatternMembersBounded: a pattern compares at most MaxPatternMembers headers, pointers and
// body members, nested members included.
func TestPatternMembersBounded(t *testing.T) {
	many := func(n int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprint("m", i)] = "v"
		}
		return m
	}
	for _, c := range []struct {
		obj map[string]any
		ok  bool
	}{
		{map[string]any{"headers": many(MaxPatternMembers)}, true},
		{map[string]any{"headers": many(MaxPatternMembers + 1)}, false},
		{map[string]any{"headers": many(40), "body": map[string]any{"input": many(30)}}, false},
		{map[string]any{"body": map[string]any{"a": map[string]any{"b": many(MaxPatternMembers)}}}, false},
	} {
		p, errs := Parse(c.obj)
		if (p != nil) != c.ok || (!c.ok && (len(errs) != 1 || errs[0].Pointer != "")) {
			t.Errorf("%d members: pattern %v, errors %v", len(c.obj), p != nil, errs)
		}
	}
}

// TestVerifyKeepsOnlyTheNearMissesItShows: a pattern that every entry misses in all its members
// costs memory for the near misses shown, not for every entry's misses.
func TestVerifyKeepsOnlyTheNearMissesItShows(t *testing.T) {
	j, p := errorLog(2000), wide(t, MaxPatternMembers-1)
	var v api.Verification
	n := allocated(func() { v, _ = j.Verify(context.Background(), p) })
	if v.Count != 0 || len(v.NearMisses) != MaxNearMisses || len(v.NearMisses[0].Missed) != MaxPatternMembers-1 || v.NearMisses[0].Entry.Seq != 2000 {
		t.Fatalf("%d matches, %d near misses", v.Count, len(v.NearMisses))
	}
	// Every entry's 63 misses, kept, would be over 10 MB.
	if n > 2<<20 {
		t.Errorf("a verification of 2,000 entries allocated %d bytes", n)
	}
}

// TestUnexpectedShortCircuits: an entry is compared with each expected pattern only until it
// is known not to match, and its body is read once for all of them.
func TestUnexpectedShortCircuits(t *testing.T) {
	j := errorLog(2000)
	var expected []*Pattern
	for range 10 {
		expected = append(expected, wide(t, MaxPatternMembers-1))
	}
	var u api.UnexpectedErrors
	n := allocated(func() { u, _ = j.Unexpected(context.Background(), expected, 0, 100) })
	if u.Total != 2000 || len(u.Data) != 100 || !u.HasMore {
		t.Fatalf("%d unexpected, %d listed", u.Total, len(u.Data))
	}
	// 100 listed entries in their listed form are about 100 KB; every pattern's misses of every
	// entry would be over 100 MB.
	if n > 4<<20 {
		t.Errorf("an unexpected listing of 2,000 entries against 10 patterns allocated %d bytes", n)
	}
}

// TestUnexpectedPages: the listing is a page of the same envelope as every paged list, the
// entries of [offset, offset+limit) in the journal's order, with the total of them all.
func TestUnexpectedPages(t *testing.T) {
	j := errorLog(250)
	all, _ := j.Unexpected(context.Background(), nil, 0, 500)
	if all.Total != 250 || len(all.Data) != 250 || all.HasMore {
		t.Fatalf("the whole listing: total %d, %d listed, has_more %v", all.Total, len(all.Data), all.HasMore)
	}
	for _, tc := range []struct{ offset, limit, n int }{{0, 100, 100}, {200, 100, 50}, {240, 5, 5}, {250, 10, 0}, {900, 10, 0}} {
		u, _ := j.Unexpected(context.Background(), nil, tc.offset, tc.limit)
		if u.Total != 250 || len(u.Data) != tc.n || u.Offset != tc.offset || u.Limit != tc.limit || u.HasMore != (tc.offset+tc.n < 250) {
			t.Errorf("offset %d limit %d: total %d, %d listed, offset %d, limit %d, has_more %v", tc.offset, tc.limit, u.Total, len(u.Data), u.Offset, u.Limit, u.HasMore)
			continue
		}
		for i, e := range u.Data {
			if want := all.Data[tc.offset+i].Entry.Seq; e.Entry.Seq != want {
				t.Errorf("offset %d: item %d is seq %d; want %d", tc.offset, i, e.Entry.Seq, want)
			}
		}
	}
}

// TestScansStopWhenTheClientLeaves: verify, unexpected and the filtered listing end with the
// context's error once it is done.
func TestScansStopWhenTheClientLeaves(t *testing.T) {
	j, p := errorLog(1000), wide(t, 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := j.Verify(ctx, p); err == nil {
		t.Error("verify went on")
	}
	if _, err := j.Unexpected(ctx, []*Pattern{p}, 0, 100); err == nil {
		t.Error("unexpected went on")
	}
	if _, _, err := j.List(ctx, p, 0, 10); err == nil {
		t.Error("the listing went on")
	}
}

// TestPatternBytesCoverTheirHeap: what a pattern counts against the memory budget is at least
// the heap it holds once parsed, and not wildly more.
func TestPatternBytesCoverTheirHeap(t *testing.T) {
	body := map[string]any{}
	for i := range 60 {
		body[fmt.Sprint("member", i)] = strings.Repeat("v", 100)
	}
	for name, obj := range map[string]map[string]any{
		"path":    {"path": "/v1/" + strings.Repeat("a*b/", 250)},
		"headers": {"headers": map[string]any{"X-A": strings.Repeat("h", 900), "X-B": "1"}},
		"body":    {"body": body},
	} {
		raw, _ := json.Marshal(obj)
		const n = 200
		held := make([]*Pattern, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range held {
			var fresh map[string]any
			d := json.NewDecoder(strings.NewReader(string(raw)))
			d.UseNumber()
			if err := d.Decode(&fresh); err != nil {
				t.Fatal(err)
			}
			p, errs := Parse(fresh)
			if errs != nil {
				t.Fatal(errs)
			}
			held[i] = p
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := int64(after.HeapAlloc-before.HeapAlloc) / n
		if est := held[0].Bytes(); est < heap || est > 4*heap+2048 {
			t.Errorf("%s: counted %d bytes, holds %d", name, est, heap)
		}
		runtime.KeepAlive(held)
	}
}

// TestLogSharesItsEntries: reading the log for a report copies no entry, so a report of many
// tenants does not allocate the size of their journals.
func TestLogSharesItsEntries(t *testing.T) {
	j := errorLog(5000)
	n := allocated(func() { _, _ = j.Log() })
	if n > 5000*64 {
		t.Errorf("reading a log of 5,000 events allocated %d bytes", n)
	}
}
