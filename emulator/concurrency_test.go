package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// limitScenario is a scenario of one concurrency rule; test/pixel then queues 100 ms and runs
// 900 ms, so each job holds its slot for a second.
func limitScenario(rule map[string]any) map[string]any {
	return map[string]any{"name": "limited", "concurrency": []any{rule}}
}

// submit quotes and generates one test/pixel job with the key, as the n-th of its kind.
func submit(t testing.TB, s http.Handler, key string, n int, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	input := map[string]any{"prompt": fmt.Sprintf("fox %d", n)}
	q := quote(t, s, key, "test/pixel", input)
	return call(t, s, "POST", "/v1/generate", key, map[string]any{"model": q.Model, "input": input, "quote_id": q.QuoteID},
		append([]string{"Idempotency-Key", fmt.Sprintf("%s-%d", key, n)}, headers...)...)
}

// positions reads each job's status and queue_position from GET /v1/jobs/{id}, as
// "status/position" (0 when absent).
func positions(t testing.TB, s http.Handler, key string, ids ...string) string {
	t.Helper()
	var out []string
	for _, id := range ids {
		rec := call(t, s, "GET", "/v1/jobs/"+id, key, nil)
		j := decode[api.Job](t, rec)
		out = append(out, fmt.Sprintf("%s/%d", j.Status, j.QueuePosition))
	}
	return strings.Join(out, " ")
}

// Past an account's limit, jobs wait in the order they were made with their queue_position in
// every answer that shows them (generate, the job, the list, cancel, the control API); a
// canceled job leaves the line and the rest move up; as slots free the next in line starts,
// and coverage counts the flow.
func TestConcurrencyQueuesInOrder(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	putScenario(t, s, limitScenario(map[string]any{"limit": 2}))
	var ids []string
	for n := range 5 {
		rec := submit(t, s, "key_a", n)
		j := decode[api.Job](t, rec)
		if rec.Code != 202 || j.QueuePosition != max(0, n-1) {
			t.Fatalf("job %d: %d, queue_position %d, want %d", n, rec.Code, j.QueuePosition, max(0, n-1))
		}
		ids = append(ids, j.ID)
	}
	if got, want := positions(t, s, "key_a", ids...), "queued/0 queued/0 queued/1 queued/2 queued/3"; got != want {
		t.Fatalf("positions %s, want %s", got, want)
	}
	list := decode[struct{ Data []api.Job }](t, call(t, s, "GET", "/v1/jobs?status=queued", "key_a", nil))
	if len(list.Data) != 5 || list.Data[0].QueuePosition != 3 || list.Data[4].QueuePosition != 0 {
		t.Errorf("the list shows %+v", list.Data)
	}
	canceled := decode[api.Job](t, call(t, s, "POST", "/v1/jobs/"+ids[2]+"/cancel", "key_a", nil))
	if canceled.Status != "canceled" || canceled.QueuePosition != 0 || canceled.CreditStatus != "refunded" {
		t.Errorf("cancel answered %+v", canceled)
	}
	if got, want := positions(t, s, "key_a", ids[3:]...), "queued/1 queued/2"; got != want {
		t.Errorf("after a cancel: %s, want %s", got, want)
	}
	cj := decode[map[string]any](t, control(t, s, "GET", "/_emulator/jobs/"+ids[4], nil))
	if cj["queue_position"] != 2.0 {
		t.Errorf("the control API shows %v", cj["queue_position"])
	}
	advance(t, s, "1s") // the first two end; the next two take their slots
	if got, want := positions(t, s, "key_a", ids...), "succeeded/0 succeeded/0 canceled/0 queued/0 queued/0"; got != want {
		t.Errorf("after 1s: %s, want %s", got, want)
	}
	advance(t, s, "100ms")
	if j := pixelJob(t, s, ids[3]); j.Status != "running" || *j.StartedAt != "2026-01-01T00:00:01.1Z" {
		t.Errorf("the fourth job: %s from %v, want running from when its slot freed plus its queue time", j.Status, *j.StartedAt)
	}
	if b := balanceOf(t, s, "acct_a"); b.Held == 0 {
		t.Errorf("balance %+v: the running jobs hold their credits", b)
	}
	if cov := control(t, s, "GET", "/_emulator/coverage", nil).Body.String(); !strings.Contains(cov, `"id":"queued behind a concurrency limit","group":"flows","count":3`) {
		t.Errorf("coverage lacks the queued flow: %s", cov)
	}
}

// A limit per account counts every key of the account; a limit per key counts each apart.
func TestConcurrencyScope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scope string
		want  int // key_gen's queue_position, with key_a's job running
	}{{"account", 1}, {"key", 0}} {
		s := flowServer(t)
		putScenario(t, s, limitScenario(map[string]any{"limit": 1, "scope": tc.scope}))
		submit(t, s, "key_a", 0)
		if j := decode[api.Job](t, submit(t, s, "key_gen", 1)); j.QueuePosition != tc.want {
			t.Errorf("scope %s: another key of the account waits at %d, want %d", tc.scope, j.QueuePosition, tc.want)
		}
		if j := decode[api.Job](t, submit(t, s, "key_b", 2)); j.QueuePosition != 0 {
			t.Errorf("scope %s: another account waits at %d", tc.scope, j.QueuePosition)
		}
	}
}

// over: reject answers 429 concurrency_limited with a Retry-After until the running job is
// planned to end, and holds nothing: no job, the balance as it was, the quote unused, and the
// Idempotency-Key free for the retry that succeeds once the slot frees.
func TestConcurrencyRejectHoldsNothing(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	putScenario(t, s, map[string]any{"name": "limited", "defaults": map[string]any{"run": "10s"},
		"concurrency": []any{map[string]any{"limit": 1, "over": "reject"}}})
	if rec := submit(t, s, "key_a", 0); rec.Code != 202 {
		t.Fatalf("the first job: %d %s", rec.Code, rec.Body)
	}
	advance(t, s, "2s")
	before := balanceOf(t, s, "acct_a")
	input := map[string]any{"prompt": "fox 1"}
	q := quote(t, s, "key_a", "test/pixel", input)
	rec := generate(t, s, "key_a", "again", q, input, "")
	p := decode[problemJSON](t, rec)
	// The first job ends 100 ms + 10 s after it was made, 8.1 s from now.
	if rec.Code != 429 || p.Code != "concurrency_limited" || rec.Header().Get("Retry-After") != "9" {
		t.Fatalf("over the limit: %d Retry-After %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if after := balanceOf(t, s, "acct_a"); after != before {
		t.Errorf("a refused job changed the balance: %+v -> %+v", before, after)
	}
	if list := decode[struct{ Total int }](t, call(t, s, "GET", "/v1/jobs", "key_a", nil)); list.Total != 1 {
		t.Errorf("%d jobs, want the first alone", list.Total)
	}
	advance(t, s, "9s")
	rec = generate(t, s, "key_a", "again", q, input, "")
	if rec.Code != 202 || rec.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("the same key and quote once the slot freed: %d %s", rec.Code, rec.Body)
	}
	if after := balanceOf(t, s, "acct_a"); after.Held != q.Credits {
		t.Errorf("held %d after the retry, want its quote's %d", after.Held, q.Credits)
	}
}

// A snapshot carries the line: restored elsewhere, the jobs wait in the same places, and the
// document taken again is the same; then both go on alike.
func TestConcurrencySnapshotKeepsTheLine(t *testing.T) {
	t.Parallel()
	a := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml", Seeded: true, Seed: 3})
	putScenario(t, a, limitScenario(map[string]any{"limit": 1}))
	var ids []string
	for n := range 4 {
		ids = append(ids, decode[api.Job](t, submit(t, a, "key_a", n)).ID)
	}
	call(t, a, "POST", "/v1/jobs/"+ids[1]+"/cancel", "key_a", nil)
	advance(t, a, "500ms")
	doc := snapshotOf(t, a, "", "")
	if !bytes.Contains(doc, []byte(`"slot":{"group":"concurrency[every model] account acct_a","limit":1,"admitted_at":"2026-01-01T00:00:00Z"}`)) ||
		!bytes.Contains(doc, []byte(`"slot":{"group":"concurrency[every model] account acct_a","limit":1}`)) {
		t.Fatalf("the snapshot lacks the slots: %s", doc)
	}
	b := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml", Seeded: true, Seed: 3})
	if rec := restore(t, b, "", doc); rec.Code != 200 {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	want := positions(t, a, "key_a", ids...)
	if got := positions(t, b, "key_a", ids...); got != want || want != "running/0 canceled/0 queued/1 queued/2" {
		t.Fatalf("restored %s, the original %s", got, want)
	}
	jobsOf := func(doc []byte) string {
		var sn api.Snapshot
		if err := json.Unmarshal(doc, &sn); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(sn.Jobs)
		return string(out)
	}
	if got, want := jobsOf(snapshotOf(t, b, "", "")), jobsOf(doc); got != want {
		t.Errorf("the restored tenant's jobs snapshot otherwise: %s", firstDifference(want, got))
	}
	for _, bad := range []struct{ from, to, pointer string }{
		{`"limit":1}`, `"limit":0}`, "/slot/limit"},
		{`"limit":1,"admitted_at":"2026-01-01T00:00:00Z"}`, `"limit":1,"admitted_at":"2025-12-31T00:00:00Z"}`, "/slot/admitted_at"},
		// A slot held from after the snapshot's now would hold it, unused, until then.
		{`"limit":1,"admitted_at":"2026-01-01T00:00:00Z"}`, `"limit":1,"admitted_at":"2030-01-01T00:00:00Z"}`, "/slot/admitted_at"},
		{`"group":"concurrency[every model] account acct_a"`, `"group":""`, "/slot/group"},
	} {
		rec := restore(t, b, "bad", bytes.Replace(doc, []byte(bad.from), []byte(bad.to), 1))
		if rec.Code != 422 || !strings.Contains(rec.Body.String(), bad.pointer) {
			t.Errorf("a snapshot with %s: %d %s", bad.to, rec.Code, rec.Body)
		}
	}
	for _, s := range []*Server{a, b} {
		advance(t, s, "1s")
	}
	if got, want := positions(t, b, "key_a", ids...), positions(t, a, "key_a", ids...); got != want || want != "succeeded/0 canceled/0 running/0 queued/1" {
		t.Errorf("after 1s: restored %s, the original %s", got, want)
	}
}

// The same seed and the same requests give the same answers, byte for byte, positions and
// times included.
func TestConcurrencyIsDeterministic(t *testing.T) {
	t.Parallel()
	run := func() string {
		s := flowServer(t)
		putScenario(t, s, limitScenario(map[string]any{"limit": 2, "scope": "key"}))
		var b strings.Builder
		for n := range 6 {
			key := []string{"key_a", "key_gen"}[n%2]
			b.WriteString(submit(t, s, key, n).Body.String())
		}
		advance(t, s, "1500ms")
		b.WriteString(call(t, s, "GET", "/v1/jobs", "key_a", nil).Body.String())
		return b.String()
	}
	first, second := run(), run()
	if first != second {
		t.Fatalf("the same seed answered otherwise: %s", firstDifference(first, second))
	}
	if !strings.Contains(first, `"queue_position":1`) {
		t.Errorf("no job waited: %s", first)
	}
}

// On the skipping clock a request that waits on a queued job moves the clock through the ends
// of the jobs ahead of it: a poll to the next instant its line moves, wait=true to its end. On
// the real clock wait=true answers once the jobs ahead have ended.
func TestConcurrencyOnTheSkippingAndRealClocks(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"skip", "real"} {
		s, err := NewServer(Config{CatalogFile: "../testdata/catalogs/small.yaml", SkipClock: mode == "skip"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		rule := map[string]any{"name": "limited", "concurrency": []any{map[string]any{"limit": 1}}}
		if mode == "real" {
			rule["defaults"] = map[string]any{"queue": "0s", "run": "0s"}
		}
		putScenario(t, s, rule)
		first := decode[api.Job](t, submit(t, s, "key_a", 0))
		second := decode[api.Job](t, submit(t, s, "key_a", 1))
		if mode == "skip" {
			if second.QueuePosition != 1 {
				t.Fatalf("skip: the second job waits at %d", second.QueuePosition)
			}
			// One poll: the clock moves to the first job's end, where the second gets its slot.
			if got := positions(t, s, "key_a", second.ID); got != "queued/0" {
				t.Errorf("skip: after one poll the second job is %s, want holding its slot", got)
			}
			if j := pixelJob(t, s, first.ID); j.Status != "succeeded" || *j.FinishedAt != "2026-01-01T00:00:01Z" {
				t.Errorf("skip: the first job is %s at %v", j.Status, j.FinishedAt)
			}
		}
		third := submit(t, s, "key_a", 2)
		if mode == "skip" && decode[api.Job](t, third).QueuePosition != 1 {
			t.Errorf("skip: the third job: %s", third.Body)
		}
		input := map[string]any{"prompt": "fox 3"}
		q := quote(t, s, "key_a", "test/pixel", input)
		rec := generate(t, s, "key_a", "waits", q, input, "?wait=true")
		if j := decode[api.Job](t, rec); rec.Code != 200 || j.Status != "succeeded" {
			t.Fatalf("%s: wait=true behind the line answered %d %s", mode, rec.Code, rec.Body)
		}
		if mode == "skip" {
			// Behind the second (ends at 2s) and the third (3s), it runs from 3s to 4s.
			if j := pixelJob(t, s, decode[api.Job](t, rec).ID); *j.FinishedAt != "2026-01-01T00:00:04Z" {
				t.Errorf("skip: the waiting job ended at %v, want 4s", *j.FinishedAt)
			}
		}
	}
}

// pixelJob reads a job of acct_a.
func pixelJob(t testing.TB, s http.Handler, id string) api.Job {
	t.Helper()
	rec := call(t, s, "GET", "/v1/jobs/"+id, "key_a", nil)
	if rec.Code != 200 {
		t.Fatalf("get job: %d %s", rec.Code, rec.Body)
	}
	return decode[api.Job](t, rec)
}

// A webhook's data shows a waiting job's place in the line, as GET /v1/jobs/{id} does.
func TestConcurrencyInWebhookData(t *testing.T) {
	t.Parallel()
	got := make(chan []byte, 8)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- body
	}))
	t.Cleanup(hook.Close)
	s := flowServer(t)
	if rec := call(t, s, http.MethodPut, "/_emulator/webhooks", "", map[string]any{"url": hook.URL, "secret": hookSecret, "events": []string{"job.queued"}}); rec.Code != 200 {
		t.Fatalf("PUT webhooks: %d %s", rec.Code, rec.Body)
	}
	putScenario(t, s, limitScenario(map[string]any{"limit": 1}))
	submit(t, s, "key_a", 0)
	second := decode[api.Job](t, submit(t, s, "key_a", 1))
	advance(t, s, "0s") // deliveries go out when the manual clock is next moved
	positions := map[string]int{}
	for range 2 {
		select {
		case body := <-got:
			var ev struct{ Data api.Job }
			if err := json.Unmarshal(body, &ev); err != nil {
				t.Fatalf("delivery %s: %v", body, err)
			}
			positions[ev.Data.ID] = ev.Data.QueuePosition
		case <-time.After(10 * time.Second):
			t.Fatal("no delivery within 10 s of real time")
		}
	}
	if positions[second.ID] != 1 || len(positions) != 2 {
		t.Errorf("deliveries showed positions %v, want the second job at 1", positions)
	}
}

// Generations sent at once past a limit that refuses: exactly one gets the slot, every other
// answers 429, and the ledger holds the one job's credits and counts no refund — even for a
// request that lost the slot after its credits were held.
func TestConcurrencyRejectUnderContention(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	putScenario(t, s, limitScenario(map[string]any{"limit": 1, "over": "reject"}))
	const n = 16
	type req struct {
		input map[string]any
		q     quoteBody
	}
	reqs := make([]req, n)
	for i := range reqs {
		reqs[i].input = map[string]any{"prompt": fmt.Sprintf("fox %d", i)}
		reqs[i].q = quote(t, s, "key_a", "test/pixel", reqs[i].input)
	}
	before := balanceOf(t, s, "acct_a")
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() {
			codes[i] = generate(t, s, "key_a", fmt.Sprint("c", i), reqs[i].q, reqs[i].input, "").Code
		})
	}
	wg.Wait()
	won, credits := 0, int64(0)
	for i, c := range codes {
		switch c {
		case 202:
			won++
			credits = reqs[i].q.Credits
		case 429:
		default:
			t.Errorf("request %d answered %d", i, c)
		}
	}
	after := balanceOf(t, s, "acct_a")
	if won != 1 || after.Held != credits || after.Refunded != before.Refunded || after.Available != before.Available-credits {
		t.Errorf("%d won; balance %+v -> %+v", won, before, after)
	}
}
