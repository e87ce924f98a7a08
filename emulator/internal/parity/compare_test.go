package parity

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
)

// TestCompare: each compared part of an answer, changed alone, is found at its path; values
// that are not shapes (a detail's text, a request id, a Retry-After's number) are not.
func TestCompare(t *testing.T) {
	t.Parallel()
	problem := map[string]string{"Content-Type": "application/problem+json", "WWW-Authenticate": `Bearer realm="api"`}
	base := Answer{Status: 422, Header: problem,
		Body: `{"type":"about:blank","status":422,"detail":"d","code":"invalid_input","request_id":"r1","errors":[{"pointer":"/input/a","message":"m"}]}`}
	with := func(f func(a *Answer)) Answer {
		a := base
		a.Header = map[string]string{}
		for k, v := range base.Header {
			a.Header[k] = v
		}
		f(&a)
		return a
	}
	body := func(b string) Answer { return with(func(a *Answer) { a.Body = b }) }
	for _, c := range []struct {
		name  string
		emu   Answer
		paths []string
	}{
		{"same", base, nil},
		{"values", body(`{"type":"https://x","status":422,"detail":"other","code":"invalid_input","request_id":"r2","errors":[{"pointer":"/input/a","message":"n"}]}`), nil},
		{"status", with(func(a *Answer) { a.Status = 400 }), []string{"/status"}},
		{"code", body(`{"type":"about:blank","status":422,"detail":"d","code":"invalid_request","request_id":"r1","errors":[{"pointer":"/input/a","message":"m"}]}`), []string{"/body/code"}},
		{"member type", body(`{"type":"about:blank","status":"422","detail":"d","code":"invalid_input","request_id":"r1","errors":[{"pointer":"/input/a","message":"m"}]}`), []string{"/body/status"}},
		{"member gone", body(`{"type":"about:blank","status":422,"code":"invalid_input","request_id":"r1","errors":[{"pointer":"/input/a","message":"m"}]}`), []string{"/body/detail"}},
		{"pointer", body(`{"type":"about:blank","status":422,"detail":"d","code":"invalid_input","request_id":"r1","errors":[{"pointer":"/input/b","message":"m"}]}`), []string{"/body/errors/*/pointer"}},
		{"parameter for pointer", body(`{"type":"about:blank","status":422,"detail":"d","code":"invalid_input","request_id":"r1","errors":[{"parameter":"limit","message":"m"}]}`), []string{"/body/errors/*/parameter", "/body/errors/*/pointer"}},
		{"media type", with(func(a *Answer) { a.Header["Content-Type"] = "application/json; charset=utf-8" }), []string{"/headers/Content-Type"}},
		{"auth scheme", with(func(a *Answer) { a.Header["WWW-Authenticate"] = "Basic" }), []string{"/headers/WWW-Authenticate"}},
		{"retry-after", with(func(a *Answer) { a.Header["Retry-After"] = "3" }), []string{"/headers/Retry-After"}},
		{"allow", with(func(a *Answer) { a.Header["Allow"] = "GET" }), []string{"/headers/Allow"}},
		{"not JSON", body(`<html>`), []string{"/body"}},
		{"brace after the object", body(base.Body + "}"), []string{"/body"}},
		{"cut", with(func(a *Answer) { a.Cut = true }), []string{"/body"}},
	} {
		var paths []string
		for _, d := range Compare(base, c.emu) {
			paths = append(paths, d.Path)
		}
		if !slices.Equal(paths, c.paths) {
			t.Errorf("%s: differences at %q, want %q", c.name, paths, c.paths)
		}
	}
}

// TestPacerKeepsTheRate: requests go no faster than the rate, and a run already slower than
// it is not slowed further.
func TestPacerKeepsTheRate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := &pacer{every: time.Second / 2, sleep: importer.SleepContext, now: time.Now}
		start := time.Now()
		for range 5 {
			if err := p.wait(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("5 requests at 2 a second took %v, want 2s", d)
		}
		time.Sleep(3 * time.Second)
		before := time.Now()
		if err := p.wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(before); d != 0 {
			t.Errorf("a request after a long pause waited %v", d)
		}
	})
}

// TestEachPlannedRequestIsFree: every POST /v1/generate a plan makes names a quote the plan
// made up, and no request reaches a job the plan did not make up.
func TestEachPlannedRequestIsFree(t *testing.T) {
	t.Parallel()
	made := map[string]bool{}
	n := 0
	fresh := func() string {
		n++
		id := "fresh-" + time.Duration(n).String()
		made[id] = true
		return id
	}
	plan := Plan(Models{Ready: "m", ReadyExample: []byte(`{"prompt":"a"}`), Unready: "u", UnreadyExample: []byte(`{}`), Invalid: true}, Lacking{ReadOnly: true, GenerateOnly: true}, fresh)
	generates := 0
	for _, p := range plan {
		r := p.Request
		if r == nil {
			continue
		}
		if r.Path == "/v1/generate" {
			generates++
			var q struct {
				QuoteID string `json:"quote_id"`
			}
			if err := jsonUnmarshal(r.Body, &q); err == nil && !made[q.QuoteID] {
				t.Errorf("%s sends quote %q, which the plan did not make up", p.Case, q.QuoteID)
			}
		}
		if r.Method == "POST" && r.Path != "/v1/quotes" && r.Path != "/v1/generate" && !made[pathID(r.Path)] {
			t.Errorf("%s posts to %s", p.Case, r.Path)
		}
	}
	if generates < 8 {
		t.Errorf("only %d generate cases planned", generates)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// pathID is the id in /v1/jobs/{id}/cancel.
func pathID(p string) string {
	p = strings.TrimPrefix(p, "/v1/jobs/")
	id, _, _ := strings.Cut(p, "/")
	return id
}
