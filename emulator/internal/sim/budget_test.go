package sim

import (
	"fmt"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/budget"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// TestMemoryBudget: the tenants' stores together stay within one budget. Past it a new quote,
// generation or tenant is refused with memory_budget_exhausted and nothing held is dropped;
// deleting a tenant gives its bytes back at once.
func TestMemoryBudget(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Budget = budget.New(200 << 10)
	cfg.MaxTenants = 100
	ts := NewTenants(cfg, ids.NewSeeded(1), media.NewCache(64<<20))
	t.Cleanup(ts.Close)
	a, err := ts.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	var refusal error
	for i := range 10_000 {
		input := fox(1)
		input["prompt"] = fmt.Sprintf("a red fox, take %d", i)
		q, err := a.World().Quote("acct_a", "test/pixel", input)
		a.Enter()
		a.Leave() // a request's end counts what the tenant holds
		if err != nil {
			refusal = err
			break
		}
		held = append(held, q.ID)
	}
	if codeOf(refusal) != problem.MemoryBudgetExhausted {
		t.Fatalf("after %d quotes: %v, want memory_budget_exhausted", len(held), refusal)
	}
	if len(held) < 100 {
		t.Errorf("only %d quotes fit in 200 KiB", len(held))
	}
	if used := cfg.Budget.Used(); used > cfg.Budget.Limit() {
		t.Errorf("%d bytes counted over a budget of %d", used, cfg.Budget.Limit())
	}
	for _, id := range held {
		if _, ok := a.World().quotes.Find("acct_a", id); !ok {
			t.Fatalf("quote %s was dropped to make room", id)
		}
	}
	if _, err := ts.Get("b"); codeOf(err) != problem.MemoryBudgetExhausted {
		t.Errorf("a new tenant past the budget: %v, want memory_budget_exhausted", err)
	}
	w := ts.Default().World()
	if _, err := w.Quote("acct_a", "test/pixel", fox(1)); codeOf(err) != problem.MemoryBudgetExhausted {
		t.Errorf("a quote in another tenant past the budget: %v, want memory_budget_exhausted", err)
	}
	if err := ts.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Quote("acct_a", "test/pixel", fox(1)); err != nil {
		t.Errorf("a quote once the full tenant was deleted: %v", err)
	}
	if _, err := ts.Get("b"); err != nil {
		t.Errorf("a new tenant once the full tenant was deleted: %v", err)
	}
}
