package emulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/internal/syncbuf"
)

// logLines reads the JSON log lines the server wrote into logs.
func logLines(logs *syncbuf.Buffer) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// writeWatcher is a listener whose connections show each write to onWrite before it is made.
type writeWatcher struct {
	net.Listener
	onWrite func([]byte)
}

func (l writeWatcher) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchedConn{c, l.onWrite}, nil
}

type watchedConn struct {
	net.Conn
	onWrite func([]byte)
}

func (c *watchedConn) Write(b []byte) (int, error) {
	c.onWrite(b)
	return c.Conn.Write(b)
}

// TestParkedAnswerKeepsWhatTheRequestSaid: a parked generation keeps only parts of its request,
// yet its answer carries the headers the frame set, outputs addressed by the host the client
// used and Connection: close, and its log line and journal entry name the request as any
// other answer's do, and are written before the answer goes out, so a client that has read it
// finds them.
func TestParkedAnswerKeepsWhatTheRequestSaid(t *testing.T) {
	logs := &syncbuf.Buffer{}
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true,
		Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// Whether the parked generation's log line was written when its answer began to go out;
	// seen at the write itself, so the check does not depend on how goroutines are scheduled.
	var answerWrites, loggedFirst atomic.Int32
	hs := httptest.NewUnstartedServer(s)
	hs.Listener = writeWatcher{hs.Listener, func(b []byte) {
		if !bytes.Contains(b, []byte("\r\nX-Request-Id: req-parked-1\r\n")) {
			return
		}
		answerWrites.Add(1)
		for _, l := range logLines(logs) {
			if l["msg"] == "request" && l["path"] == "/v1/generate" {
				loggedFirst.Add(1)
			}
		}
	}}
	hs.Start()
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	c := wire{t: t, base: hs.URL, key: "key_a"}
	input := map[string]any{"prompt": "x"}
	q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})

	raw, _ := json.Marshal(map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]})
	req, err := http.NewRequest("POST", hs.URL+"/v1/generate?wait=true", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer key_a")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "parked-key")
	req.Header.Set("X-Request-Id", "req-parked-1")
	type answer struct {
		resp *http.Response
		body []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		done <- answer{resp, body, err}
	}()
	if w := c.must(200, "GET", "/_emulator/waiting?count=1&timeout=20s", nil); w["reached"] != true {
		t.Fatalf("the wait never began: %v", w)
	}
	c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": "5s"})
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	h := a.resp.Header
	if a.resp.StatusCode != 200 || !a.resp.Close || h.Get("Content-Type") != "application/json" ||
		h.Get("X-Request-Id") != "req-parked-1" || h.Get("X-Emulator-Version") != Version || h.Get("Date") == "" {
		t.Errorf("parked answer: %d, closing %v, headers %v", a.resp.StatusCode, a.resp.Close, h)
	}
	var job struct {
		ID      string
		Status  string
		Outputs []struct{ URL string }
	}
	if err := json.Unmarshal(a.body, &job); err != nil || job.Status != "succeeded" || len(job.Outputs) == 0 {
		t.Fatalf("parked answer's body %s: %v", a.body, err)
	}
	if !strings.HasPrefix(job.Outputs[0].URL, hs.URL+"/files/") {
		t.Errorf("output URL %q is not under %s", job.Outputs[0].URL, hs.URL)
	}

	entries := c.must(200, "GET", "/_emulator/requests?path=/v1/generate", nil)["data"].([]any)
	if len(entries) != 1 {
		t.Fatalf("journal: %v", entries)
	}
	e := entries[0].(map[string]any)
	if e["method"] != "POST" || e["query"] != "wait=true" || e["status"] != 200.0 || e["request_id"] != "req-parked-1" ||
		e["idempotency_key"] != "parked-key" || e["job_id"] != job.ID || e["account"] == nil || e["request_body"] == nil {
		t.Errorf("journal entry of the parked generation: %v", e)
	}
	if body, _ := e["response_body"].(map[string]any); body["id"] != job.ID {
		t.Errorf("journal entry's response body: %v", e["response_body"])
	}

	var quoteLine, parkedLine map[string]any
	for _, l := range logLines(logs) {
		switch {
		case l["msg"] == "request" && l["path"] == "/v1/quotes":
			quoteLine = l
		case l["msg"] == "request" && l["path"] == "/v1/generate":
			parkedLine = l
		}
	}
	if parkedLine == nil || quoteLine == nil {
		t.Fatalf("log lines: quote %v, generate %v", quoteLine, parkedLine)
	}
	if parkedLine["method"] != "POST" || parkedLine["status"] != 200.0 || parkedLine["request_id"] != "req-parked-1" ||
		parkedLine["tenant"] != quoteLine["tenant"] {
		t.Errorf("parked generation's log line: %v (the quote's: %v)", parkedLine, quoteLine)
	}
	if answerWrites.Load() != 1 || loggedFirst.Load() != 1 {
		t.Errorf("the answer went out in %d writes, %d of them with its log line written; want 1 and 1",
			answerWrites.Load(), loggedFirst.Load())
	}
}

// TestHungUpWaitsLetGo: a wait=true client that hangs up is noticed at once, without any clock
// moving: the wait is answered with the job as it stands, its socket closes, and it no longer
// counts as waiting. The job itself goes on.
func TestHungUpWaitsLetGo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("hang-ups of parked waits are noticed on Linux")
	}
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, MaxWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	c := wire{t: t, base: hs.URL, key: "key_a"}
	input := map[string]any{"prompt": "x"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	park := func(key string) *net.TCPConn {
		q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
		body, _ := json.Marshal(map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]})
		conn, err := net.Dial("tcp", hs.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		fmt.Fprintf(conn, "POST /v1/generate?wait=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer key_a\r\n"+
			"Content-Type: application/json\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\n\r\n%s", key, len(body), body)
		if n, ok := s.world().AwaitWaiting(ctx, 1, nil); !ok {
			t.Fatalf("%d waiting, want 1", n)
		}
		return conn.(*net.TCPConn)
	}

	// A client that closes its end: it is let go, answered with the job still queued.
	conn := park("half")
	if err := conn.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer after the client closed its end: %v", err)
	}
	var job map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&job)
	resp.Body.Close()
	if resp.StatusCode != 202 || job["status"] != "queued" {
		t.Errorf("answer after the client closed its end: %d %v, want 202 queued", resp.StatusCode, job["status"])
	}
	if n, err := conn.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after the answer the socket reads %d bytes, %v; want it closed", n, err)
	}
	if n, ok := s.world().AwaitWaitingBelow(ctx, 1, nil); !ok {
		t.Errorf("%d still waiting", n)
	}

	// A client that goes altogether.
	conn = park("gone")
	_ = conn.Close()
	if n, ok := s.world().AwaitWaitingBelow(ctx, 1, nil); !ok {
		t.Errorf("%d still waiting after the client hung up", n)
	}

	// The jobs go on.
	if err := s.world().Advance(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if jobs := c.must(200, "GET", "/v1/jobs?status=succeeded", nil); jobs["total"] != 2.0 {
		t.Errorf("%v jobs succeeded, want both", jobs["total"])
	}
}

// TestParkWhileStopping checks that a wait=true generation arriving after the emulator began
// stopping is answered at once (the listener still accepts while parked answers drain), and
// that stopping does not wait on it for ever.
func TestParkWhileStopping(t *testing.T) {
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, MaxWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	c := wire{t: t, base: hs.URL, key: "key_a"}
	input := map[string]any{"prompt": "x"}
	q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
	s.Shutdown() // what Serve does first when its context ends
	body, _ := json.Marshal(map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]})
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/generate?wait=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer key_a\r\n"+
		"Content-Type: application/json\r\nIdempotency-Key: k1\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// A bound on a failure, not a timing assertion: the answer is due at once.
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("a generation that waited after the emulator began stopping got no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("status %d, want 202 with the job as it stands", resp.StatusCode)
	}
	done := make(chan struct{})
	go func() { s.Shutdown(); _ = s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Close never returned: an answer was still counted as to come")
	}
}

// TestParkedAnswerCarriesTheReplyHeaders: what the layers of a parked generation's request
// added to its answer — the rate limit's X-RateLimit-* headers, the model's Deprecation, Sunset
// and Link — reach the client with the answer written later, as they do on an answer written at
// once.
func TestParkedAnswerCarriesTheReplyHeaders(t *testing.T) {
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	c := wire{t: t, base: hs.URL, key: "key_a"}
	sc := map[string]any{"name": "limited", "lifecycle": lifecycleScenario["lifecycle"],
		"rate_limits": []any{map[string]any{"match": map[string]any{"path": "/v1/generate"}, "limit": 5, "per": "1h"}}}
	c.must(200, "PUT", "/_emulator/scenario", map[string]any{"scenario": sc})
	c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": "90m"}) // deprecated, not yet retired
	input := map[string]any{"prompt": "x"}
	q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
	done := make(chan http.Header, 1)
	go func() {
		status, out, h := c.do("POST", "/v1/generate?wait=true", map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]},
			"Idempotency-Key", "parked-headers")
		if status != 200 {
			t.Errorf("parked generation: %d %v", status, out)
		}
		done <- h
	}()
	if w := c.must(200, "GET", "/_emulator/waiting?count=1&timeout=20s", nil); w["reached"] != true {
		t.Fatalf("the wait never began: %v", w)
	}
	c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": "5s"})
	h := <-done
	if h.Get("X-Ratelimit-Limit") != "5" || h.Get("X-Ratelimit-Remaining") != "4" || h.Get("Deprecation") != "@1767229200" ||
		h.Get("Sunset") != "Thu, 01 Jan 2026 02:00:00 GMT" || h.Get("Link") == "" {
		t.Errorf("parked answer's headers: %v", h)
	}
}
