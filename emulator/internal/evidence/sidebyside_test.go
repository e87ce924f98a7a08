package evidence

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// side is a client of the side-by-side test on one clock mode: real (the tenant's clock moves
// with real time), manual (it moves when the test's sleep advances it) or skip (it stands still
// while the client sleeps; each request carries its real arrival in Wall).
type side struct {
	*client
	mode string
}

// wait is the client sleeping d: real time passes, and the tenant's clock with it unless it
// skips.
func (s side) wait(d time.Duration) {
	s.realSleep(d)
	if s.mode != "skip" {
		s.now = s.now.Add(d)
	}
}

// judge judges the log on the side's clock.
func (s side) judge(expected ...*Pattern) []api.Finding {
	for _, ev := range s.log {
		if ev.Request != nil && s.mode == "skip" && ev.Real != nil {
			ev.Request.Wall = ev.Real.Arrived
		}
	}
	in := s.input()
	in.Still, in.Skips, in.Expected = s.mode != "real", s.mode == "skip", expected
	return Judge(in)
}

// behaviour is one thing a client does, carefully and carelessly.
type behaviour struct {
	name              string
	careful, careless func(s side)
	rule              string   // what the careless one is named by
	expected          []string // error answers the careful test declares it expects
}

var behaviours = []behaviour{
	{name: "a variation after a wait=true", rule: NewKeyOnRetry,
		careful: func(s side) { // two images of one prompt on purpose, each waited for
			s.quote("q1", 10*time.Minute)
			s.generate("k1", "q1", 200, "", "j1", "succeeded")
			s.download("j1", 200)
			s.quote("q2", 10*time.Minute)
			s.generate("k2", "q2", 200, "", "j2", "succeeded")
			s.download("j2", 200)
		},
		careless: func(s side) { // a 503, then a new quote and a new key
			s.quote("q1", 10*time.Minute)
			s.generate("k1", "q1", 503, "service_unavailable", "", "")
			s.wait(time.Second)
			s.quote("q2", 10*time.Minute)
			s.generate("k2", "q2", 200, "", "j2", "succeeded")
			s.download("j2", 200)
		}},
	{name: "a fresh attempt after a wait=true answered failed", rule: NewKeyOnRetry,
		careful: func(s side) {
			s.quote("q1", 10*time.Minute)
			s.generate("k1", "q1", 200, "", "j1", "failed")
			s.quote("q2", 10*time.Minute)
			s.generate("k2", "q2", 200, "", "j2", "succeeded")
			s.download("j2", 200)
		},
		careless: func(s side) { // gave up on its wait, then tried again under a new key
			s.quote("q1", 10*time.Minute)
			e := gen("k1", "q1", 202, "", "j1", "running")
			e.Query, e.ClientLeft = "wait=true", true
			s.add(e)
			s.quote("q2", 10*time.Minute)
			s.generate("k2", "q2", 200, "", "j2", "succeeded")
			s.download("j2", 200)
		}},
	{name: "a one-second poller", rule: PollTooFast,
		careful: func(s side) {
			for _, gap := range []time.Duration{991, 998, 994, 996} {
				s.poll("j1", "running")
				s.wait(gap * time.Millisecond)
			}
		},
		careless: func(s side) {
			for range 4 {
				s.poll("j1", "running")
				s.wait(200 * time.Millisecond)
			}
		}},
	{name: "Retry-After of a 429", rule: RetryAfterIgnored,
		careful: func(s side) {
			s.add(models(429, 2))
			s.wait(2 * time.Second)
			s.add(models(200, 0))
		},
		careless: func(s side) {
			s.add(models(429, 2))
			s.wait(100 * time.Millisecond)
			s.add(models(200, 0))
		}},
	{name: "parallel workers and a 503", rule: RetryAfterIgnored,
		careful: func(s side) { // another worker's request on its own connection, as the 503 went out
			s.add(models(503, 2))
			s.wait(time.Millisecond)
			s.conn = "127.0.0.1:50002"
			s.add(models(200, 0))
		},
		careless: func(s side) { // the same connection: it had read the 503
			s.add(models(503, 2))
			s.wait(time.Millisecond)
			s.add(models(200, 0))
		}},
	{name: "the same generation again on a fresh connection after a 429", rule: RetryAfterIgnored,
		careful: func(s side) { // another worker's own generation, as the 429 went out
			s.add(api.JournalEntry{Method: "POST", Path: "/v1/generate", Status: 429, Code: "concurrency_limited", RetryAfter: 2,
				RequestBody: []byte(`{"model":"m","quote_id":"q1","input":{"prompt":"a"}}`)})
			s.wait(time.Millisecond)
			s.conn = "127.0.0.1:50002"
			s.add(api.JournalEntry{Method: "POST", Path: "/v1/generate", Status: 202, JobID: "j2", JobStatus: "queued",
				RequestBody: []byte(`{"model":"m","quote_id":"q2","input":{"prompt":"b"}}`)})
		},
		careless: func(s side) { // a client that opens a connection for each request retries on a new one
			s.add(api.JournalEntry{Method: "POST", Path: "/v1/generate", Status: 429, Code: "concurrency_limited", RetryAfter: 2,
				RequestBody: []byte(`{"model":"m","quote_id":"q1","input":{"prompt":"a"}}`)})
			s.wait(time.Millisecond)
			s.conn = "127.0.0.1:50002"
			s.add(api.JournalEntry{Method: "POST", Path: "/v1/generate", Status: 202, JobID: "j1", JobStatus: "queued",
				RequestBody: []byte(`{"input":{"prompt":"a"},"model":"m","quote_id":"q1"}`)})
		}},
	{name: "a HEAD after a 429 on GET", rule: RetryAfterIgnored,
		careful: func(s side) {
			s.add(api.JournalEntry{Method: "GET", Path: "/v1/jobs/j1", Status: 429, Code: "rate_limited", RetryAfter: 1})
			s.wait(time.Second)
			s.add(api.JournalEntry{Method: "HEAD", Path: "/v1/jobs/j1", Status: 200, JobID: "j1", JobStatus: "running"})
		},
		careless: func(s side) {
			s.add(api.JournalEntry{Method: "GET", Path: "/v1/jobs/j1", Status: 429, Code: "rate_limited", RetryAfter: 1})
			s.add(api.JournalEntry{Method: "HEAD", Path: "/v1/jobs/j1", Status: 200, JobID: "j1", JobStatus: "running"})
		}},
	{name: "a 402", rule: RetryUnchanged,
		careful: func(s side) { // stops, tops up, then generates
			s.quote("q1", 10*time.Minute)
			s.generate("k1", "q1", 402, "insufficient_credits", "", "")
			s.creditsSet("acct_all")
			s.quote("q2", 10*time.Minute)
			s.generate("k1", "q2", 200, "", "j1", "succeeded")
			s.download("j1", 200)
		},
		careless: func(s side) { // quotes again and again, as if a new price could change the balance
			for _, q := range []string{"q1", "q2", "q3"} {
				s.quote(q, 10*time.Minute)
				s.generate("k-"+q, q, 402, "insufficient_credits", "", "")
				s.wait(time.Second)
			}
		}},
	{name: "an invalid input", rule: RetryUnchanged,
		careful: func(s side) {
			s.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 422, Code: "invalid_input", RequestBody: []byte(`{"model":"m","input":{"prompt":"","num_images":9}}`)})
			s.quote("q1", 10*time.Minute) // the input fixed
		},
		careless: func(s side) { // the same body, its members reordered
			s.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 422, Code: "invalid_input", RequestBody: []byte(`{"model":"m","input":{"prompt":"","num_images":9}}`)})
			s.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 422, Code: "invalid_input", RequestBody: []byte(`{"input":{"num_images":9,"prompt":""},"model":"m"}`)})
		}},
	{name: "an invalid request", rule: RetryUnchanged,
		careful: func(s side) {
			s.add(api.JournalEntry{Method: "POST", Path: "/v1/generate", Status: 422, Code: "invalid_request", IdempotencyKey: "k1", RequestBody: []byte(`{"model":"m"}`)})
			s.quote("q1", 10*time.Minute)
			s.generate("k1", "q1", 200, "", "j1", "succeeded")
			s.download("j1", 200)
		},
		careless: func(s side) {
			for range 2 {
				s.add(api.JournalEntry{Method: "POST", Path: "/v1/generate", Status: 422, Code: "invalid_request", IdempotencyKey: "k1", RequestBody: []byte(`{"model":"m"}`)})
			}
		}},
	{name: "one quote, two inputs", rule: QuoteMismatch,
		careful: func(s side) {
			for i, prompt := range []string{"a cat", "a dog"} {
				q, k, j := fmt.Sprint("q", i), fmt.Sprint("k", i), fmt.Sprint("j", i)
				s.quote(q, 10*time.Minute)
				e := gen(k, q, 200, "", j, "succeeded")
				e.InputDigest = Digest([]byte(`{"prompt":"` + prompt + `"}`))
				s.add(e)
				s.download(j, 200)
			}
		},
		careless: func(s side) {
			s.quote("q1", 10*time.Minute)
			s.generate("k1", "q1", 200, "", "j1", "succeeded")
			s.download("j1", 200)
			e := gen("k2", "q1", 422, "quote_mismatch", "", "")
			e.InputDigest = Digest([]byte(`{"prompt":"a dog"}`))
			s.add(e)
		}},
	{name: "polling the job list", rule: PollTooFast,
		careful: func(s side) {
			for range 4 {
				s.add(api.JournalEntry{Method: "GET", Path: "/v1/jobs", Query: "status=running", Status: 200})
				s.wait(time.Second)
			}
		},
		careless: func(s side) {
			for range 4 {
				s.add(api.JournalEntry{Method: "GET", Path: "/v1/jobs", Query: "status=running", Status: 200})
				s.wait(100 * time.Millisecond)
			}
		}},
	{name: "polling by replaying the generation", rule: PollTooFast,
		careful: func(s side) { // a 503, then the same key once the Retry-After passed
			s.quote("q1", 10*time.Minute)
			s.generate("k1", "q1", 202, "", "j1", "queued")
			s.wait(time.Second)
			s.generate("k1", "q1", 202, "", "j1", "running")
			s.wait(time.Second)
			s.poll("j1", "running")
		},
		careless: func(s side) {
			s.quote("q1", 10*time.Minute)
			s.generate("k1", "q1", 202, "", "j1", "queued")
			for range 4 {
				s.wait(100 * time.Millisecond)
				s.generate("k1", "q1", 202, "", "j1", "running")
			}
		}},
	{name: "an expired quote provoked on purpose", rule: ExpiredQuote, expected: []string{`{"status":422,"code":"quote_expired"}`},
		careful: func(s side) { // the test declares it
			s.quote("q1", time.Minute)
			s.now = s.now.Add(2 * time.Minute) // the test moves the clock
			s.generate("k1", "q1", 422, "quote_expired", "", "")
		},
		careless: func(s side) { // a client that sits on its quote, in a test that expects nothing of the kind
			s.quote("q1", time.Minute)
			s.now = s.now.Add(2 * time.Minute)
			s.generate("k1", "q1", 422, "quote_expired", "", "")
			s.generate("k2", "q1", 422, "quote_expired", "", "")
		}},
}

// TestCarefulAndCarelessSideBySide: on each clock, the report is silent on every careful client
// and names every careless one by its rule.
func TestCarefulAndCarelessSideBySide(t *testing.T) {
	for _, mode := range []string{"real", "manual", "skip"} {
		for _, b := range behaviours {
			t.Run(mode+"/"+b.name, func(t *testing.T) {
				var expected []*Pattern
				for _, src := range b.expected {
					expected = append(expected, pattern(t, src))
				}
				careful := side{newClient(), mode}
				withReal(careful.client, mode != "real")
				b.careful(careful)
				if got := careful.judge(expected...); len(got) != 0 {
					t.Errorf("careful: findings %+v, want none", got)
				}
				careless := side{newClient(), mode}
				withReal(careless.client, mode != "real")
				b.careless(careless)
				got := rulesOf(careless.judge())
				if !slices.Contains(got, b.rule) {
					t.Errorf("careless: findings %v, want %s", got, b.rule)
				}
			})
		}
	}
}
