package evidence

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// client writes a log by hand, on its own clock, with the facts the emulator records.
type client struct {
	now     time.Time
	log     []Event
	seq     uint64
	arrival uint64
	expire  map[string]time.Time // job -> when its outputs expire, for a job that succeeded
	still   bool                 // the tenant's clock is manual
	// wall, once set, is real time, which sleep moves with the tenant's clock and realSleep
	// alone; each request then carries its real times, and conn the connection it came on.
	wall time.Time
	conn string
}

func newClient() *client { return &client{now: start, expire: map[string]time.Time{}} }

func (c *client) sleep(d time.Duration) {
	c.now = c.now.Add(d)
	if !c.wall.IsZero() {
		c.wall = c.wall.Add(d)
	}
}

// realSleep lets real time pass while the tenant's clock stands still (manual or skip).
func (c *client) realSleep(d time.Duration) { c.wall = c.wall.Add(d) }

// add records a request that arrives now and is answered at once.
func (c *client) add(e api.JournalEntry) uint64 {
	c.seq++
	e.Seq = c.seq
	e.Time, e.ReceivedAt = c.now, c.now
	if e.Account == "" && e.Status != 403 {
		e.Account = "acct_all"
	}
	c.arrival++
	ev := Event{Request: &e, Arrival: c.arrival, Answered: c.arrival}
	if !c.wall.IsZero() {
		ev.Real = &RealTimes{Arrived: c.wall, Answered: c.wall}
		e.Conn = c.conn
	}
	c.log = append(c.log, ev)
	return e.Seq
}

func (c *client) quote(id string, ttl time.Duration) uint64 {
	return c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 200, Model: "m", QuoteID: id, QuoteExpiresAt: c.now.Add(ttl),
		RequestBody: []byte(`{"model":"m","input":{"prompt":"a cat"}}`)})
}

// gen is a generation of the one input the client sends; status 0 stands for a dropped
// connection.
func gen(key, quote string, status int, code, job, jobStatus string) api.JournalEntry {
	return api.JournalEntry{Method: "POST", Path: "/v1/generate", Status: status, Code: code, IdempotencyKey: key,
		Model: "m", QuoteID: quote, InputDigest: Digest([]byte(`{"prompt":"a cat"}`)), JobID: job, JobStatus: jobStatus,
		RequestBody: []byte(fmt.Sprintf(`{"model":"m","input":{"prompt":"a cat"},"quote_id":%q}`, quote))}
}

func (c *client) generate(key, quote string, status int, code, job, jobStatus string) uint64 {
	return c.add(gen(key, quote, status, code, job, jobStatus))
}

func (c *client) poll(job, status string) uint64 {
	return c.add(api.JournalEntry{Method: "GET", Path: "/v1/jobs/" + job, Status: 200, JobID: job, JobStatus: status})
}

// fetch records a download of a job's output: the answer's status, and which of the file's 100
// bytes reached the client.
func (c *client) fetch(job string, status int, start, sent int64) {
	c.arrival++
	n := Note{Kind: Download, Time: c.now, Job: job, File: "/files/" + job + "/0.png", Status: status, Start: start, Sent: sent, Size: 100, Ranged: status == 206}
	c.log = append(c.log, Event{Note: &n, Arrival: c.arrival, Answered: c.arrival})
}

// link fetches a job's output at a signed link that expires at exp: answered 403 when the
// clock is past it, else whole; key says the request carried an Authorization header.
func (c *client) link(job string, exp time.Time, key bool) {
	c.arrival++
	n := Note{Kind: Download, Time: c.now, Job: job, File: "/files/" + job + "/0.png", Status: 200, Sent: 100, Size: 100,
		LinkExpires: exp, Authorized: key}
	if !c.now.Before(exp) {
		n.Status, n.Sent, n.Size, n.LinkExpired = 403, 0, 0, true
	}
	c.log = append(c.log, Event{Note: &n, Arrival: c.arrival, Answered: c.arrival})
}

// download fetches a job's output whole.
func (c *client) download(job string, status int) { c.fetch(job, status, 0, 100) }

// hook records an attempt of a webhook delivery of job j1 (kind delivery, audit_signature, ...)
// answered status after latency, made while the receiver audit was on, and returns its seq.
func (c *client) hook(kind string, status int, latency time.Duration) uint64 {
	c.seq++
	c.arrival++
	a := api.WebhookAttempt{Seq: c.seq, ID: fmt.Sprintf("msg_%d", c.seq), Job: "j1", Kind: kind, Status: status, LatencyMS: float64(latency) / 1e6}
	c.log = append(c.log, Event{Note: &Note{Kind: WebhookAttempt, Time: c.now, Job: "j1", Status: status, Webhook: &a, Audited: true}, Arrival: c.arrival, Answered: c.arrival})
	return a.Seq
}

func (c *client) creditsSet(account string) {
	c.arrival++
	c.log = append(c.log, Event{Note: &Note{Kind: CreditsSet, Time: c.now, Account: account}, Arrival: c.arrival, Answered: c.arrival})
}

func (c *client) input() Input {
	slices.SortStableFunc(c.log, func(a, b Event) int { return cmp.Compare(a.Arrival, b.Arrival) })
	return Input{Log: c.log, Now: c.now, Still: c.still, Job: func(id string) (JobNow, bool) {
		t, ok := c.expire[id]
		return JobNow{Status: "succeeded", OutputsExpireAt: t}, ok
	}, DeprecatedAt: func(model string) (time.Time, bool) { return start.Add(time.Hour), model == "old" }}
}

// entry is the request a seq names, to set what the helpers above leave out.
func (c *client) entry(seq uint64) *api.JournalEntry {
	for _, ev := range c.log {
		if ev.Request != nil && ev.Request.Seq == seq {
			return ev.Request
		}
	}
	panic("no entry")
}

func (c *client) judge() []api.Finding { return Judge(c.input()) }

func rulesOf(fs []api.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

// Each rule: a client that breaks it, and one that does the right thing instead.
type ruleCase struct {
	rule         string
	fires, quiet func(c *client)
	seqs         []uint64 // the entries the finding must list
	reason       string   // what the finding's reason must say, if anything in particular
}

var cases = []ruleCase{
	{rule: NewKeyOnRetry,
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 503, "service_unavailable", "", "")
			c.generate("k2", "q1", 202, "", "j1", "queued")
		},
		seqs: []uint64{2, 3},
		quiet: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 503, "service_unavailable", "", "")
			c.generate("k1", "q1", 202, "", "j1", "queued")
		}},
	{rule: NewKeyOnRetry, // a dropped connection, then a new key: the emulator refuses the quote
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 0, "", "", "")
			c.generate("k2", "q1", 409, "quote_already_used", "", "")
		},
		seqs: []uint64{2, 3},
		quiet: func(c *client) { // a definite refusal may be retried with any key
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 402, "insufficient_credits", "", "")
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200})
			c.generate("k2", "q1", 202, "", "j1", "queued")
		}},
	{rule: NewKeyOnRetry, // an answer the client never used: it hung up
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			c.generate("k2", "q1", 409, "quote_already_used", "", "")
		},
		seqs: []uint64{2, 3},
		quiet: func(c *client) { // polling shows it had the answer: that is quote-reused instead
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			c.sleep(2 * time.Second)
			c.poll("j1", "running")
		}},
	{rule: RetryAfterIgnored,
		fires: func(c *client) {
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 429, Code: "rate_limited", RetryAfter: 2})
			c.sleep(time.Second)
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200})
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 429, Code: "rate_limited", RetryAfter: 2})
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models/categories", Status: 200}) // another endpoint
			c.sleep(2 * time.Second)
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200})
		}},
	{rule: PollTooFast,
		fires: func(c *client) {
			for range 4 {
				c.poll("j1", "running")
				c.sleep(200 * time.Millisecond)
			}
		},
		seqs: []uint64{2, 3, 4},
		quiet: func(c *client) {
			c.poll("j1", "running")
			c.sleep(100 * time.Millisecond)
			c.poll("j1", "running") // one quick look is not a habit
			for range 5 {
				c.sleep(PollFloor)
				c.poll("j1", "running")
			}
		}},
	{rule: PollAfterTerminal,
		fires: func(c *client) {
			c.poll("j1", "failed")
			c.sleep(time.Second)
			c.poll("j1", "failed")
			c.sleep(time.Second)
			c.poll("j1", "failed")
		},
		seqs: []uint64{1, 2, 3},
		quiet: func(c *client) {
			c.poll("j1", "running")
			c.sleep(time.Second)
			c.poll("j1", "failed")
			c.poll("j2", "running") // another job
		}},
	{rule: RetryUnchanged,
		fires: func(c *client) {
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 422, Code: "invalid_input", RequestBody: []byte(`{"model":"m","input":{"prompt":""}}`)})
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 422, Code: "invalid_input", RequestBody: []byte(`{"model":"m","input":{"prompt":""}}`)})
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 402, "insufficient_credits", "", "")
			c.creditsSet("acct_all")
			c.generate("k1", "q1", 402, "insufficient_credits", "", "") // topped up, not enough yet
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 422, Code: "invalid_input", RequestBody: []byte(`{"model":"m","input":{"prompt":""}}`)})
			c.quote("q3", 10*time.Minute) // the input fixed: a changed request
			c.generate("k3", "q3", 202, "", "j1", "queued")
		}},
	{rule: ExpiredQuote,
		fires: func(c *client) {
			c.quote("q1", time.Minute)
			c.sleep(2 * time.Minute)
			c.generate("k1", "q1", 422, "quote_expired", "", "")
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			c.quote("q1", time.Minute)
			c.sleep(2 * time.Minute)
			c.quote("q2", time.Minute)
			c.generate("k1", "q2", 202, "", "j1", "queued")
		}},
	{rule: QuoteReused,
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			c.poll("j1", "running")
			c.generate("k2", "q1", 409, "quote_already_used", "", "")
		},
		seqs: []uint64{2, 4},
		quiet: func(c *client) { // an idempotent replay returns the same job
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			c.poll("j1", "running")
			c.generate("k1", "q1", 202, "", "j1", "running")
		}},
	{rule: DownloadAfterExpiry,
		fires: func(c *client) {
			c.poll("j1", "succeeded")
			c.expire["j1"] = c.now.Add(time.Hour)
			c.sleep(2 * time.Hour)
			c.download("j1", 410)
		},
		seqs: []uint64{1},
		quiet: func(c *client) {
			c.poll("j1", "succeeded")
			c.expire["j1"] = c.now.Add(time.Hour)
			c.download("j1", 200)
			c.sleep(2 * time.Hour)
		}},
	{rule: OutputsNeverDownloaded,
		fires: func(c *client) {
			c.poll("j1", "succeeded")
			c.expire["j1"] = c.now.Add(time.Hour)
			c.sleep(time.Hour)
		},
		seqs: []uint64{1},
		quiet: func(c *client) {
			c.poll("j1", "succeeded")
			c.expire["j1"] = c.now.Add(time.Hour)
			c.poll("j2", "succeeded") // not downloaded yet, but not expired either
			c.expire["j2"] = c.now.Add(3 * time.Hour)
			c.sleep(time.Minute)
			c.download("j1", 206)
			c.sleep(time.Hour)
		}},
	{rule: DeprecatedModelUsed,
		fires: func(c *client) {
			c.use("old", 200) // before the deprecation
			c.sleep(time.Hour)
			c.use("old", 422) // announces it, even as an error
			c.use("old", 200)
			c.use("old", 200)
		},
		seqs: []uint64{2, 3, 4},
		quiet: func(c *client) {
			c.use("old", 200)
			c.use("old", 200) // used twice, but before the deprecation
			c.sleep(time.Hour)
			c.use("old", 200) // the answer that announces it
			c.use("new", 200) // the successor
			c.use("new", 200)
		}},
	{rule: DownloadWithAPIKey,
		fires: func(c *client) {
			c.poll("j1", "succeeded")
			c.link("j1", c.now.Add(15*time.Minute), true)
			c.link("j1", c.now.Add(15*time.Minute), true)
		},
		seqs:   []uint64{1},
		reason: "2 time(s)",
		quiet: func(c *client) {
			c.poll("j1", "succeeded")
			c.link("j1", c.now.Add(15*time.Minute), false)
			c.download("j1", 200)
			// A plain output URL fetched with the key: served without auth, so not judged.
			c.arrival++
			n := Note{Kind: Download, Time: c.now, Job: "j1", File: "/files/j1/0.png", Status: 200, Sent: 100, Size: 100, Authorized: true}
			c.log = append(c.log, Event{Note: &n, Arrival: c.arrival, Answered: c.arrival})
		}},
	{rule: StaleLinkRefetched,
		fires: func(c *client) {
			c.poll("j1", "succeeded")
			exp := c.now.Add(15 * time.Minute)
			c.link("j1", exp, false)
			c.sleep(20 * time.Minute)
			c.link("j1", exp, false) // 403: the link it stored has expired
			c.sleep(time.Second)
			c.link("j1", exp, false) // the same link again
			c.poll("j1", "succeeded")
			c.link("j1", exp, false) // read the job, yet kept the old link
		},
		seqs:   []uint64{1},
		reason: "2 more time(s)",
		quiet: func(c *client) {
			c.poll("j1", "succeeded")
			exp := c.now.Add(15 * time.Minute)
			c.link("j1", exp, false)
			c.sleep(20 * time.Minute)
			c.link("j1", exp, false) // 403: expired
			c.poll("j1", "succeeded")
			c.link("j1", c.now.Add(15*time.Minute), false) // the fresh link the read gave
		}},
	{rule: StaleLinkRefetched, // parallel downloads of one stored link, both in flight before the 403
		fires: func(c *client) {
			exp := c.now
			c.link("j1", exp, false)
			c.link("j1", exp, false)
		},
		seqs: nil,
		quiet: func(c *client) {
			exp := c.now
			c.arrival += 2
			for i := range 2 {
				n := Note{Kind: Download, Time: c.now, Job: "j1", File: "/files/j1/0.png", Status: 403, LinkExpires: exp, LinkExpired: true}
				c.log = append(c.log, Event{Note: &n, Arrival: c.arrival - 1 + uint64(i), Answered: c.arrival})
			}
		}},
	{rule: WebhookSignatureUnchecked,
		fires: func(c *client) {
			c.poll("j1", "succeeded")
			c.hook("delivery", 200, time.Millisecond)
			c.hook("audit_signature", 204, time.Millisecond)
		},
		seqs:   []uint64{3},
		reason: "answered 204 to delivery msg_3, whose webhook-signature is wrong",
		quiet: func(c *client) {
			c.hook("delivery", 200, time.Millisecond)
			c.hook("audit_signature", 401, time.Millisecond)
			c.hook("duplicate", 200, time.Millisecond)
		}},
	{rule: WebhookTimestampUnchecked,
		fires: func(c *client) {
			c.hook("audit_timestamp", 200, time.Millisecond)
		},
		seqs:   []uint64{1},
		reason: "whose webhook-timestamp is 10m0s old",
		quiet: func(c *client) {
			c.hook("audit_timestamp", 400, time.Millisecond)
		}},
	{rule: WebhookSlowAck,
		fires: func(c *client) {
			c.hook("delivery", 200, 2001*time.Millisecond)
			c.hook("delivery", 200, time.Millisecond)
			c.hook("delivery", 200, 3*time.Second)
		},
		seqs:   []uint64{1, 3},
		reason: "took 2.001s to answer delivery msg_1 (the limit is 2s) (and 1 more)",
		quiet: func(c *client) {
			c.hook("delivery", 200, 2*time.Second)
			c.hook("delivery", 500, 3*time.Second) // refused, not slow: the other rule's
			c.log[len(c.log)-1].Note.Audited = false
		}},
	{rule: WebhookValidRefused,
		fires: func(c *client) {
			c.hook("delivery", 0, time.Millisecond) // no status: the receiver is down, not refusing
			c.hook("delivery", 503, time.Millisecond)
		},
		seqs:   []uint64{2},
		reason: "answered 503 to delivery msg_2, which was valid",
		quiet: func(c *client) {
			c.hook("delivery", 0, time.Millisecond)
			c.hook("audit_signature", 401, time.Millisecond)
		}},
}

// The shapes an outside sweep found judged wrongly, each careless shape beside the careful one.
var sweptCases = []ruleCase{
	{rule: NewKeyOnRetry, reason: "may have made a job and been charged", // a new quote and a new key after a 503
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 503, "service_unavailable", "", "")
			c.quote("q2", 10*time.Minute)
			c.generate("k2", "q2", 202, "", "j2", "queued")
		},
		seqs: []uint64{2, 4},
		quiet: func(c *client) { // the same key and body: the service answers the first job
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 503, "service_unavailable", "", "")
			c.generate("k1", "q1", 202, "", "j1", "queued")
		}},
	{rule: NewKeyOnRetry, reason: "gave up on before the answer", // its own timeout against a delayed answer
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			e := gen("k1", "q1", 202, "", "j1", "queued")
			e.Fault, e.FaultKind, e.ClientLeft = "fault_1", "delay", true
			c.add(e)
			c.quote("q2", 10*time.Minute)
			c.generate("k2", "q2", 202, "", "j2", "queued")
		},
		seqs: []uint64{2, 4},
		quiet: func(c *client) { // a delayed answer it waited for and used
			c.quote("q1", 10*time.Minute)
			e := gen("k1", "q1", 202, "", "j1", "queued")
			e.Fault, e.FaultKind = "fault_1", "delay"
			c.add(e)
			c.sleep(time.Second)
			c.poll("j1", "running")
			c.quote("q2", 10*time.Minute) // a second image of the same prompt, on purpose
			c.generate("k2", "q2", 202, "", "j2", "queued")
			c.sleep(time.Second)
			c.poll("j2", "running")
		}},
	{rule: NewKeyOnRetry, reason: "injected malformed fault garbled", // a garbled answer is no answer
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			e := gen("k1", "q1", 200, "", "", "")
			e.Fault, e.FaultKind = "fault_1", "malformed"
			c.add(e)
			c.generate("k2", "q1", 202, "", "j1", "queued")
		},
		seqs: []uint64{2, 3},
		quiet: func(c *client) {
			c.quote("q1", 10*time.Minute)
			e := gen("k1", "q1", 200, "", "", "")
			e.Fault, e.FaultKind = "fault_1", "malformed"
			c.add(e)
			c.generate("k1", "q1", 202, "", "j1", "queued")
		}},
	{rule: NewKeyOnRetry, reason: "injected truncated fault garbled",
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			e := gen("k1", "q1", 200, "", "", "")
			e.Fault, e.FaultKind = "fault_1", "truncated"
			c.add(e)
			c.generate("k2", "q1", 202, "", "j1", "queued")
		},
		seqs: []uint64{2, 3},
		quiet: func(c *client) {
			c.quote("q1", 10*time.Minute)
			e := gen("k1", "q1", 200, "", "", "")
			e.Fault, e.FaultKind = "fault_1", "truncated"
			c.add(e)
			c.generate("k1", "q1", 202, "", "j1", "queued")
		}},
	{rule: NewKeyOnRetry, reason: `Idempotency-Key "k2" after an attempt answered 503 with key "k1"`, // the first attempt answered last
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			first := gen("k1", "q1", 503, "service_unavailable", "", "")
			first.Fault, first.FaultKind = "fault_1", "error"
			c.arrival++
			arrival := c.arrival // it arrives first, and is answered after the retry
			c.generate("k2", "q1", 202, "", "j1", "queued")
			c.seq++
			first.Seq, first.Time, first.ReceivedAt = c.seq, c.now, c.now
			first.Account = "acct_all"
			c.log = append(c.log, Event{Request: &first, Arrival: arrival, Answered: c.arrival})
		},
		seqs:  []uint64{3, 2},
		quiet: func(c *client) {}},
	{rule: QuoteReused, // a delayed first attempt, used; then its quote again
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			e := gen("k1", "q1", 202, "", "j1", "queued")
			e.Fault, e.FaultKind = "fault_1", "delay"
			c.add(e)
			c.poll("j1", "running")
			again := gen("k2", "q1", 409, "quote_already_used", "", "")
			again.Fault, again.FaultKind = "fault_1", "delay" // slow too, but answered as the emulator would
			c.add(again)
		},
		seqs: []uint64{2, 4},
		quiet: func(c *client) {
			c.quote("q1", 10*time.Minute)
			e := gen("k1", "q1", 202, "", "j1", "queued")
			e.Fault, e.FaultKind = "fault_1", "delay"
			c.add(e)
			c.poll("j1", "running")
		}},
	{rule: QuoteReused, // wait=true answered failed, then the same quote under a new key
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 200, "", "j1", "failed")
			c.generate("k2", "q1", 409, "quote_already_used", "", "")
		},
		seqs: []uint64{2, 3},
		quiet: func(c *client) { // a failed job: quote again
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 200, "", "j1", "failed")
			c.quote("q2", 10*time.Minute)
			c.generate("k2", "q2", 200, "", "j2", "succeeded")
			c.download("j2", 200)
		}},
	{rule: RetryAfterIgnored, // parallel workers: one in flight when another got the 503
		fires: func(c *client) {
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 503, Code: "service_unavailable", RetryAfter: 2})
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200}) // sent after the 503 came
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			c.arrival += 2 // two workers' requests arrive; the first is answered 503 after both came in
			c.seq++
			a := api.JournalEntry{Seq: c.seq, Time: c.now, ReceivedAt: c.now, Account: "acct_all", Method: "GET", Path: "/v1/models", Status: 503, Code: "service_unavailable", RetryAfter: 2}
			c.seq++
			b := api.JournalEntry{Seq: c.seq, Time: c.now, ReceivedAt: c.now, Account: "acct_all", Method: "GET", Path: "/v1/models", Status: 200}
			c.log = append(c.log, Event{Request: &a, Arrival: c.arrival - 1, Answered: c.arrival}, Event{Request: &b, Arrival: c.arrival, Answered: c.arrival})
		}},
	{rule: RetryAfterIgnored, // a 429 is the account's own
		fires: func(c *client) {
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 429, Code: "rate_limited", RetryAfter: 5, Account: "acct_a"})
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200, Account: "acct_a"})
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 429, Code: "rate_limited", RetryAfter: 5, Account: "acct_a"})
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200, Account: "acct_b"})
		}},
	{rule: RetryAfterIgnored, reason: "until", // a date-form Retry-After, to the second it names
		fires: func(c *client) {
			c.sleep(700 * time.Millisecond) // answered at .7; Date and the date form are cut to the second
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 429, Code: "rate_limited", RetryAfter: 2, RetryAt: start.Add(2 * time.Second)})
			c.sleep(1200 * time.Millisecond)
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200})
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			c.sleep(700 * time.Millisecond)
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 429, Code: "rate_limited", RetryAfter: 2, RetryAt: start.Add(2 * time.Second)})
			c.now = start.Add(2 * time.Second) // exactly the date named, 1.3s after the answer
			c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200})
		}},
	{rule: PollTooFast, reason: "without the emulator's clock moving", // the manual clock never moved
		fires: func(c *client) {
			c.still = true
			for range 4 {
				c.poll("j1", "running")
			}
		},
		seqs: []uint64{2, 3, 4},
		quiet: func(c *client) { // exactly the floor, and a little over it under answer latency
			for range 5 {
				c.poll("j1", "running")
				c.sleep(PollFloor)
			}
			for range 5 {
				c.poll("j1", "running")
				c.sleep(1100 * time.Millisecond)
			}
		}},
	{rule: PollTooFast, reason: "the shortest gap 900ms", // under the floor by more than the jitter of arrival stamps
		fires: func(c *client) {
			for range 4 {
				c.poll("j1", "running")
				c.sleep(900 * time.Millisecond)
			}
		},
		seqs: []uint64{2, 3, 4},
		quiet: func(c *client) { // a fixed one-second timer, seen a few milliseconds short
			for _, gap := range []time.Duration{991, 998, 993, 996, 950} {
				c.poll("j1", "running")
				c.sleep(gap * time.Millisecond)
			}
			c.poll("j1", "running")
		}},
	{rule: PollAfterTerminal,
		fires: func(c *client) {
			c.poll("j1", "succeeded")
			c.download("j1", 200)
			c.poll("j1", "succeeded")
			c.poll("j1", "succeeded")
		},
		seqs: []uint64{1, 2, 3},
		quiet: func(c *client) { // one last look, and reads that fetch links for a download again
			c.poll("j1", "succeeded")
			c.download("j1", 200)
			for range 2 {
				c.sleep(time.Hour)
				c.poll("j1", "succeeded")
				c.download("j1", 200)
			}
			c.sleep(time.Hour)
			c.poll("j1", "succeeded")
		}},
	{rule: RetryUnchanged, // the 402 recipe: credits set to 0, then three unchanged generations, the clock still
		fires: func(c *client) {
			c.still = true
			c.quote("q1", 10*time.Minute)
			c.creditsSet("acct_all")
			c.generate("k1", "q1", 402, "insufficient_credits", "", "")
			c.generate("k1", "q1", 402, "insufficient_credits", "", "")
			c.generate("k1", "q1", 402, "insufficient_credits", "", "")
		},
		seqs: []uint64{2, 3, 4},
		quiet: func(c *client) {
			c.still = true
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 402, "insufficient_credits", "", "")
			c.creditsSet("acct_all")
			c.generate("k1", "q1", 202, "", "j1", "queued")
		}},
	{rule: RetryUnchanged, // a key that lacks the permission does not gain it by asking again
		fires: func(c *client) {
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 403, Code: "permission_denied", Account: "acct_read", RequestBody: []byte(`{"model":"m"}`)})
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 403, Code: "permission_denied", Account: "acct_read", RequestBody: []byte(`{"model":"m"}`)})
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 403, Code: "permission_denied", Account: "acct_read", RequestBody: []byte(`{"model":"m"}`)})
			c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 200, Account: "acct_all", RequestBody: []byte(`{"model":"m"}`)})
		}},
	{rule: OutputsNeverDownloaded, reason: "never saw it finish", // a job never polled
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 202, "", "j1", "queued")
			c.expire["j1"] = c.now.Add(time.Hour)
			c.sleep(2 * time.Hour)
		},
		seqs: []uint64{2},
		quiet: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 200, "", "j1", "succeeded") // wait=true
			c.expire["j1"] = c.now.Add(time.Hour)
			c.download("j1", 200)
			c.sleep(2 * time.Hour)
		}},
	{rule: OutputsNeverDownloaded, reason: "cut short", // a download cut off, and one that asked for a tiny range
		fires: func(c *client) {
			c.poll("j1", "succeeded")
			c.expire["j1"] = c.now.Add(time.Hour)
			c.fetch("j1", 200, 0, 40) // the connection went after 40 of 100 bytes
			c.fetch("j1", 206, 0, 10) // bytes=0-9
			c.sleep(2 * time.Hour)
		},
		seqs: []uint64{1},
		quiet: func(c *client) { // ranges that together make the file
			c.poll("j1", "succeeded")
			c.expire["j1"] = c.now.Add(time.Hour)
			c.fetch("j1", 200, 0, 40)
			c.fetch("j1", 206, 40, 60) // resumed where it was cut
			c.sleep(2 * time.Hour)
		}},
}

func init() { cases = append(cases, sweptCases...) }

func TestRulesFire(t *testing.T) {
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d", tc.rule, i), func(t *testing.T) {
			c := newClient()
			tc.fires(c)
			got := c.judge()
			if !slices.Equal(rulesOf(got), []string{tc.rule}) {
				t.Fatalf("findings %v, want only %s: %+v", rulesOf(got), tc.rule, got)
			}
			f := got[0]
			if !slices.Equal(f.Entries, tc.seqs) {
				t.Errorf("entries %v, want %v", f.Entries, tc.seqs)
			}
			if f.Severity != severity[tc.rule] || f.Severity == "" {
				t.Errorf("severity %q", f.Severity)
			}
			if f.Reason == "" || strings.Contains(f.Reason, "\n") {
				t.Errorf("reason %q is not one line", f.Reason)
			}
			if !strings.Contains(f.Reason, tc.reason) {
				t.Errorf("reason %q does not say %q", f.Reason, tc.reason)
			}
		})
	}
}

func TestRulesStaySilentOnCorrectClients(t *testing.T) {
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d", tc.rule, i), func(t *testing.T) {
			c := newClient()
			tc.quiet(c)
			if got := c.judge(); len(got) != 0 {
				t.Fatalf("findings %+v, want none", got)
			}
		})
	}
}

func TestEveryRuleHasACase(t *testing.T) {
	for _, r := range Rules {
		if !slices.ContainsFunc(cases, func(tc ruleCase) bool { return tc.rule == r.ID }) {
			t.Errorf("rule %s has no test", r.ID)
		}
	}
}

func TestPollFindingCountsEveryFastPoll(t *testing.T) {
	c := newClient()
	for range 50 {
		c.poll("j1", "running")
	}
	got := c.judge()
	if len(got) != 1 || len(got[0].Entries) != maxSeqs || !strings.Contains(got[0].Reason, "49 times") {
		t.Fatalf("%+v", got)
	}
}

func TestDroppedEventsDoNotAccuse(t *testing.T) {
	c := newClient()
	c.poll("j1", "succeeded")
	c.expire["j1"] = c.now.Add(time.Hour)
	c.sleep(2 * time.Hour)
	in := c.input()
	in.Dropped = start
	if got := Judge(in); len(got) != 0 {
		t.Fatalf("downloads may have been dropped, yet: %+v", got)
	}
}

// TestNotesShareTheLogsBounds: downloads and balance changes are events of the one log, under
// its count bound, capped per field; the time of the newest dropped is kept.
func TestNotesShareTheLogsBounds(t *testing.T) {
	j := NewBounded(10, 1<<20)
	j.Add(Entry{Method: "GET", Path: "/v1/models", Time: start})
	for i := range 25 {
		j.AddNote(Note{Kind: Download, Time: start.Add(time.Duration(i) * time.Second), Job: strings.Repeat("j", 1000)}, 0)
	}
	log, dropped := j.Log()
	if len(log) != 10 || log[0].Note == nil || log[0].Note.Time != start.Add(15*time.Second) || !dropped.Equal(start.Add(14*time.Second)) {
		t.Fatalf("%d events from %+v, missing up to %v", len(log), log[0], dropped)
	}
	if len(log[0].Note.Job) != maxNoteText || j.Bytes() > 10*noteBytes {
		t.Fatalf("job %d bytes, %d bytes held", len(log[0].Note.Job), j.Bytes())
	}
	if all, _ := listAll(j, nil, 0, 100); len(all) != 0 {
		t.Fatalf("the journal's listing shows notes: %+v", all)
	}
}

func TestRunKeepsBoundedFindingsAndExactCounts(t *testing.T) {
	r := NewRun()
	many := make([]api.Finding, 700)
	for i := range many {
		many[i] = api.Finding{Rule: PollTooFast}
	}
	r.Later("a", func() (int, []api.Finding) { return 10, many })
	r.Fold("b", 5, many)
	rep := r.Report([]Live{{Tenant: "c", Examined: 1, Findings: []api.Finding{{Rule: QuoteReused}}}})
	if len(rep.Findings) != MaxRunFindings || rep.Counts[PollTooFast] != 1400 || rep.Counts[QuoteReused] != 1 || rep.Examined != 16 {
		t.Fatalf("%d findings, counts %v, examined %d", len(rep.Findings), rep.Counts, rep.Examined)
	}
	if rep.Findings[0].Tenant == "" {
		t.Fatal("a run's findings name their tenant")
	}
}

func TestMarkdown(t *testing.T) {
	c := newClient()
	c.poll("j1", "failed")
	c.poll("j1", "failed")
	c.poll("j1", "failed")
	md := ReportMarkdown(TenantReport("t1", 3, c.judge()))
	for _, want := range []string{"## Client report: tenant t1", "| `poll-after-terminal` | warning | 1 |", "journal entries 1, 2, 3"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if md := ReportMarkdown(TenantReport("t1", 0, nil)); !strings.Contains(md, "No findings") {
		t.Errorf("%s", md)
	}
}

func TestCanonical(t *testing.T) {
	if got := string(canonical([]byte(" {\"a\": \"x y\",\n \"b\": [1, 2]} "))); got != `{"a":"x y","b":[1,2]}` {
		t.Errorf("canonical: %s", got)
	}
}

// use quotes with a model.
func (c *client) use(model string, status int) uint64 {
	return c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: status, Model: model,
		RequestBody: []byte(fmt.Sprintf(`{"model":%q,"input":{"prompt":"a cat %d"}}`, model, c.seq))})
}

// A refusal sent again unchanged is a retry-unchanged; one sent with a changed input is not.
func TestRefusalRetriedUnchanged(t *testing.T) {
	c := newClient()
	c.quote("q1", 10*time.Minute)
	c.generate("k1", "q1", 422, "content_policy_violation", "", "")
	c.generate("k2", "q1", 422, "content_policy_violation", "", "")
	if got := rulesOf(c.judge()); !slices.Equal(got, []string{RetryUnchanged}) {
		t.Errorf("a refusal sent again: %v", got)
	}
	c = newClient()
	c.quote("q1", 10*time.Minute)
	c.generate("k1", "q1", 422, "content_policy_violation", "", "")
	c.quote("q2", 10*time.Minute)
	changed := gen("k2", "q2", 422, "content_policy_violation", "", "")
	changed.InputDigest, changed.RequestBody = Digest([]byte(`{"prompt":"a dog"}`)), []byte(`{"model":"m","input":{"prompt":"a dog"},"quote_id":"q2"}`)
	c.add(changed)
	if got := rulesOf(c.judge()); len(got) != 0 {
		t.Errorf("a changed input: %v", got)
	}
}

// Under a skipping clock each poll jumps the tenant's time, so polls are spaced by their real
// arrival (Wall) instead: four polls 50 ms apart in real time are fast however far the clock
// jumped between them, and polls a second apart in real time are not, however still it stood.
func TestPollsAreSpacedInRealTimeWhileTheClockSkips(t *testing.T) {
	wall := time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC)
	judgeSkip := func(realGap, jump time.Duration) []api.Finding {
		c := newClient()
		for i := range 4 {
			seq := c.poll("j1", "running")
			c.entry(seq).Wall = wall.Add(time.Duration(i) * realGap)
			c.sleep(jump)
		}
		return c.judge()
	}
	if got := rulesOf(judgeSkip(50*time.Millisecond, 2*time.Minute)); !slices.Contains(got, PollTooFast) {
		t.Errorf("polls 50 ms apart in real time, jumping 2 min each: %v; want %s", got, PollTooFast)
	}
	if got := rulesOf(judgeSkip(time.Second, 0)); slices.Contains(got, PollTooFast) {
		t.Errorf("polls 1 s apart in real time on a still clock: %v; want no %s", got, PollTooFast)
	}
	if got := rulesOf(judgeSkip(993*time.Millisecond, 0)); slices.Contains(got, PollTooFast) {
		t.Errorf("a one-second timer seen 993 ms apart in real time: %v; want no %s", got, PollTooFast)
	}
	// A poll recorded before the clock began to skip is not compared with one after.
	c := newClient()
	c.poll("j1", "running")
	for i := range 3 {
		seq := c.poll("j1", "running")
		c.entry(seq).Wall = wall.Add(time.Duration(i) * time.Second)
	}
	if got := rulesOf(c.judge()); slices.Contains(got, PollTooFast) {
		t.Errorf("mixed clocks: %v", got)
	}
}

// A reason about a clock that did not move names the clock the tenant has: manual, or the
// skipping one, which a client's polls alone never move.
func TestStillClockIsNamed(t *testing.T) {
	for _, tc := range []struct {
		skips bool
		want  string
	}{{false, "it is manual"}, {true, "it skips, moving only when a request waits on a job"}} {
		c := newClient()
		c.still = true
		c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 429, Code: "rate_limited", RetryAfter: 2})
		c.add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200})
		in := c.input()
		in.Skips = tc.skips
		fs := Judge(in)
		if len(fs) != 1 || !strings.Contains(fs[0].Reason, tc.want) {
			t.Errorf("skips %v: findings %+v; want a reason saying %q", tc.skips, fs, tc.want)
		}
	}
}

func TestGarbledOnlyWhenAFaultAnsweredInstead(t *testing.T) {
	for _, c := range []struct {
		fault, kind string
		want        bool
	}{
		{"", "", false},
		{"fault_1", "malformed", true},
		{"fault_1", "reset", true},
		{"fault_1", "delay", false},
		{"fault_1", "download", false},
		{"fault_1", "", false}, // a forced outcome or a clock advanced in flight: the service answered
	} {
		if got := Garbled(&Entry{Fault: c.fault, FaultKind: c.kind}); got != c.want {
			t.Errorf("Garbled(fault %q, kind %q) = %v, want %v", c.fault, c.kind, got, c.want)
		}
	}
}
