package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/webhooks"
)

// sender answers a hub's attempts without a network.
type sender func(webhooks.Attempt) webhooks.Result

func (f sender) Send(_ context.Context, a webhooks.Attempt) webhooks.Result { return f(a) }

const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// hooked is a hub on a manual clock whose attempts answer makes and whose OnAttempt notes them
// in j, as a tenant's world does.
func hooked(t *testing.T, j *Journal, audit bool, answer sender) (*webhooks.Hub, *clock.Clock) {
	t.Helper()
	c := clock.NewManual(start)
	h := webhooks.New(webhooks.Options{Clock: c, IDs: ids.NewSeeded(1), Sender: answer,
		Render: func(v jobs.View) ([]byte, error) { return json.Marshal(v.ID) },
		OnAttempt: func(at time.Time, a api.WebhookAttempt, audited bool) {
			j.AddNote(Note{Kind: WebhookAttempt, Time: at, Job: a.Job, Status: a.Status, Webhook: &a, Audited: audited}, 0)
		}})
	cfg, err := webhooks.Parse(api.WebhookConfig{URL: "http://127.0.0.1:1/", Secret: hookSecret, Audit: audit}, true)
	if err != nil {
		t.Fatal(err)
	}
	h.Configure(cfg)
	t.Cleanup(h.Close)
	return h, c
}

func ended(id string) jobs.View {
	return jobs.View{ID: id, Status: jobs.Succeeded, CreatedAt: start, StartedAt: start, FinishedAt: start}
}

// careful checks what a receiver should: the signature over id, timestamp and body, and a
// timestamp within 5 minutes of the clock.
func careful(a webhooks.Attempt) webhooks.Result {
	s, _ := webhooks.ParseSecret(hookSecret)
	if webhooks.Sign(s, a.ID, a.Timestamp, a.Body) != a.Signature || start.Sub(time.Unix(a.Timestamp, 0)) > 5*time.Minute {
		return webhooks.Result{Status: 401, Latency: time.Millisecond}
	}
	return webhooks.Result{Status: 200, Latency: time.Millisecond}
}

// TestReceiverRulesCiteTheAttempts: the receiver audit's rules are judged from the attempts in
// the journal: accepting the wrong signature or the stale timestamp, answering slowly and
// refusing a valid delivery are each one finding, citing the seqs of the attempts that show it
// (which GET /_emulator/webhooks/deliveries lists); a careful receiver, one that is down, and
// any receiver without the audit are found for nothing.
func TestReceiverRulesCiteTheAttempts(t *testing.T) {
	slow := func(a webhooks.Attempt) webhooks.Result { r := careful(a); r.Latency = 3 * time.Second; return r }
	for _, tc := range []struct {
		name   string
		audit  bool
		answer sender
		want   string // each finding: its rule, and the kind and status of each attempt it cites
	}{
		{"careful", true, careful, "[]"},
		{"accepts everything", true, func(webhooks.Attempt) webhooks.Result { return webhooks.Result{Status: 204} },
			"[webhook-signature-unchecked [audit_signature 204] webhook-timestamp-unchecked [audit_timestamp 204]]"},
		{"slow", true, slow, "[webhook-slow-ack [delivery 200]]"},
		{"refuses", true, func(webhooks.Attempt) webhooks.Result { return webhooks.Result{Status: 400} },
			"[webhook-valid-refused [delivery 400 delivery 400 delivery 400 delivery 400 delivery 400 delivery 400 delivery 400]]"},
		{"down", true, func(webhooks.Attempt) webhooks.Result { return webhooks.Result{Err: webhooks.ErrRefused} }, "[]"},
		{"slow without the audit", false, slow, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := NewBounded(100, 1<<20)
			j.Add(api.JournalEntry{Method: "POST", Path: "/v1/generate", Status: 202, Time: start})
			h, c := hooked(t, j, tc.audit, tc.answer)
			h.Reached(ended("job-1"))
			_ = c.Advance(2 * time.Hour)
			attempts, _ := j.WebhookAttempts()
			bySeq := map[uint64]api.WebhookAttempt{}
			for _, a := range attempts {
				bySeq[a.Seq] = a
			}
			log, _ := j.Log()
			var got []any
			for _, f := range Judge(Input{Log: log, Now: c.Now(), Still: true}) {
				var cited []string
				for _, seq := range f.Entries {
					a, ok := bySeq[seq]
					if !ok {
						t.Fatalf("%s cites %d, no attempt of %v", f.Rule, seq, attempts)
					}
					cited = append(cited, a.Kind, strconv.Itoa(a.Status))
					if !strings.Contains(f.Reason, bySeq[f.Entries[0]].ID) {
						t.Errorf("%s: reason %q names not the first attempt cited", f.Rule, f.Reason)
					}
				}
				got = append(got, f.Rule, cited)
			}
			if fmt.Sprint(got) != tc.want {
				t.Fatalf("findings %v, want %s", got, tc.want)
			}
		})
	}
}

// TestReceiverFindingCountsTheRest: a rule shown by several attempts is one finding, whose
// reason counts the others, and a duplicate (the chaos knob) accepted is no finding: the
// receiver is right to acknowledge an id it has seen.
func TestReceiverFindingCountsTheRest(t *testing.T) {
	j := NewBounded(100, 1<<20)
	h, c := hooked(t, j, true, func(a webhooks.Attempt) webhooks.Result {
		r := careful(a)
		r.Latency = 2500 * time.Millisecond
		return r
	})
	for i := range 3 {
		h.Reached(ended("job-" + strconv.Itoa(i)))
	}
	_ = c.Advance(time.Minute)
	log, _ := j.Log()
	got := Judge(Input{Log: log, Now: c.Now(), Still: true})
	if len(got) != 1 || got[0].Rule != WebhookSlowAck || len(got[0].Entries) != 3 || !strings.HasSuffix(got[0].Reason, "(the limit is 2s) (and 2 more)") ||
		!strings.Contains(got[0].Reason, "took 2.5s") {
		t.Fatalf("findings %+v", got)
	}
	dup := Note{Kind: WebhookAttempt, Time: start, Audited: true, Webhook: &api.WebhookAttempt{Seq: 99, ID: "msg_1", Kind: webhooks.KindDuplicate, Status: 200, Outcome: webhooks.OutcomeAccepted}}
	if got := Judge(Input{Log: []Event{{Note: &dup}}}); len(got) != 0 {
		t.Fatalf("an accepted duplicate: %+v", got)
	}
}

// TestWebhookAttemptsAreNotes: attempts are notes of the journal, numbered with its requests,
// listed apart from them, counted against its bounds (the oldest event goes first, and dropped
// attempts are counted), and carried through a snapshot with their numbers, so a restored
// journal numbers on past them.
func TestWebhookAttemptsAreNotes(t *testing.T) {
	j := NewBounded(4, 1<<20)
	attempt := func(id string) {
		j.AddNote(Note{Kind: WebhookAttempt, Time: start, Webhook: &api.WebhookAttempt{ID: id, Kind: webhooks.KindDelivery, Attempt: 1, Outcome: webhooks.OutcomeDelivered, Status: 204}, Audited: true}, 0)
	}
	j.Add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200, Time: start})
	attempt("msg_a")
	j.Add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200, Time: start})
	attempt("msg_b")
	list, dropped := j.WebhookAttempts()
	if fmt.Sprint(len(list), " ", list[0].Seq, list[0].ID, " ", list[1].Seq, list[1].ID, " ", dropped) != "2 2msg_a 4msg_b 0" {
		t.Fatalf("attempts %+v, %d dropped", list, dropped)
	}
	requests, _ := listAll(j, nil, 0, 10)
	if len(requests) != 2 || requests[0].Seq != 1 || requests[1].Seq != 3 {
		t.Fatalf("requests %+v", requests)
	}
	attempt("msg_c") // past the bound of 4: the oldest request goes
	attempt("msg_d") // then msg_a
	if list, dropped = j.WebhookAttempts(); len(list) != 3 || list[0].ID != "msg_b" || dropped != 1 {
		t.Fatalf("past the bound: %+v, %d dropped", list, dropped)
	}

	doc := j.ExportNotes()
	back := NewBounded(10, 1<<20)
	back.Restore(nil, doc, func(ptr, msg string) { t.Errorf("%s: %s", ptr, msg) })
	if got, _ := back.WebhookAttempts(); fmt.Sprint(got) != fmt.Sprint(list) {
		t.Fatalf("restored %+v, want %+v", got, list)
	}
	if log, _ := back.Log(); !log[0].Note.Audited {
		t.Error("a restored attempt is no longer audited")
	}
	back.Add(api.JournalEntry{Method: "GET", Path: "/v1/models", Status: 200, Time: start})
	if requests, _ := listAll(back, nil, 0, 10); len(requests) != 1 || requests[0].Seq != 7 {
		t.Fatalf("after a restore without the journal, a request numbered %+v, want 7", requests)
	}

	doc.Entries = append(doc.Entries, doc.Entries[0], api.SnapshotNote{Kind: "download", Time: doc.Entries[0].Time, Webhook: doc.Entries[0].Webhook})
	doc.Entries[3].Webhook = nil
	doc.Entries[2].Webhook = &api.WebhookAttempt{Seq: 0, ID: "msg_x"}
	var problems []string
	NewBounded(10, 1<<20).Restore(nil, doc, func(ptr, msg string) { problems = append(problems, ptr) })
	if want := "[/entries/2/webhook /entries/3/webhook /entries/4/webhook]"; fmt.Sprint(problems) != want {
		t.Errorf("problems %v, want %s", problems, want)
	}
}

// TestWebhookNoteBounded: an attempt counts as one note against the byte bound too, whatever
// it holds.
func TestWebhookNoteBounded(t *testing.T) {
	j := NewBounded(1000, 10*noteBytes)
	for i := range 50 {
		j.AddNote(Note{Kind: WebhookAttempt, Time: start, Webhook: &api.WebhookAttempt{ID: "msg_" + strconv.Itoa(i)}}, 0)
	}
	if list, dropped := j.WebhookAttempts(); len(list) != 10 || dropped != 40 || j.Bytes() > 10*noteBytes {
		t.Fatalf("%d kept, %d dropped, %d bytes", len(list), dropped, j.Bytes())
	}
}
