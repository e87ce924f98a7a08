package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
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
			if _, err := decodeSnapshot(doc); err != nil {
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
