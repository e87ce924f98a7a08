package evidence

import (
	"slices"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// A quote refused on an answer a perturbation struck is not the client's doing: an expired
// quote on an answer an advance struck (the clock moved past the quote while the generation was
// in flight; the answer is the service's own) or a delay held past its expiry, and any quote
// refusal a fault answered in the service's place. The same refusal on an answer nothing
// struck is found, and so is a quote used twice or for another input on a merely delayed one.
func TestQuoteRulesExcuseAStruckAnswer(t *testing.T) {
	histories := []struct {
		rule    string
		history func(c *client) uint64 // returns the generation the perturbation may strike
	}{
		{ExpiredQuote, func(c *client) uint64 {
			c.quote("q1", time.Minute)
			c.sleep(2 * time.Minute)
			return c.generate("k1", "q1", 422, "quote_expired", "", "")
		}},
		{QuoteReused, func(c *client) uint64 {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			c.poll("j1", "running")
			return c.generate("k2", "q1", 409, "quote_already_used", "", "")
		}},
		{QuoteMismatch, func(c *client) uint64 {
			c.quote("q1", 10*time.Minute)
			return c.generate("k1", "q1", 422, "quote_mismatch", "", "")
		}},
	}
	// An outcome (a strike of no fault kind) moves no time: the quote the client let expire is
	// its own.
	t.Run("expired-quote/outcome", func(t *testing.T) {
		c := newClient()
		c.entry(histories[0].history(c)).Fault = "fault_1"
		if got := c.judge(); len(got) != 1 || got[0].Rule != ExpiredQuote {
			t.Fatalf("findings %+v, want the client's expired quote", got)
		}
	})
	for _, h := range histories {
		kinds := []string{"error", "malformed"}
		if h.rule == ExpiredQuote {
			kinds = append(kinds, "delay") // an advance strikes as a delay
		}
		for _, kind := range kinds {
			t.Run(h.rule+"/struck/"+kind, func(t *testing.T) {
				c := newClient()
				e := c.entry(h.history(c))
				e.Fault, e.FaultKind = "fault_1", kind
				if got := c.judge(); len(got) != 0 {
					t.Fatalf("findings %+v, want none: the perturbation made the answer", got)
				}
			})
		}
		t.Run(h.rule+"/not struck", func(t *testing.T) {
			c := newClient()
			h.history(c)
			if got := rulesOf(c.judge()); !slices.Equal(got, []string{h.rule}) {
				t.Fatalf("findings %v, want %s", got, h.rule)
			}
		})
		if h.rule != ExpiredQuote {
			t.Run(h.rule+"/delayed", func(t *testing.T) {
				c := newClient()
				e := c.entry(h.history(c))
				e.Fault, e.FaultKind = "fault_1", "delay"
				if got := rulesOf(c.judge()); !slices.Equal(got, []string{h.rule}) {
					t.Fatalf("findings %v, want %s: a delay does not reuse a quote", got, h.rule)
				}
			})
		}
	}
}

// A perturbation that strikes without a fault action (a plan's advance alone, an outcome it
// forces) leaves the answer the service's: a generation so struck made its job, and a quote
// used again after it is the client's doing.
func TestAStrikeWithoutAnActionLeavesTheAnswer(t *testing.T) {
	c := newClient()
	c.quote("q1", 10*time.Minute)
	e := gen("k1", "q1", 202, "", "j1", "queued")
	e.Fault = "fault_1" // an advance: no FaultKind
	c.add(e)
	c.poll("j1", "running")
	c.generate("k2", "q1", 409, "quote_already_used", "", "")
	if got := rulesOf(c.judge()); !slices.Equal(got, []string{QuoteReused}) {
		t.Fatalf("findings %v, want %s", got, QuoteReused)
	}
}

// Rules about what the client did after a struck answer still judge it: a new key on the
// retry of a generation a perturbation answered 503, a return before the Retry-After of a
// struck 429.
func TestReactionsToAStruckAnswerStillJudge(t *testing.T) {
	struck := func(e api.JournalEntry) api.JournalEntry {
		e.Fault, e.FaultKind = "fault_1", "error"
		return e
	}
	t.Run(NewKeyOnRetry, func(t *testing.T) {
		c := newClient()
		c.quote("q1", 10*time.Minute)
		c.add(struck(gen("k1", "q1", 503, "service_unavailable", "", "")))
		c.generate("k2", "q1", 202, "", "j1", "queued")
		if got := rulesOf(c.judge()); !slices.Equal(got, []string{NewKeyOnRetry}) {
			t.Fatalf("findings %v, want %s", got, NewKeyOnRetry)
		}
	})
	t.Run(RetryAfterIgnored, func(t *testing.T) {
		c := newClient()
		e := struck(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 429, Code: "rate_limited", RetryAfter: 5})
		c.add(e)
		c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200})
		if got := rulesOf(c.judge()); !slices.Equal(got, []string{RetryAfterIgnored}) {
			t.Fatalf("findings %v, want %s", got, RetryAfterIgnored)
		}
	})
}
