package evidence

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// client writes a journal and notes by hand, on its own clock.
type client struct {
	now     time.Time
	entries []api.JournalEntry
	notes   []Note
	expire  map[string]time.Time // job -> when its outputs expire
}

func newClient() *client { return &client{now: start, expire: map[string]time.Time{}} }

func (c *client) sleep(d time.Duration) { c.now = c.now.Add(d) }

func (c *client) add(e api.JournalEntry) uint64 {
	e.Seq = uint64(len(c.entries) + 1)
	e.Time = c.now
	if e.Account == "" && e.Status != 403 {
		e.Account = "acct_all"
	}
	c.entries = append(c.entries, e)
	return e.Seq
}

func (c *client) quote(id string, ttl time.Duration) uint64 {
	return c.add(api.JournalEntry{Method: "POST", Path: "/v1/quotes", Status: 200, RequestBody: []byte(`{"model":"m","input":{"prompt":"a cat"}}`),
		ResponseBody: []byte(fmt.Sprintf(`{"quote_id":%q,"model":"m","credits":4,"expires_at":%q}`, id, c.now.Add(ttl).Format(time.RFC3339Nano)))})
}

// generate sends a generation with a quote; status 0 stands for a dropped connection.
func (c *client) generate(key, quote string, status int, code, job, jobStatus string) uint64 {
	e := api.JournalEntry{Method: "POST", Path: "/v1/generate", Status: status, Code: code, IdempotencyKey: key,
		RequestBody: []byte(fmt.Sprintf(`{"model":"m","input":{"prompt":"a cat"},"quote_id":%q}`, quote))}
	if job != "" {
		e.JobID = job
		e.ResponseBody = []byte(fmt.Sprintf(`{"id":%q,"model":"m","status":%q,"quote_id":%q}`, job, jobStatus, quote))
	}
	return c.add(e)
}

func (c *client) poll(job, status string) uint64 {
	return c.add(api.JournalEntry{Method: "GET", Path: "/v1/jobs/" + job, Status: 200, JobID: job,
		ResponseBody: []byte(fmt.Sprintf(`{"id":%q,"model":"m","status":%q,"input":{"status":"queued"}}`, job, status))})
}

func (c *client) download(job string, status int) {
	c.notes = append(c.notes, Note{Kind: Download, Time: c.now, Job: job, File: "/files/" + job + "/0.png", Status: status})
}

func (c *client) judge() []api.Finding {
	return Judge(Input{Entries: c.entries, Notes: c.notes, Now: c.now, OutputsExpireAt: func(id string) (time.Time, bool) {
		t, ok := c.expire[id]
		return t, ok
	}})
}

func rulesOf(fs []api.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

// Each rule: a client that breaks it, and one that does the right thing instead.
var cases = []struct {
	rule         string
	fires, quiet func(c *client)
	seqs         []uint64 // the entries the finding must list
}{
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
		},
		seqs: []uint64{1, 2},
		quiet: func(c *client) {
			c.poll("j1", "running")
			c.sleep(time.Second)
			c.poll("j1", "failed")
			c.poll("j2", "running") // another job
		}},
	{rule: RetryUnchanged,
		fires: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 422, "quote_mismatch", "", "")
			c.generate("k2", "q1", 422, "quote_mismatch", "", "")
		},
		seqs: []uint64{2, 3},
		quiet: func(c *client) {
			c.quote("q1", 10*time.Minute)
			c.generate("k1", "q1", 402, "insufficient_credits", "", "")
			c.notes = append(c.notes, Note{Kind: CreditsSet, Time: c.now, Account: "acct_all"})
			c.generate("k1", "q1", 402, "insufficient_credits", "", "") // topped up, not enough yet
			c.quote("q2", 10*time.Minute)
			c.generate("k2", "q2", 422, "quote_mismatch", "", "")
			c.quote("q3", 10*time.Minute) // a new quote: a changed request
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
}

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
		if !slices.ContainsFunc(cases, func(tc struct {
			rule         string
			fires, quiet func(c *client)
			seqs         []uint64
		}) bool {
			return tc.rule == r.ID
		}) {
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

func TestDroppedNotesDoNotAccuse(t *testing.T) {
	c := newClient()
	c.poll("j1", "succeeded")
	c.expire["j1"] = c.now.Add(time.Hour)
	c.sleep(2 * time.Hour)
	in := Input{Entries: c.entries, Now: c.now, NotesMissing: c.now, OutputsExpireAt: func(string) (time.Time, bool) { return c.expire["j1"], true }}
	if got := Judge(in); len(got) != 0 {
		t.Fatalf("downloads may have been dropped, yet: %+v", got)
	}
}

func TestNotesBounded(t *testing.T) {
	ns := NewNotes(10)
	for i := range 25 {
		ns.Add(Note{Kind: Download, Time: start.Add(time.Duration(i) * time.Second), Job: strings.Repeat("j", 1000)})
	}
	got, missing := ns.List()
	if len(got) != 10 || got[0].Time != start.Add(15*time.Second) || !missing.Equal(start.Add(14*time.Second)) {
		t.Fatalf("%d notes from %v, missing up to %v", len(got), got[0].Time, missing)
	}
	if len(got[0].Job) != maxNoteText || ns.Bytes() > 10*noteBytes {
		t.Fatalf("job %d bytes, %d bytes held", len(got[0].Job), ns.Bytes())
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
	md := ReportMarkdown(TenantReport("t1", 2, c.judge()))
	for _, want := range []string{"## Client report: tenant t1", "| `poll-after-terminal` | warning | 1 |", "journal entries 1, 2"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if md := ReportMarkdown(TenantReport("t1", 0, nil)); !strings.Contains(md, "No findings") {
		t.Errorf("%s", md)
	}
}

func TestMemberStringAndCanonical(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"m","input":{"quote_id":"inner"},"quote_id":"q1"}`: "q1",
		`{"quote_id":"a\"b"}`: "",
		`{"quote_id":5}`:      "",
		`{"input":"\"quote_id\":\"x\"","quote_id":"q2"}`: "q2",
		`not json`: "",
	} {
		if got := memberString([]byte(body), "quote_id"); got != want {
			t.Errorf("memberString(%s) = %q, want %q", body, got, want)
		}
	}
	if got := string(canonical([]byte(" {\"a\": \"x y\",\n \"b\": [1, 2]} "))); got != `{"a":"x y","b":[1,2]}` {
		t.Errorf("canonical: %s", got)
	}
}
