package evidence

import (
	"slices"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// realStart is a real time for logs whose requests carry their real times.
var realStart = time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC)

// withReal starts a client's real clock, on a still clock (manual or skip) when still says so.
func withReal(c *client, still bool) {
	c.wall, c.conn, c.still = realStart, "127.0.0.1:50001", still
}

func models(status int, after int) api.JournalEntry {
	e := api.JournalEntry{Method: "GET", Path: "/v1/models", Status: status, RetryAfter: after}
	switch status {
	case 429:
		e.Code = "rate_limited"
	case 503:
		e.Code = "service_unavailable"
	}
	return e
}

// The shapes outside testers found the report untrue about, each careless one beside the
// careful one.
var truthCases = []ruleCase{
	// A client that sleeps Retry-After in real time while the clock stands still or skips has
	// waited; one that does not sleep has not, whichever clock it runs on.
	{rule: RetryAfterIgnored, reason: "later in real time",
		fires: func(c *client) {
			withReal(c, true)
			c.add(models(429, 2))
			c.realSleep(100 * time.Millisecond)
			c.add(models(200, 0))
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			withReal(c, true)
			c.add(models(429, 2))
			c.realSleep(2 * time.Second)
			c.add(models(200, 0))
		}},
	{rule: RetryAfterIgnored, // on the real clock, real time and the tenant's agree
		fires: func(c *client) {
			withReal(c, false)
			c.add(models(503, 1))
			c.sleep(300 * time.Millisecond)
			c.add(models(200, 0))
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			withReal(c, false)
			c.add(models(503, 1))
			c.sleep(time.Second)
			c.add(models(200, 0))
		}},
	// A parallel worker on another connection that arrived within the grace of the answer
	// could not have seen it; the same client on the same connection had read it.
	{rule: RetryAfterIgnored,
		fires: func(c *client) {
			withReal(c, false)
			c.add(models(503, 2))
			c.sleep(time.Millisecond)
			c.add(models(200, 0)) // the same connection: it came after reading the 503
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			withReal(c, false)
			c.add(models(503, 2))
			for i, conn := range []string{"127.0.0.1:50002", "127.0.0.1:50003"} {
				c.sleep([]time.Duration{300 * time.Microsecond, 2700 * time.Microsecond}[i]) // 0.3 ms, then 3 ms after the answer
				c.conn = conn
				c.add(models(503, 2)) // refused in turn: the burst's grace does not move on
			}
			c.conn = "127.0.0.1:50004"
			c.add(models(200, 0))
			c.conn = "127.0.0.1:50001"
			c.sleep(2 * time.Second)
			c.add(models(200, 0)) // and the first worker waited
		}},
	{rule: RetryAfterIgnored, reason: "after a 503", // a burst of fresh connections runs past the grace
		fires: func(c *client) {
			withReal(c, false)
			c.add(models(503, 2))
			for i, conn := range []string{"127.0.0.1:50002", "127.0.0.1:50003", "127.0.0.1:50004"} {
				c.sleep(30 * time.Millisecond)
				c.conn = conn
				if i < 2 {
					c.add(models(503, 2))
				} else {
					c.add(models(200, 0))
				}
			}
		},
		seqs: []uint64{2, 3}, // the second was 30 ms in; the third, 60 ms in, ignored the second's
		quiet: func(c *client) {
			withReal(c, false)
			c.add(models(503, 2))
			c.sleep(2 * time.Second)
			c.conn = "127.0.0.1:50002"
			c.add(models(200, 0))
		}},
	// A HEAD of the path a GET was refused on asks the same of the same endpoint.
	{rule: RetryAfterIgnored,
		fires: func(c *client) {
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/jobs/j1", Status: 429, Code: "rate_limited", RetryAfter: 2})
			c.add(api.JournalEntry{Method: "HEAD", Path: "/v1/jobs/j1", Status: 200, JobID: "j1", JobStatus: "running"})
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/jobs/j1", Status: 429, Code: "rate_limited", RetryAfter: 2})
			c.sleep(2 * time.Second)
			c.add(api.JournalEntry{Method: "HEAD", Path: "/v1/jobs/j1", Status: 200, JobID: "j1", JobStatus: "running"})
		}},
	// A 402 sent again through a fresh quote of the same input: the credits did not change.
	{rule: RetryUnchanged, reason: "insufficient_credits and sent again unchanged 2 time(s)",
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 402, "insufficient_credits", "", "")
			c.quote("q2", 10*time.Minute)
			c.generate("k2", "q2", 402, "insufficient_credits", "", "")
			c.quote("q3", 10*time.Minute)
			c.generate("k2", "q3", 402, "insufficient_credits", "", "")
		},
		seqs: []uint64{2, 4, 6},
		quiet: func(c *client) { // a refund it saw, then a top-up, each a change
			c.quote("q0", 10*time.Minute)
			first := gen("k0", "q0", 202, "", "j0", "queued") // another input, which holds the credits
			first.InputDigest = Digest([]byte(`{"prompt":"a dog"}`))
			c.add(first)
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 200, Model: "m", QuoteID: "q1", QuoteExpiresAt: c.now.Add(time.Hour)})
			c.generate("k1", "q1", 402, "insufficient_credits", "", "")
			c.sleep(time.Second)
			c.poll("j0", "failed") // its held credits came back
			c.quote("q2", 10*time.Minute)
			c.generate("k2", "q2", 402, "insufficient_credits", "", "")
			c.creditsSet("acct_all")
			c.quote("q3", 10*time.Minute)
			c.generate("k3", "q3", 202, "", "j1", "queued")
		}},
	// The same body with its members in another order is the same request.
	{rule: RetryUnchanged,
		fires: func(c *client) {
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 422, Code: "invalid_input", RequestBody: []byte(`{"model":"m","input":{"prompt":"","num_images":1.0}}`)})
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 422, Code: "invalid_input", RequestBody: []byte(`{"input":{"num_images":1,"prompt":""},"model":"m"}`)})
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 422, Code: "invalid_input", RequestBody: []byte(`{"model":"m","input":{"prompt":""}}`)})
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 200, QuoteID: "q1", RequestBody: []byte(`{"input":{"prompt":"a cat"},"model":"m"}`)})
		}},
	// A request the emulator cannot read, sent again as it was.
	{rule: RetryUnchanged, reason: "invalid_request",
		fires: func(c *client) {
			for range 2 {
				c.add(api.JournalEntry{Method: "POST", Path: "/v1/generate", Status: 422, Code: "invalid_request", IdempotencyKey: "k1", RequestBody: []byte(`{"model":"m"}`)})
			}
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/generate", Status: 422, Code: "invalid_request", IdempotencyKey: "k1", RequestBody: []byte(`{"model":"m"}`)})
			c.quote("q1", 10*time.Minute)
			c.generate("k2", "q1", 202, "", "j1", "queued")
		}},
	// A key used before with another body, sent again with it (whatever quote it carries now).
	{rule: RetryUnchanged, reason: "idempotency_key_reused",
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			c.poll("j1", "running")
			c.quote("q2", 10*time.Minute)
			other := gen("k1", "q2", 422, "idempotency_key_reused", "", "")
			other.InputDigest, other.RequestBody = Digest([]byte(`{"prompt":"a dog"}`)), []byte(`{"model":"m","input":{"prompt":"a dog"},"quote_id":"q2"}`)
			c.add(other)
			c.quote("q3", 10*time.Minute)
			again := other
			again.QuoteID, again.RequestBody = "q3", []byte(`{"model":"m","input":{"prompt":"a dog"},"quote_id":"q3"}`)
			c.add(again)
		},
		seqs: []uint64{5, 7},
		quiet: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			c.poll("j1", "running")
			c.quote("q2", 10*time.Minute)
			other := gen("k1", "q2", 422, "idempotency_key_reused", "", "")
			other.InputDigest, other.RequestBody = Digest([]byte(`{"prompt":"a dog"}`)), []byte(`{"model":"m","input":{"prompt":"a dog"},"quote_id":"q2"}`)
			c.add(other)
			fixed := other
			fixed.IdempotencyKey, fixed.Status, fixed.Code, fixed.JobID, fixed.JobStatus = "k2", 202, "", "j2", "queued"
			c.add(fixed) // a key of its own for the new input
			c.poll("j2", "running")
		}},
	// One quote used for another input.
	{rule: QuoteMismatch,
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			c.poll("j1", "running")
			other := gen("k2", "q1", 422, "quote_mismatch", "", "")
			other.InputDigest, other.RequestBody = Digest([]byte(`{"prompt":"a dog"}`)), []byte(`{"model":"m","input":{"prompt":"a dog"},"quote_id":"q1"}`)
			c.add(other)
		},
		seqs: []uint64{1, 4},
		quiet: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			c.poll("j1", "running")
			c.quote("q2", 10*time.Minute)
			other := gen("k2", "q2", 202, "", "j2", "queued")
			other.InputDigest = Digest([]byte(`{"prompt":"a dog"}`))
			c.add(other)
			c.poll("j2", "running")
		}},
	// Polling through the job list.
	{rule: PollTooFast, reason: "the job list (GET /v1/jobs?status=running) was read 3 times",
		fires: func(c *client) {
			for range 4 {
				c.add(api.JournalEntry{Method: "GET", Path: "/v1/jobs", Query: "status=running", Status: 200})
				c.sleep(200 * time.Millisecond)
			}
		},
		seqs: []uint64{2, 3, 4},
		quiet: func(c *client) {
			for range 4 {
				c.add(api.JournalEntry{Method: "GET", Path: "/v1/jobs", Query: "status=running", Status: 200})
				c.add(api.JournalEntry{Method: "GET", Path: "/v1/jobs", Query: "status=succeeded", Status: 200}) // another question
				c.sleep(time.Second)
			}
		}},
	// Polling by replaying the generation: its answer shows the job as it stands.
	{rule: PollTooFast, reason: "asked for again (a replay of its generation)",
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			for range 4 {
				c.sleep(100 * time.Millisecond)
				c.generate("k1", "q1", 202, "", "j1", "running")
			}
		},
		seqs: []uint64{4, 5, 6},
		quiet: func(c *client) { // replays a second apart, and waits that answer at once
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			for range 3 {
				c.sleep(time.Second)
				c.generate("k1", "q1", 202, "", "j1", "running")
			}
			for range 4 {
				e := gen("k1", "q1", 202, "", "j1", "running")
				e.Query = "wait=true"
				c.add(e)
			}
		}},
}

func init() { cases = append(cases, truthCases...) }

// A finding about error answers the test declared it expects, all of them, is what the test set
// out to provoke, and is not reported; one about what the client did after such an answer is.
func TestExpectedErrorsScopeTheRulesTheyExplain(t *testing.T) {
	expiredQuote := func(c *client) {
		c.quote("q1", time.Minute)
		c.sleep(2 * time.Minute)
		c.generate("k1", "q1", 422, "quote_expired", "", "")
	}
	twiceRefused := func(c *client) {
		for range 2 {
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 422, Code: "invalid_input", RequestBody: []byte(`{"model":"m","input":{}}`)})
		}
	}
	for _, tc := range []struct {
		name     string
		log      func(c *client)
		expected []string
		want     []string
	}{
		{"undeclared", expiredQuote, nil, []string{ExpiredQuote}},
		{"declared", expiredQuote, []string{`{"status":422,"code":"quote_expired"}`}, nil},
		{"declared by path and body", expiredQuote, []string{`{"path":"/v1/generate","pointers":{"/quote_id":"q1"}}`}, nil},
		{"another error declared", expiredQuote, []string{`{"status":404}`}, []string{ExpiredQuote}},
		{"one of two answers declared", func(c *client) {
			expiredQuote(c)
			c.quote("q2", time.Minute)
			c.sleep(2 * time.Minute)
			c.generate("k2", "q2", 422, "quote_expired", "", "")
		}, []string{`{"code":"quote_expired","headers":{"Idempotency-Key":"k1"}}`}, []string{ExpiredQuote}},
		// A refusal provoked on purpose is not a request to send it again.
		{"a retry of a declared refusal", twiceRefused, []string{`{"code":"invalid_input"}`}, []string{RetryUnchanged}},
		{"quote-reused declared", func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			c.poll("j1", "running")
			c.generate("k2", "q1", 409, "quote_already_used", "", "")
		}, []string{`{"status":409}`}, nil},
		// The 503 was expected; retrying it with a new key is the client's own doing.
		{"a behaviour after an expected error", func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 503, "service_unavailable", "", "")
			c.generate("k2", "q1", 202, "", "j1", "queued")
		}, []string{`{"status":503}`}, []string{NewKeyOnRetry}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient()
			tc.log(c)
			in := c.input()
			for i, e := range c.log {
				if e.Request != nil && e.Request.IdempotencyKey != "" {
					c.log[i].header = map[string][]string{"Idempotency-Key": {e.Request.IdempotencyKey}}
				}
			}
			for _, src := range tc.expected {
				in.Expected = append(in.Expected, pattern(t, src))
			}
			if got := rulesOf(Judge(in)); !slices.Equal(got, tc.want) {
				t.Errorf("findings %v, want %v", got, tc.want)
			}
		})
	}
}
