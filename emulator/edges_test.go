package emulator

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

func TestControlBodiesAreCheckedLikeFiles(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	for _, c := range []struct {
		body      any
		want, ptr string
	}{
		{map[string]any{"status": 503, "match": "x"}, "want an object, got a JSON string", "/match"},
		{map[string]any{"status": 503, "unknown": 1}, `unknown field "unknown"`, "/unknown"},
		{map[string]any{"status": 503, "match": map[string]any{"path": 5}}, "want a string, got a JSON number", "/match/path"},
		{map[string]any{"status": 503, "delay": 5}, "a duration such as 500ms or 2s", "/delay"},
		{`{"status": 503, "status": 502}`, "given twice", "/status"},
		{map[string]any{"status": 503, "retry_after": -5}, "retry_after must be >= 0", "/retry_after"},
		{map[string]any{"action": "delay", "delay": "0s"}, "positive delay", ""},
		{map[string]any{"status": 503, "match": map[string]any{"path": strings.Repeat("/a", 513)}}, "match.path must be at most 1024 bytes long", "/match/path"},
	} {
		rec := control(t, s, "POST", "/_emulator/faults", c.body)
		p := decode[problemJSON](t, rec)
		said, ptr := p.Detail, ""
		for _, e := range p.Errors {
			said += "\n" + e.Message
			ptr = e.Pointer
		}
		if rec.Code != 422 || !strings.Contains(said, c.want) || ptr != c.ptr || len(p.Errors) > 1 {
			t.Errorf("%v: %d %s at %q, want %q at %q", c.body, rec.Code, said, ptr, c.want, c.ptr)
		}
		for _, leak := range []string{"scenario.", "time.Duration", "!!"} {
			if strings.Contains(rec.Body.String(), leak) {
				t.Errorf("%v: the answer leaks %q: %s", c.body, leak, rec.Body)
			}
		}
	}
	// A 503 without retry_after still says when to come back.
	control(t, s, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/models"}, "status": 503, "count": 1})
	if rec := call(t, s, "GET", "/v1/models", "mg_test_all", nil); rec.Code != 503 || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("503: %d Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}

func TestDelaysDoNotHideLaterFaults(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	control(t, s, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/**"}, "delay": "1ms"})
	control(t, s, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/models"}, "status": 502})
	if rec := call(t, s, "GET", "/v1/models", "mg_test_all", nil); rec.Code != 502 {
		t.Errorf("delay then 502: %d", rec.Code)
	}
	faults := decode[map[string][]api.Fault](t, control(t, s, "GET", "/_emulator/faults", nil))["data"]
	if faults[0].Fired != 1 || faults[1].Fired != 1 {
		t.Errorf("faults = %+v", faults)
	}
	journal := decode[struct {
		Data []struct{ Fault string } `json:"data"`
	}](t, control(t, s, "GET", "/_emulator/requests", nil))
	if journal.Data[0].Fault != "fault_1,fault_2" {
		t.Errorf("journal fault = %+v", journal.Data)
	}
}

func TestBoundsOnCreditsAndTime(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	if rec := control(t, s, "PUT", "/_emulator/accounts/acct_all", map[string]any{"credits": int64(9223372036854775807)}); rec.Code != 422 {
		t.Errorf("credits near int64: %d", rec.Code)
	}
	for _, body := range []map[string]any{{"set": "9999-01-01T00:00:00Z"}, {"set": "2262-05-01T00:00:00Z"}} {
		if rec := control(t, s, "POST", "/_emulator/clock", body); rec.Code != 400 || decode[problemJSON](t, rec).Code != "invalid_clock_change" {
			t.Errorf("%v: %d %s", body, rec.Code, rec.Body)
		}
	}
	for range 200 { // a year at a time, up to the limit and no further
		if rec := control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "8760h"}); rec.Code != 200 {
			break
		}
	}
	now := decode[map[string]string](t, control(t, s, "GET", "/_emulator/clock", nil))["now"]
	if !strings.HasPrefix(now, "219") && !strings.HasPrefix(now, "2200") {
		t.Errorf("after advancing a year at a time: %s", now)
	}
}

func TestIdempotencyKeyLengthCountsCharacters(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	if rec := startGeneration(t, s, "mg_test_all", strings.Repeat("é", 255), schnellID, schnell); rec.Code != 202 {
		t.Errorf("255 characters: %d %s", rec.Code, rec.Body)
	}
	if rec := startGeneration(t, s, "mg_test_all", strings.Repeat("é", 256), schnellID, schnell); rec.Code != 400 {
		t.Errorf("256 characters: %d", rec.Code)
	}
}

func TestHugeScalesAreClamped(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	control(t, s, "PUT", "/_emulator/scenario", map[string]any{"scenario": map[string]any{
		"defaults": map[string]any{"queue": map[string]any{"scale": 1e308}, "run": map[string]any{"scale": 1e308}}}})
	id := decode[api.Job](t, startGeneration(t, s, "mg_test_all", "huge", schnellID, schnell)).ID
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "1m"})
	if job := jobOf(t, s, id); job.Status != "queued" {
		t.Errorf("a job with an astronomical queue time is %s after a minute", job.Status)
	}
	control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "10m"})
	if job := jobOf(t, s, id); job.Status != "expired" {
		t.Errorf("it never starts, so it expires: %s", job.Status)
	}
}

func TestReplayIgnoresDirectives(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	q := quote(t, s, "mg_test_all", schnellID, schnell)
	body := map[string]any{"model": schnellID, "input": schnell, "quote_id": q.QuoteID}
	first := call(t, s, "POST", "/v1/generate", "mg_test_all", body, "Idempotency-Key", "k")
	again := call(t, s, "POST", "/v1/generate", "mg_test_all", body, "Idempotency-Key", "k", "X-Emulator-Outcome", "bogus")
	if again.Code != 202 || decode[api.Job](t, again).ID != decode[api.Job](t, first).ID {
		t.Errorf("replay with a bad directive: %d %s", again.Code, again.Body)
	}
	// Without a key, the missing key is reported before a bad query.
	rec := call(t, s, "POST", "/v1/generate?wait=maybe", "mg_test_all", body)
	if p := decode[problemJSON](t, rec); p.Code != "missing_idempotency_key" {
		t.Errorf("no key and a bad wait: %s", p.Code)
	}
}

// TestForceFailReadsBodiesLikeEveryEndpoint: the fail endpoint once had a decoder of its own, which
// accepted text/plain and answered a malformed chunked body with 413.
func TestForceFailReadsBodiesLikeEveryEndpoint(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	q := quote(t, s, "key_a", "test/pixel", map[string]any{"prompt": "x"})
	job := decode[api.Job](t, generate(t, s, "key_a", "k", q, map[string]any{"prompt": "x"}, ""))

	req := httptest.NewRequest("POST", "/_emulator/jobs/"+job.ID+"/fail", strings.NewReader(`{"code":"provider_timeout"}`))
	req.Header.Set("Content-Type", "text/plain")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if p := decode[problemJSON](t, rec); rec.Code != 415 || p.Code != "unsupported_media_type" {
		t.Errorf("text/plain: %d %s", rec.Code, rec.Body)
	}

	hs := httptest.NewServer(s)
	defer hs.Close()
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /_emulator/jobs/%s/fail HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", job.ID)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"invalid_json"`) {
		t.Errorf("malformed chunked body: %d %s", resp.StatusCode, body)
	}
	if v := decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "key_a", nil)); v.Status != "queued" {
		t.Errorf("a refused fail changed the job: %s", v.Status)
	}
}

// TestAnswersEvenIfTheClientHalfClosesWhileLoading: a request that arrived while the embedded
// catalog was loading, from a client that had half-closed, once got an empty 200 with no id.
func TestAnswersEvenIfTheClientHalfClosesWhileLoading(t *testing.T) {
	t.Parallel()
	s, err := NewServer(Config{ManualClock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client is gone as far as the server can tell
	req := httptest.NewRequestWithContext(ctx, "GET", "/_emulator/health", nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Header().Get("X-Request-Id") == "" || !strings.Contains(rec.Body.String(), `"status":"ok"`) {
		t.Errorf("answer: %d %v %q", rec.Code, rec.Header(), rec.Body)
	}
}
