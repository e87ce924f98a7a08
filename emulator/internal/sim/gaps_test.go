package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// A quote names its model: an input that two models both accept, quoted for one, does not buy
// the other. Nothing is held, and the quote still buys the model it was made for.
func TestQuoteBuysOnlyItsModel(t *testing.T) {
	w := newTestWorld(t)
	input := map[string]any{"prompt": "a red fox"} // valid for test/reel and test/pixel alike
	q, err := w.Quote("acct_a", "test/reel", input)
	if err != nil {
		t.Fatal(err)
	}
	gen := func(model, key string) (jobs.View, error) {
		v, _, err := w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: key, Model: model,
			QuoteID: q.ID, Input: input})
		return v, err
	}
	if _, err := gen("test/pixel", "k1"); codeOf(err) != problem.QuoteMismatch {
		t.Fatalf("a test/reel quote spent on test/pixel: %v, want quote_mismatch", err)
	}
	if b, _ := w.Ledger().Balance("acct_a"); b.Available != 1000 || b.Held != 0 || w.Jobs() != 0 {
		t.Fatalf("the refused generation left %+v and %d job(s)", b, w.Jobs())
	}
	v, err := gen("test/reel", "k2")
	if err != nil || v.Model != "test/reel" || v.Credits != q.Credits {
		t.Fatalf("the quote's own model: %+v %v", v, err)
	}
}

// trio is a model priced 11 credits that makes 3 images, so a partial result's share does not
// come out whole: 2 kept are 22/3 credits, 1 kept 11/3.
const trio = `
models:
  - id: test/trio
    name: Trio
    description: Draws three pictures at a fixed price.
    category: text-to-image
    output_type: image
    input_schema:
      type: object
      additionalProperties: false
      required: [prompt]
      properties:
        prompt: {type: string, minLength: 1}
      examples:
        - {prompt: "three foxes"}
    pricing: {base: 11}
    timing: {queue: 100ms, run: 900ms}
    output: {count: 3, width: 64, height: 64}
accounts:
  - {id: acct_a, credits: 1000}
`

// A partial result charges credits × outputs returned ÷ outputs asked, rounded down, and
// refunds the rest of the hold: after the job ends nothing is held, and charged and refunded add
// up to the quote.
func TestPartialResultChargesItsShareRoundedDown(t *testing.T) {
	cfg := testConfig(t)
	cat, err := catalog.Parse("trio.yaml", []byte(trio))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Catalog = cat
	w := newTestTenants(t, cfg).Default().World()
	charges := map[int]int64{2: 7, 1: 3} // outputs kept → credits charged: ⌊11×2/3⌋, ⌊11×1/3⌋
	seen := map[int]bool{}
	last := api.Balance{Available: 1000}
	for i := 0; len(seen) < len(charges); i++ {
		if i == 20 {
			t.Fatalf("20 partial jobs kept only %v of 3 outputs", seen)
		}
		input := map[string]any{"prompt": fmt.Sprint("fox ", i)}
		q, err := w.Quote("acct_a", "test/trio", input)
		if err != nil || q.Credits != 11 {
			t.Fatalf("quote: %+v %v, want 11 credits", q, err)
		}
		v, _, err := w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: fmt.Sprint("k", i),
			Model: "test/trio", QuoteID: q.ID, Input: input, Outcome: scenario.OutcomePartial})
		if err != nil {
			t.Fatal(err)
		}
		mustAdvance(t, w, 2*time.Second)
		if v, err = w.Job("acct_a", v.ID); err != nil || v.Status != jobs.Succeeded {
			t.Fatalf("job %+v %v, want it succeeded", v, err)
		}
		kept := len(v.Outputs)
		charge, ok := charges[kept]
		if !ok || v.Plan.Filtered != 3-kept {
			t.Fatalf("%d outputs kept and %d filtered, want 3 asked with at least one filtered", kept, v.Plan.Filtered)
		}
		seen[kept] = true
		if v.Charged != charge || v.CreditStatus != jobs.CreditsCharged {
			t.Errorf("%d of 3 kept charged %d (%s), want %d", kept, v.Charged, v.CreditStatus, charge)
		}
		b, _ := w.Ledger().Balance("acct_a")
		if b.Held != 0 || b.Charged-last.Charged != charge || b.Refunded-last.Refunded != 11-charge || last.Available-b.Available != charge {
			t.Errorf("%d of 3 kept: balance went from %+v to %+v, want %d charged and %d refunded", kept, last, b, charge, 11-charge)
		}
		last = b
	}
}

// A generation whose quote a snapshot brought is validated again, whatever the quote says:
// only a quote made in this run, for this very input, spares the schema's check. A document
// whose quote names an input the catalog refuses (edited, or from another catalog) cannot buy
// that input.
func TestARestoredQuoteDoesNotSpareValidation(t *testing.T) {
	ts := newTestTenants(t, testConfig(t))
	w := ts.Default().World()
	q, err := w.Quote("acct_a", "test/pixel", fox(1))
	if err != nil {
		t.Fatal(err)
	}
	doc := w.Snapshot(false)
	invalid := fox(99) // num_images beyond the schema's maximum
	sum := sha256.Sum256(jsonvalue.Canonical(invalid))
	for i := range doc.Quotes {
		doc.Quotes[i].Input, doc.Quotes[i].InputDigest = nil, hex.EncodeToString(sum[:16])
	}
	w, err = ts.Default().Restore(&doc)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: "k", Model: "test/pixel", QuoteID: q.ID, Input: invalid})
	if codeOf(err) != problem.InvalidInput {
		t.Fatalf("a restored quote's input the schema refuses: %v, want invalid_input", err)
	}
}
