package emulator

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestUploadsRefusedBeforeTheirBuffer: snapshot uploads that announce more than the gate and
// the memory budget let in are answered 503 memory_budget_exhausted at once, before any of
// their body arrives, with the connection closed after the answer; they reserve nothing and
// set no buffer aside for the body they announced.
func TestUploadsRefusedBeforeTheirBuffer(t *testing.T) {
	s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", ManualClock: true, MemoryBudget: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	<-s.ready

	const uploads, announced = 20, 20 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	errs := make(chan error, uploads)
	for range uploads {
		wg.Go(func() {
			// The body is announced and never sent: a stalled upload.
			conn, err := net.Dial("tcp", hs.Listener.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on failure, not a wait
			fmt.Fprintf(conn, "PUT /_emulator/snapshot HTTP/1.1\r\nHost: emulator\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", announced)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				errs <- fmt.Errorf("no answer before the body: %v", err)
				return
			}
			defer resp.Body.Close()
			var body struct{ Code string }
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != 503 || body.Code != "memory_budget_exhausted" || !resp.Close || resp.Header.Get("Retry-After") == "" {
				errs <- fmt.Errorf("%d %q, close %v, Retry-After %q; want 503 memory_budget_exhausted, the connection closed, a Retry-After",
					resp.StatusCode, body.Code, resp.Close, resp.Header.Get("Retry-After"))
			}
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	held := s.tenants.Uploads().Held()
	if held != 0 {
		t.Errorf("the gate holds %d bytes once every upload was refused", held)
	}
	if b := s.tenants.Budget(); b.Used() > b.Limit() {
		t.Errorf("the budget counts %d of %d bytes", b.Used(), b.Limit())
	}
	// One buffer of an announced body each would be 320 MiB; refused uploads set none aside.
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("%d refused uploads allocated %d MiB", uploads, got>>20)
	}
}
