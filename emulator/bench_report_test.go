package emulator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// BenchmarkReportFullJournal judges a tenant whose journal is full (sim.JournalEntries, the
// default bound) of a busy, flawed client's traffic: quotes, generations, fast polls, polls after
// the end, retries. The report must stay well under 50 ms per call.
func BenchmarkReportFullJournal(b *testing.B) {
	s := flowServer(b)
	world := s.world()
	if _, err := world.SetCredits("acct_a", 1e12); err != nil {
		b.Fatal(err)
	}
	held := func() int { _, n, _ := world.Journal().List(context.Background(), nil, 0, 0); return n }
	// Past the bound by a few hundred, so the journal has wrapped as a long run's has.
	for i := 0; i < sim.JournalEntries/7+100; i++ {
		input := fmt.Sprintf(`{"prompt":"a cat number %d, with a longer prompt such as clients send","num_images":1}`, i)
		q := quoteIDOf(b, call(b, s, "POST", "/v1/quotes", "key_a", string(quoteRequest("test/pixel", input))))
		body := string(generateRequest("test/pixel", input, q))
		rec := call(b, s, "POST", "/v1/generate", "key_a", body, "Idempotency-Key", fmt.Sprint("k", i))
		id := decode[map[string]any](b, rec)["id"].(string)
		if i%10 == 0 { // now and then a retry with a new key, refused
			call(b, s, "POST", "/v1/generate", "key_a", body, "Idempotency-Key", fmt.Sprint("again", i))
		}
		for range 3 {
			call(b, s, "GET", "/v1/jobs/"+id, "key_a", nil)
		}
		if err := world.Advance(2 * time.Second); err != nil {
			b.Fatal(err)
		}
		call(b, s, "GET", "/v1/jobs/"+id, "key_a", nil)
		call(b, s, "GET", "/v1/jobs/"+id, "key_a", nil)
	}
	if n := held(); n != sim.JournalEntries {
		b.Fatalf("the journal holds %d entries, want it full at %d", n, sim.JournalEntries)
	}
	var found int
	b.ReportAllocs()
	for b.Loop() {
		_, findings := world.Judge()
		found = len(findings)
	}
	if found == 0 {
		b.Fatal("a flawed client's full journal gave no findings")
	}
	b.ReportMetric(float64(found), "findings")
}
