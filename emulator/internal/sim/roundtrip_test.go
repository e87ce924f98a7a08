package sim

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/quotes"
)

// TestLargeStateRoundTrips: a tenant holding more live jobs than its account keeps markers of
// quotes writes a snapshot it reads back. The quotes of the oldest jobs are forgotten, as the
// marker bound says; their jobs are still restored.
func TestLargeStateRoundTrips(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a state past the quote markers' bound")
	}
	t.Parallel()
	ts := newTestTenants(t, testConfig(t))
	a, _ := ts.Get("a")
	w := a.World()
	n := quotes.DefaultLimit + 50
	if _, err := w.SetCredits("acct_a", 10*int64(n)); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		q, err := w.Quote("acct_a", "test/pixel", fox(1))
		if err != nil {
			t.Fatal(err)
		}
		g := Generation{Account: "acct_a", IdempotencyKey: "k" + strconv.Itoa(i), Model: "test/pixel", QuoteID: q.ID, Input: fox(1)}
		if _, _, err := w.Generate(context.Background(), g); err != nil {
			t.Fatalf("generation %d: %v", i, err)
		}
	}
	doc := w.Snapshot(true)
	if len(doc.Jobs) != n {
		t.Fatalf("the snapshot holds %d jobs, want %d", len(doc.Jobs), n)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ts.Get("b")
	if _, err := b.Restore(back); err != nil {
		t.Fatalf("restoring the %d-byte snapshot it wrote: %v", len(data), err)
	}
	if got := len(b.World().Snapshot(false).Jobs); got != n {
		t.Fatalf("the restored tenant holds %d jobs, want %d", got, n)
	}
}
