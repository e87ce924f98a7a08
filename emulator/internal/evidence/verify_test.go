package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/glob"
)

// pattern parses a pattern written as JSON, failing the test when it does not parse.
func pattern(t *testing.T, src string) *Pattern {
	t.Helper()
	obj := object(t, src)
	p, errs := Parse(obj)
	if errs != nil {
		t.Fatalf("Parse(%s): %v", src, errs)
	}
	return p
}

func object(t *testing.T, src string) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(src)))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return obj
}

var generation = api.JournalEntry{
	Seq: 7, Method: "POST", Path: "/v1/generate", Status: 402, Code: "insufficient_credits",
	RequestHeaders: map[string]string{"Idempotency-Key": "k1", "Content-Type": "application/json"},
	RequestBody:    json.RawMessage(`{"model":"fal-ai/flux/schnell","input":{"prompt":"a cat","n":2,"tags":["a","b"]},"quote_id":"q1","webhook_url":null}`),
}

func TestMisses(t *testing.T) {
	cases := []struct {
		pattern string
		missed  []string // the fields missed; none means a match
	}{
		{`{}`, nil},
		{`{"method":"post","path":"/v1/generate"}`, nil},
		{`{"method":"GET"}`, []string{"/method"}},
		{`{"path":"/v1/*"}`, nil},
		{`{"path":"/v1/gen*"}`, nil},
		{`{"path":"/*"}`, []string{"/path"}},
		{`{"path":"/**"}`, nil},
		{`{"path":"/v1/generate/*"}`, []string{"/path"}},
		{`{"path":"/v1/generat?"}`, []string{"/path"}}, // ? is no wildcard
		{`{"status":402,"code":"insufficient_credits"}`, nil},
		{`{"status":200,"code":"quote_expired"}`, []string{"/status", "/code"}},
		{`{"headers":{"idempotency-key":"k1"}}`, nil},
		{`{"headers":{"Idempotency-Key":"k2","X-Other":"x"}}`, []string{"/headers/Idempotency-Key", "/headers/X-Other"}},
		{`{"body":{}}`, nil},
		{`{"body":{"model":"fal-ai/flux/schnell"}}`, nil},
		{`{"body":{"input":{"n":2.0}}}`, nil}, // numbers compare as values
		{`{"body":{"input":{"prompt":"a dog","tags":["a"]}}}`, []string{"/body/input/prompt", "/body/input/tags"}},
		{`{"body":{"input":{"tags":["a","b"]}}}`, nil},
		{`{"body":{"model":{"id":"x"}}}`, []string{"/body/model"}},
		{`{"body":{"missing":null}}`, []string{"/body/missing"}},
		{`{"pointers":{"/input/tags/1":"b","/quote_id":"q1"}}`, nil},
		{`{"pointers":{"/input/tags/2":"c"}}`, []string{"/pointers/~1input~1tags~12"}},
		{`{"pointers":{"/input/tags/01":"b"}}`, []string{"/pointers/~1input~1tags~101"}},
		{`{"pointers":{"":{"model":"x"}}}`, []string{"/pointers/"}},
		{`{"pointers":{"/input/tags/+1":"b","/input/tags/-":"b"}}`, []string{"/pointers/~1input~1tags~1+1", "/pointers/~1input~1tags~1-"}},
		{`{"pointers":{"/webhook_url":null}}`, nil},                         // present with null
		{`{"pointers":{"/missing":null}}`, []string{"/pointers/~1missing"}}, // absent is not null
	}
	for _, c := range cases {
		var got []string
		for _, m := range missesOf(pattern(t, c.pattern), &generation) {
			got = append(got, m.Field)
		}
		if !slices.Equal(got, c.missed) {
			t.Errorf("%s: missed %v, want %v", c.pattern, got, c.missed)
		}
	}
}

func TestMissesSayWhatWasThere(t *testing.T) {
	p := pattern(t, `{"status":200,"headers":{"X-Absent":"1"},"body":{"input":{"prompt":"a dog"}},"pointers":{"/nowhere":1}}`)
	got, _ := json.Marshal(missesOf(p, &generation))
	want := `[{"field":"/status","want":200,"got":402},{"field":"/headers/X-Absent","want":"1","got":null},` +
		`{"field":"/body/input/prompt","want":"a dog","got":"a cat"},{"field":"/pointers/~1nowhere","want":1,"got":null}]`
	if string(got) != want {
		t.Errorf("misses:\n%s\nwant\n%s", got, want)
	}
	// A body that is not JSON (the journal keeps it as a string) has none of the members.
	text := generation
	text.RequestBody = json.RawMessage(`"not json"`)
	if m := missesOf(pattern(t, `{"body":{"model":"m"}}`), &text); len(m) != 1 || m[0].Got != nil {
		t.Errorf("text body: %+v", m)
	}
}

func TestParseRefusesBadPatterns(t *testing.T) {
	cases := []struct {
		pattern  string
		pointers []string
	}{
		{`{"verb":"GET"}`, []string{"/verb"}},
		{`{"status":99}`, []string{"/status"}},
		{`{"status":600}`, []string{"/status"}},
		{`{"status":"200"}`, []string{"/status"}},
		{`{"method":"GE T","path":"v1","code":5}`, []string{"/code", "/method", "/path"}},
		{`{"headers":{"A":1,"B C":"x","D":"ok"}}`, []string{"/headers/A", "/headers/B C"}},
		{`{"body":"x","pointers":[]}`, []string{"/body", "/pointers"}},
		{`{"pointers":{"a":1,"/x~":1,"/ok":1}}`, []string{"/pointers/~1x~0", "/pointers/a"}},
		{`{"a/b":1}`, []string{"/a~1b"}},
		{fmt.Sprintf(`{"path":"/%s"}`, bytes.Repeat([]byte("*"), glob.MaxLen)), []string{"/path"}},
		{`{"model":5,"account":[]}`, []string{"/account", "/model"}},
	}
	for _, c := range cases {
		p, errs := Parse(object(t, c.pattern))
		var got []string
		for _, e := range errs {
			got = append(got, e.Pointer)
			if e.Message == "" {
				t.Errorf("%s: %s has no message", c.pattern, e.Pointer)
			}
		}
		if p != nil || !slices.Equal(got, c.pointers) {
			t.Errorf("%s: errors at %v, want %v", c.pattern, got, c.pointers)
		}
	}
	big := fmt.Sprintf(`{"body":{"a":%q}}`, bytes.Repeat([]byte("x"), MaxPatternBytes))
	if _, errs := Parse(object(t, big)); len(errs) != 1 {
		t.Errorf("a pattern over the bound: %v", errs)
	}
}

func journal(n int) []api.JournalEntry {
	var out []api.JournalEntry
	for i := range n {
		e := generation
		e.Seq = uint64(i + 1)
		e.Status = 200 + i%3 // 200, 201, 202, ...
		if i%5 == 0 {
			e.Method = "GET"
		}
		out = append(out, e)
	}
	return out
}

func TestVerifyCountsAndRanksNearMisses(t *testing.T) {
	entries := journal(300)
	v := verifyIn(pattern(t, `{"method":"POST"}`), entries)
	if v.Count != 240 || len(v.Matches) != MaxMatches || v.Matches[0] != 2 || v.NearMisses != nil {
		t.Errorf("POST: count %d, %d matches from %d", v.Count, len(v.Matches), v.Matches[0])
	}
	v = verifyIn(pattern(t, `{"method":"GET","status":204}`), entries)
	if v.Count != 0 || len(v.Matches) != 0 || len(v.NearMisses) != MaxNearMisses {
		t.Fatalf("no match: %+v", v)
	}
	// Fewest misses first (the GETs miss only the status), then newest.
	var seqs []uint64
	for _, n := range v.NearMisses {
		seqs = append(seqs, n.Entry.Seq)
		if len(n.Missed) != 1 || n.Missed[0].Field != "/status" {
			t.Errorf("entry %d missed %+v", n.Entry.Seq, n.Missed)
		}
	}
	if want := []uint64{296, 291, 286, 281, 276}; !slices.Equal(seqs, want) {
		t.Errorf("near misses %v, want %v", seqs, want)
	}
	if v := verifyIn(pattern(t, `{}`), nil); v.Count != 0 || v.Matches == nil || len(v.NearMisses) != 0 {
		t.Errorf("empty journal: %+v", v)
	}
}

func TestUnexpected(t *testing.T) {
	entries := []api.JournalEntry{
		{Seq: 1, Path: "/v1/models", Status: 200},
		{Seq: 2, Path: "/v1/generate", Status: 402, Code: "insufficient_credits", ResponseBody: json.RawMessage(`{"detail":"poor"}`)},
		{Seq: 3, Path: "/v1/jobs/x", Status: 404, Code: "job_not_found", ResponseBody: json.RawMessage(`"cut…(truncated)"`)},
		{Seq: 4, Path: "/v1/models", Status: 503, Code: "service_unavailable"},
	}
	u := unexpectedIn(nil, entries)
	if u.Total != 3 || len(u.Data) != 3 || u.Data[0].Detail != "poor" || u.Data[1].Detail != "" {
		t.Errorf("none expected: %+v", u)
	}
	u = unexpectedIn([]*Pattern{pattern(t, `{"code":"insufficient_credits"}`), pattern(t, `{"path":"/v1/models","status":503}`)}, entries)
	if u.Total != 1 || u.Data[0].Entry.Seq != 3 {
		t.Errorf("two expected: %+v", u)
	}
	var many []api.JournalEntry
	for i := range 150 {
		many = append(many, api.JournalEntry{Seq: uint64(i + 1), Status: 500})
	}
	if u := unexpectedIn(nil, many); u.Total != 150 || len(u.Data) != 100 || u.Data[0].Entry.Seq != 1 {
		t.Errorf("many: total %d, %d listed", u.Total, len(u.Data))
	}
}
