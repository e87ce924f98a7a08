package evidence

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestRingKeepsTheNewestInOrder(t *testing.T) {
	t.Parallel()
	j := NewBounded(3, DefaultMaxBytes)
	for i := range 5 {
		j.Add(Entry{Path: fmt.Sprint("/v1/", i), Status: 200 + i})
	}
	got, total := listAll(j, nil, 0, 10)
	if total != 3 || len(got) != 3 || got[0].Path != "/v1/2" || got[2].Path != "/v1/4" || got[2].Seq != 5 {
		t.Fatalf("list = %+v (total %d)", got, total)
	}
	got, total = listAll(j, nil, 1, 1)
	if total != 3 || len(got) != 1 || got[0].Path != "/v1/3" {
		t.Errorf("page = %+v", got)
	}
	j.Clear()
	if _, total := listAll(j, nil, 0, 10); total != 0 {
		t.Errorf("after clear: %d", total)
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	j := NewBounded(10, DefaultMaxBytes)
	j.Add(Entry{Method: "GET", Path: "/v1/models", Status: 200, Account: "a"})
	j.Add(Entry{Method: "POST", Path: "/v1/quotes", Status: 422, Code: "invalid_input", Account: "a", Model: "m"})
	j.Add(Entry{Method: "POST", Path: "/v1/generate", Status: 202, Account: "b", Model: "m"})
	for _, c := range []struct {
		f    string
		want int
	}{
		{`{}`, 3},
		{`{"method":"POST"}`, 2},
		{`{"path":"/v1/quotes"}`, 1},
		{`{"path":"/v1/*"}`, 3},
		{`{"path":"/*"}`, 0}, // * stays within a segment
		{`{"path":"/**"}`, 3},
		{`{"path":"/v1/q*"}`, 1},
		{`{"status":422}`, 1},
		{`{"code":"invalid_input"}`, 1},
		{`{"account":"a"}`, 2},
		{`{"model":"m","account":"b"}`, 1},
		{`{"model":"m*"}`, 2},
	} {
		if _, total := listAll(j, pattern(t, c.f), 0, 10); total != c.want {
			t.Errorf("%s: %d, want %d", c.f, total, c.want)
		}
	}
}

// TestLongFieldsAreCut: one entry holds at most MaxString bytes per text field, cut at a rune
// boundary with a visible marker, however long the request's path or headers were.
func TestLongFieldsAreCut(t *testing.T) {
	t.Parallel()
	j := NewBounded(10, 1<<30)
	long := "/v1/" + strings.Repeat("é", 150_000) // 300 KB
	j.Add(Entry{Path: long, Query: strings.Repeat("q", 300_000), IdempotencyKey: strings.Repeat("k", 5000), Method: "GET"})
	got, _ := listAll(j, nil, 0, 1)
	e := got[0]
	for name, s := range map[string]string{"path": e.Path, "query": e.Query, "idempotency_key": e.IdempotencyKey} {
		if len(s) > MaxString || !strings.HasSuffix(s, Truncated) || !utf8.ValidString(s) {
			t.Errorf("%s: %d bytes, ends %q", name, len(s), s[max(0, len(s)-20):])
		}
	}
	if !strings.HasPrefix(e.Path, "/v1/éé") || e.Method != "GET" {
		t.Errorf("the kept part changed: %q", e.Path[:10])
	}
	if n := j.Bytes(); n > 4*MaxString {
		t.Errorf("one capped entry counts %d bytes", n)
	}
}

// TestByteBoundDropsTheOldest: 3,000 requests with a 300 KB path once added 1.4 GB; the journal
// now stays within its byte bound, keeping the newest entries in order.
func TestByteBoundDropsTheOldest(t *testing.T) {
	t.Parallel()
	const bound = 1 << 20
	j := NewBounded(10_000, bound)
	path := "/v1/" + strings.Repeat("x", 300_000)
	for i := range 3000 {
		j.Add(Entry{Path: path, RequestID: fmt.Sprint("req_", i)})
		if n := j.Bytes(); n > bound {
			t.Fatalf("after %d entries the journal holds %d bytes, over its bound %d", i+1, n, bound)
		}
	}
	got, total := listAll(j, nil, 0, 10_000)
	if total == 0 || total >= 3000 || total != len(got) {
		t.Fatalf("kept %d entries (listed %d)", total, len(got))
	}
	var sum int64
	for i, e := range got {
		sum += Size(e)
		if want := fmt.Sprint("req_", 3000-total+i); e.RequestID != want {
			t.Fatalf("entry %d is %s, want %s: the newest are kept, in order", i, e.RequestID, want)
		}
	}
	if sum != j.Bytes() {
		t.Errorf("entries add up to %d bytes, the journal counts %d", sum, j.Bytes())
	}
	j.Clear()
	if j.Bytes() != 0 {
		t.Errorf("after clear: %d bytes", j.Bytes())
	}
}

// TestBodiesAreBoundedAndStayJSON: a body is kept as JSON when it is JSON and fits; anything
// else becomes a JSON string, cut with the marker, so an entry always encodes.
func TestBodiesAreBoundedAndStayJSON(t *testing.T) {
	t.Parallel()
	huge := `{"input":{"image_url":"` + strings.Repeat("A", 1<<20) + `"}}`
	for _, c := range []struct {
		name, body string
		want       string // exact, or "" to check only the bounds
		cut        bool
	}{
		{"empty", "", "", false},
		{"json", "{ \"a\": [1, 2] }", `{"a":[1,2]}`, false},
		{"not json", "model=x", `"model=x"`, false},
		{"invalid utf-8", "\xff\xfe{", "\"\uFFFD{\"", false},
		{"huge json", huge, "", true},
		{"huge control bytes", strings.Repeat("\x01", 3*MaxBody), "", true},
		{"control bytes that fit unquoted only", strings.Repeat("\x01", MaxBody-10), "", true},
	} {
		j := NewBounded(10, 1<<30)
		j.Add(Entry{RequestBody: []byte(c.body), ResponseBody: []byte(c.body)})
		got, _ := listAll(j, nil, 0, 1)
		for _, b := range []json.RawMessage{got[0].RequestBody, got[0].ResponseBody} {
			if c.body == "" {
				if b != nil {
					t.Errorf("%s: kept %q", c.name, b)
				}
				continue
			}
			if len(b) > MaxBody || !json.Valid(b) {
				t.Errorf("%s: %d bytes, valid JSON %v", c.name, len(b), json.Valid(b))
			}
			if c.want != "" && string(b) != c.want {
				t.Errorf("%s: kept %s, want %s", c.name, b, c.want)
			}
			if c.cut != strings.HasSuffix(string(b), Truncated+`"`) {
				t.Errorf("%s: cut marker shown %v, want %v", c.name, !c.cut, c.cut)
			}
		}
		if _, err := json.Marshal(got[0]); err != nil {
			t.Errorf("%s: the entry does not encode: %v", c.name, err)
		}
		if n := j.Bytes(); n > 2*(MaxBody+1)+entryOverhead {
			t.Errorf("%s: the entry counts %d bytes", c.name, n)
		}
	}
}

func FuzzBody(f *testing.F) {
	f.Add([]byte(`{"a":1}`))
	f.Add([]byte("\x00\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := Body(b)
		if got == nil {
			if len(strings.TrimSpace(string(b))) != 0 {
				t.Fatalf("dropped %q", b)
			}
			return
		}
		if len(got) > MaxBody || !json.Valid(got) {
			t.Fatalf("Body(%q) = %q", b, got)
		}
	})
}

// TestRingMatchesAPlainList: as the ring grows, wraps and drops by count and by bytes, it holds
// what a plain list trimmed from the front would.
func TestRingMatchesAPlainList(t *testing.T) {
	t.Parallel()
	const maxEntries, maxBytes = 40, 40 * (entryOverhead + 40)
	j := NewBounded(maxEntries, maxBytes)
	var model []Entry
	var bytes int64
	for i := range 500 {
		e := Entry{Path: fmt.Sprint("/v1/", i), Query: strings.Repeat("q", i*7%90)}
		j.Add(e)
		e.Seq = uint64(i + 1)
		model = append(model, e)
		bytes += Size(e)
		for len(model) > 1 && (len(model) > maxEntries || bytes > maxBytes) {
			bytes -= Size(model[0])
			model = model[1:]
		}
		if i%37 != 0 {
			continue
		}
		got, total := listAll(j, nil, 0, maxEntries)
		if total != len(model) || j.Bytes() != bytes {
			t.Fatalf("after %d adds: %d entries, %d bytes; want %d, %d", i+1, total, j.Bytes(), len(model), bytes)
		}
		for k := range got {
			if got[k].Seq != model[k].Seq || got[k].Path != model[k].Path {
				t.Fatalf("after %d adds: entry %d is %d %s; want %d %s", i+1, k, got[k].Seq, got[k].Path, model[k].Seq, model[k].Path)
			}
		}
	}
}

// TestGiveWay: while the memory budget is used up the journal stops growing, each new entry
// replacing the oldest, and grows again once there is room.
func TestGiveWay(t *testing.T) {
	t.Parallel()
	j := NewBounded(100, DefaultMaxBytes)
	full := false
	j.GiveWay(func() bool { return full })
	for range 10 {
		j.Add(Entry{Path: "/v1/models"})
	}
	full = true
	before := j.Bytes()
	for range 5 {
		j.Add(Entry{Path: "/v1/models"})
	}
	if j.Bytes() > before {
		t.Errorf("the journal grew from %d to %d bytes with the budget used up", before, j.Bytes())
	}
	if entries, total := listAll(j, nil, 0, 100); total == 0 || entries[len(entries)-1].Seq != 15 {
		t.Errorf("the newest entry is missing: %d entries", total)
	}
	full = false
	j.Add(Entry{Path: "/v1/models"})
	if j.Bytes() <= before {
		t.Errorf("the journal did not grow once there was room: %d bytes", j.Bytes())
	}
}

func TestHeadersAreBoundedAndRedacted(t *testing.T) {
	t.Parallel()
	h := map[string][]string{
		"Authorization":          {"Bearer mg_test_all"},
		"X-Emulator-Admin-Token": {"secret"},
		"Accept":                 {"a", "b"},
		"X-Long":                 {strings.Repeat("x", 3*MaxString)},
	}
	for i := range 40 {
		h[fmt.Sprintf("X-Extra-%02d", i)] = []string{"v"}
	}
	got := Headers(h)
	if len(got) != MaxHeaders {
		t.Errorf("%d headers kept, want %d", len(got), MaxHeaders)
	}
	if got["Authorization"] != Redacted || got["Accept"] != "a, b" {
		t.Errorf("headers = %v", got)
	}
	if _, kept := got["X-Extra-39"]; kept {
		t.Errorf("past the bound, the last by name was kept")
	}
	small := Headers(map[string][]string{"X-Emulator-Admin-Token": {"secret"}, "X-Long": h["X-Long"]})
	if small["X-Emulator-Admin-Token"] != Redacted || len(small["X-Long"]) > MaxString || !strings.HasSuffix(small["X-Long"], Truncated) {
		t.Errorf("small = %v", small)
	}
	if Headers(nil) != nil {
		t.Errorf("no headers make a map")
	}
	// Headers handed over as sent are shown the same way, and count in full against the bound.
	j := NewBounded(10, DefaultMaxBytes)
	j.AddRequest(Entry{Path: "/v1/x"}, h, 0)
	if j.Bytes() < int64(len(h["X-Long"][0])) {
		t.Errorf("the headers are not counted against the byte bound: %d", j.Bytes())
	}
	list, _ := listAll(j, nil, 0, 10)
	if got := list[0].RequestHeaders; len(got) != MaxHeaders || got["Authorization"] != Redacted || got["Accept"] != "a, b" {
		t.Errorf("listed headers = %v", got)
	}
	tight := NewBounded(10, 4*MaxString)
	tight.AddRequest(Entry{Path: "/v1/a"}, h, 0)
	tight.AddRequest(Entry{Path: "/v1/b"}, h, 0)
	if list, total := listAll(tight, nil, 0, 10); total != 1 || list[0].Path != "/v1/b" {
		t.Errorf("large headers did not push the older entry out: %d entries", total)
	}
}

func TestExportListsEveryEntryAsListDoes(t *testing.T) {
	t.Parallel()
	j := NewBounded(3, DefaultMaxBytes)
	for i := range 5 {
		j.AddRequest(Entry{Path: fmt.Sprint("/v1/", i), RequestBody: []byte(`{ "a" : 1 }`)}, map[string][]string{"Authorization": {"Bearer k"}}, 0)
	}
	all := j.Export().Entries
	listed, _ := listAll(j, nil, 0, 10)
	if len(all) != 3 || all[0].Path != "/v1/2" || string(all[0].RequestBody) != `{"a":1}` || all[0].RequestHeaders["Authorization"] != Redacted {
		t.Fatalf("Export = %+v", all)
	}
	for i := range all {
		if all[i].Seq != listed[i].Seq || string(all[i].RequestBody) != string(listed[i].RequestBody) {
			t.Errorf("entry %d: Export %+v, List %+v", i, all[i], listed[i])
		}
	}
}

// A download's link facts go through a snapshot: the key it carried, the expiry its signed link
// named and whether that link was refused as expired; a bad expiry is reported at its pointer.
func TestNotesCarryLinkFactsThroughASnapshot(t *testing.T) {
	j := NewBounded(10, 1<<20)
	at := time.Date(2026, 1, 1, 0, 20, 0, 0, time.UTC)
	exp := at.Add(-5 * time.Minute)
	j.AddNote(Note{Kind: Download, Time: at, Job: "j1", File: "/files/j1/0.png", Status: 403, Authorized: true, LinkExpires: exp, LinkExpired: true}, 0)
	doc := j.ExportNotes()
	back := NewBounded(10, 1<<20)
	back.Restore(nil, doc, func(ptr, msg string) { t.Errorf("%s: %s", ptr, msg) })
	log, _ := back.Log()
	if len(log) != 1 || log[0].Note == nil || !log[0].Note.Authorized || !log[0].Note.LinkExpired || !log[0].Note.LinkExpires.Equal(exp) {
		t.Fatalf("restored %+v", log)
	}
	doc.Entries[0].LinkExpires = "soon"
	var problems []string
	NewBounded(10, 1<<20).Restore(nil, doc, func(ptr, msg string) { problems = append(problems, ptr) })
	if len(problems) != 1 || problems[0] != "/entries/0/link_expires" {
		t.Errorf("a bad link expiry: %v", problems)
	}
}
