package mediagen_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	mediagen "github.com/mediagen/mediagen-emulator/examples/go"
)

// stub answers the four calls the client makes, the way a hand-written stub does: every
// generation succeeds on the second poll, nothing expires, nothing fails. Both clients pass
// against it, which is the trouble with stubs.
func stub(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	polls := map[string]int{}
	mux := http.NewServeMux()
	send := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /v1/quotes", func(w http.ResponseWriter, r *http.Request) {
		send(w, 200, map[string]any{"quote_id": "q1", "credits": 4, "expires_at": "2099-01-01T00:00:00Z"})
	})
	mux.HandleFunc("POST /v1/generate", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Idempotency-Key") == "" {
			send(w, 400, map[string]any{"code": "missing_idempotency_key"})
			return
		}
		send(w, 202, map[string]any{"id": "j1", "status": "queued"})
	})
	mux.HandleFunc("GET /v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		polls[r.PathValue("id")]++
		n := polls[r.PathValue("id")]
		mu.Unlock()
		if n < 2 {
			send(w, 200, map[string]any{"id": r.PathValue("id"), "status": "running"})
			return
		}
		send(w, 200, map[string]any{"id": r.PathValue("id"), "status": "succeeded",
			"outputs": []any{map[string]any{"url": "http://" + r.Host + "/files/j1/0.png"}}})
	})
	mux.HandleFunc("GET /files/{job}/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG not really"))
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs
}

func TestBothClientsPassAgainstAStub(t *testing.T) {
	for _, careful := range []bool{false, true} {
		hs := stub(t)
		var slept time.Duration
		c := &mediagen.Client{BaseURL: hs.URL, Key: "k", Careful: careful, Sleep: func(d time.Duration) { slept += d }}
		res, err := c.Render(context.Background(), "m", map[string]any{"prompt": "a cat"})
		if err != nil || res.JobID != "j1" || len(res.URLs) != 1 {
			t.Fatalf("careful %v: %+v, %v", careful, res, err)
		}
		if careful && (len(res.Files) != 1 || !strings.HasPrefix(string(res.Files[0]), "\x89PNG")) {
			t.Errorf("the careful client did not download: %+v", res)
		}
		if slept == 0 {
			t.Errorf("careful %v: the client never waited between polls", careful)
		}
	}
}
