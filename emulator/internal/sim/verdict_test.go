package sim

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// frame drives a world through its API as a client of acct_a does, and journals each answer as
// the HTTP frame would, with the facts the frame records: the sim records no traffic itself.
type frame struct {
	t *testing.T
	w *World
}

func (f frame) journal(e evidence.Entry) uint64 {
	e.Time, e.ReceivedAt, e.Account = f.w.Now(), f.w.Now(), "acct_a"
	f.w.Journal().Add(e)
	entries, _, _ := f.w.Journal().List(context.Background(), nil, 0, JournalEntries)
	return entries[len(entries)-1].Seq
}

func (f frame) quote(input map[string]any) Quote {
	f.t.Helper()
	q, err := f.w.Quote("acct_a", "test/pixel", input)
	if err != nil {
		f.t.Fatal(err)
	}
	f.journal(evidence.Entry{Method: "POST", Path: "/v1/quotes", Status: 200, Model: q.Model, QuoteID: q.ID, QuoteExpiresAt: q.ExpiresAt})
	return q
}

// generate sends a generation; left says the client hung up before the answer came.
func (f frame) generate(key string, q Quote, input map[string]any, left bool) (jobs.View, uint64) {
	f.t.Helper()
	v, _, err := f.w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: key, Model: q.Model, QuoteID: q.ID, Input: input})
	e := evidence.Entry{Method: "POST", Path: "/v1/generate", Status: 202, Model: q.Model, QuoteID: q.ID, IdempotencyKey: key,
		InputDigest: InputDigest(input), JobID: v.ID, JobStatus: string(v.Status), ClientLeft: left}
	if pe := problem.As(err); pe != nil {
		e.Status, e.Code = 422, string(pe.Code)
	} else if err != nil {
		f.t.Fatal(err)
	}
	return v, f.journal(e)
}

func (f frame) poll(id string) jobs.View {
	f.t.Helper()
	v, err := f.w.Job("acct_a", id)
	if err != nil {
		f.t.Fatal(err)
	}
	f.journal(evidence.Entry{Method: "GET", Path: "/v1/jobs/" + id, Status: 200, JobID: id, JobStatus: string(v.Status)})
	return v
}

// the time test/pixel takes from queued to succeeded in the small catalog.
const pixelRun = time.Second

func rulesOfVerdict(v api.Verdict) []string {
	var out []string
	for _, f := range v.Failures {
		out = append(out, f.Kind+" "+f.Rule)
	}
	return out
}

// A client that quotes, generates, lets the job run and reads it succeeded leaves nothing to
// judge: nothing held, one charge, seen.
func TestVerdictOfACarefulRun(t *testing.T) {
	f := frame{t, newTestWorld(t)}
	q := f.quote(fox(1))
	job, _ := f.generate("k1", q, fox(1), false)
	mustAdvance(t, f.w, pixelRun)
	if v := f.poll(job.ID); v.Status != jobs.Succeeded {
		t.Fatalf("job %s", v.Status)
	}
	v := f.w.Verdict(nil)
	if v.Failed || len(v.Failures) != 0 {
		t.Fatalf("verdict %+v, want nothing failed", v)
	}
	want := map[string]int{"POST /v1/quotes": 1, "POST /v1/generate": 1, "GET /v1/jobs/{id}": 1}
	if len(v.Routes) != len(want) {
		t.Errorf("routes %v, want %v", v.Routes, want)
	}
	for k, n := range want {
		if v.Routes[k] != n {
			t.Errorf("routes %v, want %v", v.Routes, want)
		}
	}
	if !slices.Contains(v.Reached, "job succeeded") {
		t.Errorf("reached %v, want the job's end among them", v.Reached)
	}
	if v0 := f.w.Verdict(new(int)); v0.Failed {
		t.Errorf("exit 0 failed the run: %+v", v0.Failures)
	}
	exit := 3
	if v3 := f.w.Verdict(&exit); !v3.Failed || !slices.Equal(rulesOfVerdict(v3), []string{"exit "}) || !strings.Contains(v3.Failures[0].Reason, "3") {
		t.Errorf("exit 3: %+v", v3)
	}
}

// Each invariant breaks on a careless history and holds on the careful one beside it.
func TestVerdictInvariants(t *testing.T) {
	tests := []struct {
		rule     string
		careless func(f frame) []uint64 // the generations the failure must cite
		careful  func(f frame)
	}{
		{api.InvariantNothingHeld,
			func(f frame) []uint64 { // the client leaves with its job still running
				_, seq := f.generate("k1", f.quote(fox(1)), fox(1), false)
				mustAdvance(f.t, f.w, 500*time.Millisecond)
				return []uint64{seq}
			},
			func(f frame) {
				job, _ := f.generate("k1", f.quote(fox(1)), fox(1), false)
				mustAdvance(f.t, f.w, 500*time.Millisecond)
				if _, err := f.w.Cancel("acct_a", job.ID); err != nil { // given up on, and said so
					f.t.Fatal(err)
				}
				f.poll(job.ID)
			}},
		{api.InvariantOneCharge,
			func(f frame) []uint64 { // a hung-up attempt retried under a new key, both read after
				first, a := f.generate("k1", f.quote(fox(1)), fox(1), true)
				second, b := f.generate("k2", f.quote(fox(1)), fox(1), false)
				mustAdvance(f.t, f.w, pixelRun)
				f.poll(first.ID)
				f.poll(second.ID)
				return []uint64{a, b}
			},
			func(f frame) { // the retry keeps its key and quote: the same job
				q := f.quote(fox(1))
				f.generate("k1", q, fox(1), true)
				job, _ := f.generate("k1", q, fox(1), false)
				f.quote(fox(2)) // another generation altogether
				other, _ := f.generate("k2", f.quote(fox(2)), fox(2), false)
				mustAdvance(f.t, f.w, pixelRun)
				f.poll(job.ID)
				f.poll(other.ID)
			}},
		{api.InvariantChargedUnseen,
			func(f frame) []uint64 { // charged, and the only look came before the end
				job, seq := f.generate("k1", f.quote(fox(1)), fox(1), false)
				mustAdvance(f.t, f.w, 500*time.Millisecond)
				f.poll(job.ID)
				mustAdvance(f.t, f.w, pixelRun)
				return []uint64{seq}
			},
			func(f frame) { // told by an acknowledged webhook delivery, never polled
				job, _ := f.generate("k1", f.quote(fox(1)), fox(1), false)
				mustAdvance(f.t, f.w, pixelRun)
				f.w.Journal().AddNote(evidence.Note{Kind: evidence.WebhookAttempt, Time: f.w.Now(), Job: job.ID, Status: 204,
					Webhook: &api.WebhookAttempt{ID: "msg_1", Event: "job.succeeded", Job: job.ID, Attempt: 1, Kind: "delivery", Status: 204, Outcome: "delivered"}}, 0)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.rule+"/careless", func(t *testing.T) {
			f := frame{t, newTestWorld(t)}
			cited := tt.careless(f)
			v := f.w.Verdict(nil)
			i := slices.IndexFunc(v.Failures, func(x api.VerdictFailure) bool { return x.Rule == tt.rule })
			if !v.Failed || i < 0 {
				t.Fatalf("failures %v, want %s", rulesOfVerdict(v), tt.rule)
			}
			got := v.Failures[i]
			if got.Kind != api.FailureInvariant || got.Reason == "" || strings.Contains(got.Reason, "\n") {
				t.Errorf("failure %+v", got)
			}
			if want := seqs(cited); !slices.Equal(got.Entries, want) {
				t.Errorf("entries %v, want the generations %v", got.Entries, want)
			}
		})
		t.Run(tt.rule+"/careful", func(t *testing.T) {
			f := frame{t, newTestWorld(t)}
			tt.careful(f)
			if v := f.w.Verdict(nil); v.Failed {
				t.Fatalf("failures %+v, want none", v.Failures)
			}
		})
	}
}

// nothing-held names the account, what it holds and the jobs holding it.
func TestNothingHeldNamesTheJobs(t *testing.T) {
	f := frame{t, newTestWorld(t)}
	job, _ := f.generate("k1", f.quote(fox(2)), fox(2), false)
	v := f.w.Verdict(nil)
	if len(v.Failures) != 1 {
		t.Fatalf("failures %+v", v.Failures)
	}
	if r := v.Failures[0].Reason; !strings.Contains(r, "acct_a") || !strings.Contains(r, job.ID) || !strings.Contains(r, "holds 4 credits") {
		t.Errorf("reason %q does not name the account, the held credits and the job", r)
	}
}

// An error-severity finding of the report fails the run, with its rule and entries; failures
// come in order of kind, rule and first entry.
func TestVerdictCarriesErrorFindingsInOrder(t *testing.T) {
	f := frame{t, newTestWorld(t)}
	q := f.quote(fox(1))
	mustAdvance(t, f.w, 11*time.Minute)
	_, late := f.generate("k1", q, fox(1), false)
	job, held := f.generate("k2", f.quote(fox(1)), fox(1), false)
	exit := 1
	v := f.w.Verdict(&exit)
	want := []string{"exit ", "finding " + evidence.ExpiredQuote, "invariant " + api.InvariantNothingHeld}
	if !slices.Equal(rulesOfVerdict(v), want) {
		t.Fatalf("failures %v, want %v", rulesOfVerdict(v), want)
	}
	if fd := v.Failures[1]; fd.Severity != api.SeverityError || !slices.Contains(fd.Entries, int64(late)) {
		t.Errorf("finding %+v, want error severity citing %d", fd, late)
	}
	if nh := v.Failures[2]; !slices.Equal(nh.Entries, []int64{int64(held)}) || !strings.Contains(nh.Reason, job.ID) {
		t.Errorf("nothing-held %+v", nh)
	}
	if again := f.w.Verdict(&exit); !slices.Equal(rulesOfVerdict(again), want) {
		t.Errorf("a second verdict differs: %v", rulesOfVerdict(again))
	}
}

// Routes name the documented operation each request took: a model id keeps its slashes, the
// categories are not a model, a HEAD is a GET, downloads are one route, and a path no route
// answers is left out.
func TestVerdictRoutes(t *testing.T) {
	w := newTestWorld(t)
	for _, r := range [][2]string{{"GET", "/v1/models/test/pixel"}, {"HEAD", "/v1/models/categories"}, {"GET", "/v1/models"},
		{"POST", "/v1/jobs/j1/cancel"}, {"GET", "/v1/jobs/j1"}, {"GET", "/v1/jobs"}, {"GET", "/v1/nowhere"}, {"DELETE", "/v1/jobs/j1"}} {
		w.Journal().Add(evidence.Entry{Method: r[0], Path: r[1], Status: 200})
	}
	w.Journal().AddNote(evidence.Note{Kind: evidence.Download, Job: "j1", File: "/files/j1/0.png", Status: 200}, 0)
	got := w.Verdict(nil).Routes
	want := map[string]int{"GET /v1/models/{model}": 1, "GET /v1/models/categories": 1, "GET /v1/models": 1, "POST /v1/jobs/{id}/cancel": 1,
		"GET /v1/jobs/{id}": 1, "GET /v1/jobs": 1, evidence.FilesRoute: 1}
	if len(got) != len(want) {
		t.Fatalf("routes %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("routes %v, want %v", got, want)
		}
	}
}

// The plan the bundle carries is the control API's perturbations as given: not the scenario's,
// and without the id, remaining and fired the emulator adds.
func TestAPIPlan(t *testing.T) {
	w := newTestWorld(t)
	if p := w.APIPlan(); p.Perturbations == nil || len(p.Perturbations) != 0 {
		t.Fatalf("plan %+v, want an empty list", p)
	}
	in := api.Perturbation{Match: api.FaultMatch{Path: "/v1/generate"}, Action: api.FaultReset, Count: 2}
	if _, err := w.AddFault(in); err != nil {
		t.Fatal(err)
	}
	p := w.APIPlan()
	if len(p.Perturbations) != 1 || p.Perturbations[0].Count != 2 || p.Perturbations[0].Action != api.FaultReset || p.Perturbations[0].Match.Path != "/v1/generate" {
		t.Errorf("plan %+v", p)
	}
}

// A page of the job list the client read tells it a job succeeded; one the journal kept cut
// (past 16 KiB) tells nothing, so no job of its account is held unseen.
func TestChargedUnseenReadsTheJobList(t *testing.T) {
	for _, tt := range []struct {
		name string
		body func(id string) string
	}{
		{"a page showing it", func(id string) string { return `{"data":[{"id":"` + id + `","status":"succeeded"}],"has_more":false}` }},
		{"a page cut", func(id string) string { return `{"data":[{"id":"` + id + `","status":"succ` }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := frame{t, newTestWorld(t)}
			job, _ := f.generate("k1", f.quote(fox(1)), fox(1), false)
			mustAdvance(t, f.w, pixelRun)
			if v := f.w.Verdict(nil); !slices.Equal(rulesOfVerdict(v), []string{"invariant " + api.InvariantChargedUnseen}) {
				t.Fatalf("before the list was read: %v", rulesOfVerdict(v))
			}
			f.journal(evidence.Entry{Method: "GET", Path: "/v1/jobs", Status: 200, ResponseBody: []byte(tt.body(job.ID))})
			if v := f.w.Verdict(nil); v.Failed {
				t.Errorf("failures %+v, want none", v.Failures)
			}
		})
	}
}
