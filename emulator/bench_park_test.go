package emulator

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/serve"
)

// parkedWaiters is how many wait=true generations BenchmarkParkedWaiters holds at once: enough
// for a steady figure per waiter, few enough for the default limit on open files (each costs
// a descriptor on both ends).
const parkedWaiters = 400

// BenchmarkParkedWaiters parks wait=true generations on real connections, through an
// httptest.Server whose bodies are guarded as the command's are (a read deadline through the
// response), and reports the live heap each holds once every handler has returned:
//
//	B/waiter  the heap a parked generation keeps beyond the quote it spent: the waiter, its
//	          job and idempotency record, and its two sockets (the emulator's and the client's)
//
// It then ends every job with one clock advance and checks each answer is 200. ns/op is the
// whole cycle, quotes included, and means little.
func BenchmarkParkedWaiters(b *testing.B) {
	var perWaiter float64
	for b.Loop() {
		perWaiter = parkedHeap(b, parkedWaiters)
	}
	b.ReportMetric(perWaiter, "B/waiter")
}

// parkedHeap parks n generations and returns the live heap per waiter.
func parkedHeap(b *testing.B, n int) float64 {
	s := benchServer(b)
	hs := httptest.NewServer(serve.NewBodyGuard(30 * time.Second).Wrap(s))
	defer hs.Close()
	const model = "fal-ai/flux/schnell"
	const input = `{"prompt":"a lighthouse on a cliff at dusk, long exposure","num_images":1}`
	ids := make([]string, n)
	for i := range ids {
		ids[i] = quoteIDOf(b, post(s, "/v1/quotes", quoteRequest(model, input), ""))
	}
	// One generation first, so what the first of a model's costs once (its compiled schema,
	// say) is not counted against the waiters.
	warm := quoteIDOf(b, post(s, "/v1/quotes", quoteRequest(model, input), ""))
	if rec := post(s, "/v1/generate", generateRequest(model, input, warm), "warm"); rec.Code != http.StatusAccepted {
		b.Fatalf("generate: %d %s", rec.Code, rec.Body)
	}
	conns := make([]net.Conn, n)
	host := hs.Listener.Addr().String()
	s.hangups.Start() // its one goroutine, for every parked connection, is there before the count
	goroutines := runtime.NumGoroutine()

	before := heapAlloc()
	for i := range conns {
		c, err := net.Dial("tcp", host)
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = c
		body := generateRequest(model, input, ids[i])
		ids[i] = ""
		req := "POST /v1/generate?wait=true HTTP/1.1\r\nHost: " + host +
			"\r\nAuthorization: Bearer " + benchKey +
			"\r\nContent-Type: application/json\r\nIdempotency-Key: park-" + strconv.Itoa(i) +
			"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body)
		if _, err := io.WriteString(c, req); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if got, ok := s.world().AwaitWaiting(ctx, int64(n), nil); !ok {
		b.Fatalf("%d of %d generations waiting", got, n)
	}
	// The wait begins inside the handler; what the handler and net/http's connection goroutine
	// drop on their way out is garbage only once they have returned.
	for deadline := time.Now().Add(time.Minute); runtime.NumGoroutine() > goroutines; {
		if time.Now().After(deadline) {
			b.Fatalf("%d goroutines, %d before the connections", runtime.NumGoroutine(), goroutines)
		}
		time.Sleep(time.Millisecond)
	}
	after := heapAlloc()

	if err := s.world().Advance(time.Minute); err != nil {
		b.Fatal(err)
	}
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			b.Fatalf("connection %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		_ = c.Close()
		if resp.StatusCode != http.StatusOK || !resp.Close {
			b.Fatalf("connection %d: %d, closing %v", i, resp.StatusCode, resp.Close)
		}
	}
	return float64(int64(after)-int64(before)) / float64(n)
}

// heapAlloc is the live heap after a full collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
