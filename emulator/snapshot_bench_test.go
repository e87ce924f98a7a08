package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// BenchmarkSnapshot10kJobs takes and restores the snapshot of a tenant holding 10,000 jobs
// (half ended, half live), reporting the document's size and the processor time each takes
// (garbage collection included), which a machine shared with other work does not inflate as it
// does the time on the clock.
func BenchmarkSnapshot10kJobs(b *testing.B) {
	s := simServer(b, Config{Seeded: true, Seed: 1})
	for i := range 10_000 {
		input := map[string]any{"prompt": fmt.Sprint("bench ", i)}
		q := decode[quoteBody](b, tenantCall(b, s, "big", "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": schnellID, "input": input}))
		outcome := "slow"
		if i%2 == 0 {
			outcome = "succeed"
		}
		rec := tenantCall(b, s, "big", "POST", "/v1/generate", "mg_test_all", map[string]any{"model": schnellID, "input": input, "quote_id": q.QuoteID},
			"Idempotency-Key", fmt.Sprint("k", i), "X-Emulator-Outcome", outcome)
		if rec.Code != 202 {
			b.Fatalf("generate: %d %s", rec.Code, rec.Body)
		}
	}
	tenantCall(b, s, "big", "POST", "/_emulator/clock", "", map[string]any{"advance": "1s"})
	doc := snapshotOf(b, s, "big", "")
	b.Run("snapshot", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		for b.Loop() {
			snapshotOf(b, s, "big", "")
		}
		b.ReportMetric(float64(len(doc))/1e6, "MB/doc")
		b.ReportMetric(float64((cpuTime()-start).Milliseconds())/float64(b.N), "cpu-ms/op")
	})
	// Reading the document alone, strictly, with the decoder restore uses and with encoding/json
	// (which reads it two to three times as slowly, and names neither a field given twice nor where an
	// unknown one is): the reason for github.com/go-json-experiment/json.
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sim.DecodeSnapshot(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(doc))
			dec.DisallowUnknownFields()
			dec.UseNumber()
			var v api.Snapshot
			if err := dec.Decode(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("restore", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		for b.Loop() {
			if rec := restore(b, s, "copy", doc); rec.Code != 200 {
				b.Fatalf("restore: %d %s", rec.Code, rec.Body)
			}
		}
		b.ReportMetric(float64(len(doc))/1e6, "MB/doc")
		b.ReportMetric(float64((cpuTime()-start).Milliseconds())/float64(b.N), "cpu-ms/op")
	})
}

// BenchmarkConcurrentUploads sends 16 snapshot uploads of 64 MiB at once (each a document
// whose inline scenario is a long string, so it is read, decoded and refused) and reports the
// peak of the live heap: the uploads in flight are bounded together.
//
//	go test -run '^$' -bench ConcurrentUploads -benchtime 1x ./emulator/
func BenchmarkConcurrentUploads(b *testing.B) {
	const size = 64 << 20
	s := simServer(b, Config{MaxSnapshotBytes: size})
	head, tail := `{"format":1,"scenario":{"document":"`, `"}}`
	body := func() io.Reader {
		return io.MultiReader(strings.NewReader(head), io.LimitReader(repeatByte('a'), size-int64(len(head)+len(tail))), strings.NewReader(tail))
	}
	for b.Loop() {
		runtime.GC()
		var peak atomic.Uint64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			for {
				metrics.Read(sample)
				peak.Store(max(peak.Load(), sample[0].Value.Uint64()))
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
			}
		}()
		codes := make(chan int, 16)
		for i := range 16 {
			go func() {
				req := httptest.NewRequest("PUT", "/_emulator/snapshot", body())
				req.Header.Set("X-Emulator-Tenant", fmt.Sprint("up", i))
				req.ContentLength = size
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, req)
				codes <- rec.Code
			}()
		}
		answered := map[int]int{}
		for range 16 {
			answered[<-codes]++
		}
		close(stop)
		<-sampled
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-MiB")
		b.Logf("answers: %v", answered)
	}
}

// repeatByte reads as an endless run of one byte.
type repeatByte byte

func (r repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}
