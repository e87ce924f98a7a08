package evidence

import (
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
}

func init() { cases = append(cases, truthCases...) }
