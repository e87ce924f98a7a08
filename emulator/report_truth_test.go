package emulator

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// clocks are the three clock modes a behaviour that touches time is tested on.
var clocks = []string{"real", "manual", "skip"}

// clockServer serves the small test catalog on the clock named, over a real connection (a
// wait=true parks only on one), with test/pixel quick enough for the real clock: 10 ms in its
// queue and 40 ms to run.
func clockServer(t testing.TB, mode string, cfg Config) (*httptest.Server, *Server) {
	t.Helper()
	raw, err := os.ReadFile("../testdata/catalogs/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	quick := strings.Replace(string(raw), "timing: {queue: 100ms, run: 900ms, queue_timeout: 1m}", "timing: {queue: 10ms, run: 40ms, queue_timeout: 1m}", 1)
	if quick == string(raw) {
		t.Fatal("the small catalog's test/pixel timing changed; update clockServer")
	}
	path := filepath.Join(t.TempDir(), "quick.yaml")
	if err := os.WriteFile(path, []byte(quick), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.CatalogFile = path
	switch mode {
	case "manual":
		cfg.ManualClock = true
	case "skip":
		cfg.SkipClock = true
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	return hs, s
}

// waitGenerate sends a wait=true generation and returns its answer; on the manual clock it
// moves the clock once the generation waits, as a test of a waiting client does.
func waitGenerate(c wire, mode string, input map[string]any, key string, headers ...string) map[string]any {
	c.t.Helper()
	q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
	type answer struct {
		status int
		body   map[string]any
	}
	done := make(chan answer, 1)
	go func() {
		status, body, _ := c.do("POST", "/v1/generate?wait=true", map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]},
			append([]string{"Idempotency-Key", key}, headers...)...)
		done <- answer{status, body}
	}()
	if mode == "manual" {
		if w := c.must(200, "GET", "/_emulator/waiting?count=1&timeout=20s", nil); w["reached"] != true {
			c.t.Fatalf("the wait never began: %v", w)
		}
		c.must(200, "POST", "/_emulator/clock", map[string]any{"advance": "5s"})
	}
	a := <-done
	if a.status != 200 {
		c.t.Fatalf("wait=true: %d %v", a.status, a.body)
	}
	return a.body
}

// journalOf lists the tenant's journal entries of a path.
func journalOf(c wire, path string) []api.JournalEntry {
	c.t.Helper()
	req, _ := http.NewRequest("GET", c.base+"/_emulator/requests?path="+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct{ Data []api.JournalEntry }
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		c.t.Fatal(err)
	}
	return page.Data
}

// A wait=true answered when its job ended is an answer the client read, on every clock: the
// journal does not call it a hang-up, and generating the same input again with a new quote and
// a new key (a second variation on purpose, or a fresh attempt after a wait answered failed) is
// no retry of an ambiguous attempt. A client that does hang up on its wait is still one that
// left.
func TestWaitTrueIsNotAHangUp(t *testing.T) {
	for _, mode := range clocks {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			hs, _ := clockServer(t, mode, Config{MaxWait: time.Minute})
			c := wire{t: t, base: hs.URL, key: "key_a"}
			input := map[string]any{"prompt": "a lighthouse"}
			if job := waitGenerate(c, mode, input, "first"); job["status"] != "succeeded" {
				t.Fatalf("first: %v", job["status"])
			}
			if job := waitGenerate(c, mode, input, "second"); job["status"] != "succeeded" {
				t.Fatalf("second, on purpose: %v", job["status"])
			}
			if job := waitGenerate(c, mode, input, "third", "X-Emulator-Outcome", "fail"); job["status"] != "failed" {
				t.Fatalf("third: %v", job["status"])
			}
			if job := waitGenerate(c, mode, input, "fourth"); job["status"] != "succeeded" {
				t.Fatalf("a fresh attempt after the failure: %v", job["status"])
			}
			for _, e := range journalOf(c, "/v1/generate") {
				if e.ClientLeft {
					t.Errorf("entry %d (key %s) says the client left", e.Seq, e.IdempotencyKey)
				}
			}
			if rep := getReport(t, c, ""); len(rep.Findings) != 0 {
				t.Errorf("findings %+v, want none", rep.Findings)
			}

			if mode != "manual" || runtime.GOOS != "linux" {
				return // only a wait that blocks can be hung up on; the watch is Linux's
			}
			q := c.must(200, "POST", "/v1/quotes", map[string]any{"model": "test/pixel", "input": input})
			body, _ := json.Marshal(map[string]any{"model": "test/pixel", "input": input, "quote_id": q["quote_id"]})
			conn, err := net.Dial("tcp", hs.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "POST /v1/generate?wait=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer key_a\r\n"+
				"Content-Type: application/json\r\nIdempotency-Key: gone\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			if w := c.must(200, "GET", "/_emulator/waiting?count=1&timeout=20s", nil); w["reached"] != true {
				t.Fatalf("the wait never began: %v", w)
			}
			_ = conn.(*net.TCPConn).CloseWrite()
			_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
			if _, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil {
				t.Fatalf("no answer after the client closed its end: %v", err)
			}
			_ = conn.Close()
			entries := journalOf(c, "/v1/generate")
			if i := slices.IndexFunc(entries, func(e api.JournalEntry) bool { return e.IdempotencyKey == "gone" }); i < 0 || !entries[i].ClientLeft {
				t.Errorf("the wait hung up on is not journaled as left: %+v", entries)
			}
		})
	}
}

// clockHandler is an emulator over the small catalog on the clock named, for tests that call
// its handler directly (inside a synctest bubble, where real time is the bubble's).
func clockHandler(t testing.TB, mode string) *Server {
	t.Helper()
	cfg := Config{CatalogFile: "../testdata/catalogs/small.yaml"}
	switch mode {
	case "manual":
		cfg.ManualClock = true
	case "skip":
		cfg.SkipClock = true
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	<-s.Ready()
	return s
}

// A client refused with Retry-After that waits it out — sleeping in real time, or, on the
// manual clock, moving the clock as a test's sleep does — gets through and is not reported, on
// every clock; on the skipping clock its return moves the clock to the window's end, as any
// wait does, also across a snapshot and its restore. One that comes straight back is reported
// on every clock.
func TestRetryAfterOnEveryClock(t *testing.T) {
	for _, mode := range clocks {
		for _, careful := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/careful=%v", mode, careful), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s := clockHandler(t, mode)
					defer s.Close()
					putScenario(t, s, map[string]any{"rate_limits": []any{map[string]any{"match": map[string]any{"path": "/v1/models"}, "limit": 1, "per": "2s"}}})
					roundTrip := func() { // a snapshot and its restore keep the window, and a refusal in it
						if rec := restore(t, s, "", snapshotOf(t, s, "", "?journal=true")); rec.Code != 200 {
							t.Fatalf("restore: %d %s", rec.Code, rec.Body)
						}
					}
					if rec := call(t, s, "GET", "/v1/models", "key_a", nil); rec.Code != 200 {
						t.Fatalf("first: %d", rec.Code)
					}
					if careful {
						roundTrip()
					}
					limited := call(t, s, "GET", "/v1/models", "key_a", nil)
					if limited.Code != 429 {
						t.Fatalf("second: %d, want 429", limited.Code)
					}
					after, _ := strconv.Atoi(limited.Header().Get("Retry-After"))
					if !careful {
						// Real times are not kept in a snapshot: an answer from before a restore is
						// judged on the tenant's clock, which did not move for this client.
						roundTrip()
					}
					if careful {
						if mode == "manual" {
							if rec := control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": fmt.Sprintf("%ds", after)}); rec.Code != 200 {
								t.Fatalf("advance: %d", rec.Code)
							}
						} else {
							time.Sleep(time.Duration(after) * time.Second)
						}
					}
					back := call(t, s, "GET", "/v1/models", "key_a", nil)
					if want := 200; (careful || mode == "skip") && back.Code != want {
						t.Errorf("back after the wait: %d, want %d", back.Code, want)
					}
					rep := decode[api.Report](t, control(t, s, "GET", "/_emulator/report", nil))
					if got := slices.Collect(func(yield func(string) bool) {
						for _, f := range rep.Findings {
							yield(f.Rule)
						}
					}); careful != (len(got) == 0) || (!careful && !slices.Equal(got, []string{"retry-after-ignored"})) {
						t.Errorf("findings %+v", rep.Findings)
					}
				})
			})
		}
	}
}

// The journal knows each request's connection and real times, which the report judges what a
// client could have seen by: two requests on one kept-alive connection share it, a request on
// a new connection has its own.
func TestJournalKnowsTheConnection(t *testing.T) {
	t.Parallel()
	hs, s := clockServer(t, "manual", Config{})
	kept := &http.Client{Transport: &http.Transport{}}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, c := range []*http.Client{kept, kept, fresh} {
		req, _ := http.NewRequest("GET", hs.URL+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer key_a")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	log, _ := s.world().Journal().Log()
	if len(log) != 3 {
		t.Fatalf("%d events", len(log))
	}
	conns := []string{log[0].Request.Conn, log[1].Request.Conn, log[2].Request.Conn}
	if conns[0] == "" || conns[0] != conns[1] || conns[2] == conns[0] {
		t.Errorf("connections %q: want the first two alike, the third another", conns)
	}
	for _, ev := range log {
		if ev.Real == nil || ev.Real.Arrived.After(ev.Real.Answered) {
			t.Errorf("entry %d: real times %+v", ev.Request.Seq, ev.Real)
		}
	}
}

// An error a test provokes on purpose and declares (POST /_emulator/expected-errors) draws no
// finding of the rule it explains, on every clock and across a snapshot and its restore; an
// error it did not declare still does.
func TestDeclaredErrorsAreNotFindings(t *testing.T) {
	for _, mode := range clocks {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := clockHandler(t, mode)
			defer s.Close()
			if rec := control(t, s, "POST", "/_emulator/expected-errors", map[string]any{"status": 422, "code": "quote_expired"}); rec.Code != 201 {
				t.Fatalf("expect: %d %s", rec.Code, rec.Body)
			}
			input := map[string]any{"prompt": "a cat"}
			q := quote(t, s, "key_a", "test/pixel", input)
			if rec := control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "11m"}); rec.Code != 200 {
				t.Fatalf("advance: %d", rec.Code)
			}
			if rec := generate(t, s, "key_a", "late", q, input, ""); rec.Code != 422 {
				t.Fatalf("generate with an expired quote: %d %s", rec.Code, rec.Body)
			}
			rules := func() []string {
				var out []string
				for _, f := range decode[api.Report](t, control(t, s, "GET", "/_emulator/report", nil)).Findings {
					out = append(out, f.Rule)
				}
				return out
			}
			if got := rules(); len(got) != 0 {
				t.Errorf("findings %v after the declared error, want none", got)
			}
			if rec := restore(t, s, "", snapshotOf(t, s, "", "?journal=true")); rec.Code != 200 {
				t.Fatalf("restore: %d %s", rec.Code, rec.Body)
			}
			if got := rules(); len(got) != 0 {
				t.Errorf("findings %v after a restore, want none", got)
			}
			q = quote(t, s, "key_a", "test/pixel", input)
			if rec := generate(t, s, "key_a", "other", q, map[string]any{"prompt": "a dog"}, ""); rec.Code != 422 {
				t.Fatalf("generate another input: %d %s", rec.Code, rec.Body)
			}
			if got := rules(); !slices.Equal(got, []string{"quote-mismatch"}) {
				t.Errorf("findings %v after an undeclared error, want quote-mismatch", got)
			}
		})
	}
}
