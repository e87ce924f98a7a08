package evidence

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// BenchmarkVerifyFullJournal matches a body pattern that nothing matches against a full journal
// (10,000 entries with 2 KiB bodies), so every body is read and the near misses ranked.
func BenchmarkVerifyFullJournal(b *testing.B) {
	entries := make([]api.JournalEntry, 10_000)
	for i := range entries {
		entries[i] = api.JournalEntry{Seq: uint64(i + 1), Method: "POST", Path: "/v1/generate", Status: 202,
			RequestHeaders: map[string]string{"Idempotency-Key": fmt.Sprint("k", i)},
			RequestBody:    json.RawMessage(fmt.Sprintf(`{"model":"m","input":{"prompt":%q,"n":%d}}`, strings.Repeat("x", 2000), i))}
	}
	p, errs := Parse(map[string]any{"method": "POST", "body": map[string]any{"model": "other", "input": map[string]any{"n": json.Number("-1")}}})
	if errs != nil {
		b.Fatal(errs)
	}
	b.ReportAllocs()
	for b.Loop() {
		if v := verifyIn(p, entries); v.Count != 0 || len(v.NearMisses) != MaxNearMisses {
			b.Fatalf("%+v", v)
		}
	}
}
