package importer

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// listingAnswer is a whole, good answer to GET /v1/models.
const listingAnswer = `{"data":[],"total":0,"has_more":false}`

// TestWhatRetryingCannotFixStopsAtOnce: an answer that would be the same on every try is
// final at the first: one request, no wait, and the error says what came.
func TestWhatRetryingCannotFixStopsAtOnce(t *testing.T) {
	t.Parallel()
	endless := func(w http.ResponseWriter, r *http.Request, status int, ctype, chunk string) {
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		for r.Context().Err() == nil {
			if _, err := w.Write([]byte(chunk)); err != nil {
				return
			}
		}
	}
	gateway := `<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>`
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"an endless HTML body", func(w http.ResponseWriter, r *http.Request) {
			endless(w, r, http.StatusOK, "text/html", "<p>and on</p>")
		}, "not JSON"},
		{"an endless error body", func(w http.ResponseWriter, r *http.Request) {
			endless(w, r, http.StatusInternalServerError, "text/plain", "and on ")
		}, "status 500"},
		{"text, not JSON", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("OK"))
		}, "not JSON (text/plain)"},
		{"JSON but not an object", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`[]`))
		}, "not a JSON object"},
		{"garbled JSON, whole", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":[{"id":"` + "\x00" + `,`))
		}, "not JSON (application/json)"},
		{"a gateway's HTML page", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(gateway))
		}, "status 502"},
		{"a 500 without Retry-After", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"code":"internal_error","detail":"boom"}`))
		}, "status 500 internal_error: boom"},
		{"a 503 without Retry-After", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}, "status 503"},
		{"a 429 without Retry-After", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusTooManyRequests)
		}, "status 429"},
		{"a 504 with Retry-After", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusGatewayTimeout)
		}, "status 504"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := newHostile(t, c.handler)
			w := &waits{}
			o := hostileOptions(srv.URL, w, nil)
			cl, err := o.client()
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.do(context.Background(), http.MethodGet, "/v1/models", nil, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want %q", err, c.want)
			}
			if n := len(srv.requests()); n != 1 || w.count() != 0 {
				t.Errorf("%d requests, %d waits; want one request and no wait", n, w.count())
			}
		})
	}
	t.Run("a refused connection", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		w := &waits{}
		o := hostileOptions("http://"+addr, w, nil)
		cl, err := o.client()
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.do(context.Background(), http.MethodGet, "/v1/models", nil, nil)
		if err == nil || !strings.Contains(err.Error(), "refused") || w.count() != 0 {
			t.Errorf("err %v after %d waits; want a refusal and no wait", err, w.count())
		}
	})
}

// TestWhatMayPassIsRetried: a 429 or 503 with Retry-After waits it; a connection that drops
// or resets before the answer is whole, or a body cut short of its length, backs off. Each
// then gets its answer on the next try.
func TestWhatMayPassIsRetried(t *testing.T) {
	t.Parallel()
	hijack := func(w http.ResponseWriter, reset bool) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		if tcp, ok := conn.(*net.TCPConn); ok && reset {
			_ = tcp.SetLinger(0) // close with a reset, not a goodbye
		}
		_ = conn.Close()
	}
	cases := []struct {
		name  string
		first http.HandlerFunc
		wait  time.Duration // 0: the first backoff
	}{
		{"a 429 with Retry-After", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		}, 7 * time.Second},
		{"a 503 with Retry-After", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3")
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("<html>maintenance</html>"))
		}, 3 * time.Second},
		{"a connection reset", func(w http.ResponseWriter, r *http.Request) { hijack(w, true) }, 0},
		{"a connection closed before the answer", func(w http.ResponseWriter, r *http.Request) { hijack(w, false) }, 0},
		{"a body cut short", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(4*len(listingAnswer)))
			_, _ = w.Write([]byte(listingAnswer[:10]))
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			srv := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					c.first(w, r)
					return
				}
				_, _ = w.Write([]byte(listingAnswer))
			})
			w := &waits{}
			o := hostileOptions(srv.URL, w, nil)
			// A fresh connection for each try, so the transport itself retries nothing.
			o.HTTPClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			cl, err := o.client()
			if err != nil {
				t.Fatal(err)
			}
			doc, err := cl.do(context.Background(), http.MethodGet, "/v1/models", nil, nil)
			if err != nil || doc.get("data") == nil {
				t.Fatalf("err %v", err)
			}
			want := c.wait
			if want == 0 {
				want = firstBackoff
			}
			if len(w.all) != 1 || w.all[0] != want || n.Load() != 2 {
				t.Errorf("%d requests, waits %v; want two requests and one wait of %v", n.Load(), w.all, want)
			}
		})
	}
}
