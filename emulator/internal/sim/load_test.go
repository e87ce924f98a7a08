package sim

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/quotes"
)

// TestOneKeySustainsFlows: one account makes 100,000 quote → generate flows with the default
// limits on the manual clock, which moves a millisecond every 100 flows, far less than a
// quote's lifetime. Spent quotes once counted toward the 10,000-quote bound until an hour after
// they expired, so the 10,001st quote was refused. Now none is, and what the world keeps levels
// off: no live quote, markers at their bound, jobs at theirs.
func TestOneKeySustainsFlows(t *testing.T) {
	t.Parallel()
	w := newTestWorld(t)
	if _, err := w.SetCredits("acct_a", 1<<40); err != nil {
		t.Fatal(err)
	}
	const flows = 100_000
	for i := range flows {
		q, err := w.Quote("acct_a", "test/pixel", fox(1))
		if err != nil {
			t.Fatalf("flow %d: quote: %v", i, err)
		}
		key := strconv.Itoa(i)
		if _, _, err := w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: key, Model: "test/pixel",
			QuoteID: q.ID, Input: fox(1)}); err != nil {
			t.Fatalf("flow %d: generate: %v", i, err)
		}
		if i%100 == 99 {
			mustAdvance(t, w, time.Millisecond)
		}
		if i%10_000 == 9_999 {
			if live, marks := w.Quotes(), w.quotes.Markers(); live != 0 || marks != min(i+1, quotes.DefaultLimit) {
				t.Fatalf("after %d flows: %d live quotes and %d markers; want 0 and %d", i+1, live, marks, min(i+1, quotes.DefaultLimit))
			}
		}
	}
	if n := w.Jobs(); n != flows {
		t.Errorf("%d jobs held; want %d", n, flows)
	}
}
