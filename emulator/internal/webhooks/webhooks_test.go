package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// verify checks a delivery as the Standard Webhooks specification describes it, written from
// the specification alone: the secret's base64 after "whsec_" is the HMAC-SHA256 key; the
// signed content is "{webhook-id}.{webhook-timestamp}.{body}"; webhook-signature holds
// space-delimited "v1,<base64>" signatures, any of which may match; a timestamp more than five
// minutes from now is refused.
func verify(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("missing headers")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("bad timestamp")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp outside tolerance")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := mac.Sum(nil)
	for _, s := range strings.Split(sigs, " ") {
		version, b64, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no matching signature")
}

// received is one request a test receiver got.
type received struct {
	header http.Header
	body   []byte
	err    error // what verify said
}

// receiver is a loopback server that verifies each delivery against the clock c and answers
// with the next status of answers (200 once they run out).
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	got     []received
	answers []int
}

func newReceiver(t *testing.T, c *clock.Clock, answers ...int) *receiver {
	r := &receiver{answers: answers}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Clone(), body, verify(testSecret, req.Header, body, c.Now())})
		status := 200
		if len(r.answers) > 0 {
			status, r.answers = r.answers[0], r.answers[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received{}, r.got...)
}

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func testHub(t *testing.T, c *clock.Clock, url string, edit func(*api.WebhookConfig)) *Hub {
	t.Helper()
	guard, _ := ParseAllow(nil)
	tr := NewTransport(guard, "test")
	h := New(Options{Clock: c, Sender: tr, IDs: ids.NewSeeded(1), Render: func(v jobs.View) ([]byte, error) {
		return json.Marshal(map[string]any{"id": v.ID, "status": v.Status})
	}})
	in := api.WebhookConfig{URL: url, Secret: testSecret}
	if edit != nil {
		edit(&in)
	}
	cfg, err := Parse(in, true)
	if err != nil {
		t.Fatal(err)
	}
	h.Configure(cfg)
	t.Cleanup(func() { h.Close(); tr.Close() })
	return h
}

func ended(id string, at time.Time) jobs.View {
	return jobs.View{ID: id, Status: jobs.Succeeded, CreatedAt: at, StartedAt: at, FinishedAt: at}
}

// TestRetriedOnTheManualClock: a delivery answered 500 twice is attempted again with the same
// id when the schedule says, each attempt stamped with its own instant, and then delivered.
func TestRetriedOnTheManualClock(t *testing.T) {
	c := clock.NewManual(start)
	r := newReceiver(t, c, 500, 503)
	h := testHub(t, c, r.URL, nil)
	told := record(h)
	h.Reached(ended("job-1", start))
	if n := len(r.requests()); n != 0 {
		t.Fatalf("sent %d before the clock moved", n)
	}
	if err := c.Advance(0); err != nil {
		t.Fatal(err)
	}
	if n := len(r.requests()); n != 1 {
		t.Fatalf("after advance 0: %d attempts, want 1", n)
	}
	if err := c.Advance(Schedule[1] - time.Second); err != nil {
		t.Fatal(err)
	}
	if n := len(r.requests()); n != 1 {
		t.Fatalf("a second before the retry: %d attempts, want 1", n)
	}
	// One advance runs both remaining attempts, each at its own time.
	if err := c.Advance(time.Hour); err != nil {
		t.Fatal(err)
	}
	got := r.requests()
	if len(got) != 3 {
		t.Fatalf("%d attempts, want 3", len(got))
	}
	wantAt := []time.Time{start, start.Add(Schedule[1]), start.Add(Schedule[1] + Schedule[2])}
	for i, g := range got {
		if g.header.Get("webhook-id") != got[0].header.Get("webhook-id") || !strings.HasPrefix(g.header.Get("webhook-id"), "msg_") {
			t.Errorf("attempt %d: id %q, want the first's %q", i+1, g.header.Get("webhook-id"), got[0].header.Get("webhook-id"))
		}
		if ts := g.header.Get("webhook-timestamp"); ts != strconv.FormatInt(wantAt[i].Unix(), 10) {
			t.Errorf("attempt %d: timestamp %s, want %d", i+1, ts, wantAt[i].Unix())
		}
		if err := verify(testSecret, g.header, g.body, wantAt[i]); err != nil {
			t.Errorf("attempt %d does not verify: %v", i+1, err)
		}
		var ev api.WebhookEvent
		if err := json.Unmarshal(g.body, &ev); err != nil || ev.Type != "job.succeeded" || ev.Data.ID != "job-1" || ev.Timestamp != start.Format(time.RFC3339Nano) {
			t.Errorf("attempt %d: body %s", i+1, g.body)
		}
	}
	outcomes := []string{}
	for i, a := range told() {
		outcomes = append(outcomes, fmt.Sprint(a.Attempt, " ", a.Status, " ", a.Outcome, " ", a.At == wantAt[i].Format(time.RFC3339Nano)))
	}
	if want := "[1 500 retrying true 2 503 retrying true 3 200 delivered true]"; fmt.Sprint(outcomes) != want {
		t.Errorf("log %v, want %s", outcomes, want)
	}
	if s := h.Summary(); s.Delivered != 1 || s.Attempts != 3 || s.Failures != 2 || s.Pending != 0 {
		t.Errorf("summary %+v", s)
	}
}

// TestGivesUpAfterTheSchedule: a receiver that never accepts gets every attempt of the
// schedule, at the documented times, and then no more.
func TestGivesUpAfterTheSchedule(t *testing.T) {
	c := clock.NewManual(start)
	answers := make([]int, 20)
	for i := range answers {
		answers[i] = 500
	}
	r := newReceiver(t, c, answers...)
	h := testHub(t, c, r.URL, nil)
	h.Reached(ended("job-1", start))
	if err := c.Advance(24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	got := r.requests()
	if len(got) != len(Schedule) {
		t.Fatalf("%d attempts, want %d", len(got), len(Schedule))
	}
	at := start
	for i, g := range got {
		at = at.Add(Schedule[i])
		if ts := g.header.Get("webhook-timestamp"); ts != strconv.FormatInt(at.Unix(), 10) {
			t.Errorf("attempt %d at %s, want %s", i+1, ts, at)
		}
	}
	if s := h.Summary(); s.GaveUp != 1 || s.Pending != 0 {
		t.Errorf("summary %+v", s)
	}
}

// TestEveryDeliveryVerifies: events of every kind, on a real clock, verify with the
// specification's receiver.
func TestEveryDeliveryVerifies(t *testing.T) {
	c := clock.NewReal()
	defer c.Close()
	r := newReceiver(t, c)
	h := testHub(t, c, r.URL, func(in *api.WebhookConfig) { in.Events = []string{"job.queued", "job.running", "job.succeeded"} })
	now := c.Now()
	for _, s := range []jobs.Status{jobs.Queued, jobs.Running, jobs.Succeeded, jobs.Failed} {
		v := ended("job-2", now)
		v.Status = s
		if h.Wants(s) {
			h.Reached(v)
		}
	}
	waitFor(t, func() bool { return h.Summary().Delivered == 3 })
	got := r.requests()
	if len(got) != 3 {
		t.Fatalf("%d deliveries, want 3 (job.failed is not asked for)", len(got))
	}
	for i, g := range got {
		if g.err != nil {
			t.Errorf("delivery %d: %v", i, g.err)
		}
	}
}

// waitFor polls cond for a few seconds of real time: deliveries on a real clock are network
// round trips, not the emulator's time.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOnlyLoopbackUnlessAllowed: an address off the machine is refused before a connection is
// tried; --webhook-allow lets a named address through, by port when one is given, and a name
// is judged by what it resolves to.
func TestOnlyLoopbackUnlessAllowed(t *testing.T) {
	guard, err := ParseAllow(nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTransport(guard, "test")
	defer tr.Close()
	began := time.Now()
	res := tr.Send(context.Background(), Attempt{URL: "http://192.0.2.1:9/hook", ID: "msg_1", Body: []byte("{}")})
	if res.Err != ErrNotAllowed || res.Status != 0 {
		t.Fatalf("TEST-NET address: %+v, want not_allowed", res)
	}
	if time.Since(began) > 2*time.Second {
		t.Fatalf("refusal took %s: a connection was tried", time.Since(began))
	}
	// A name is no way around it: what it resolves to is judged.
	res = tr.Send(context.Background(), Attempt{URL: "http://192.0.2.1.nip.invalid:9/", ID: "msg_1", Body: []byte("{}")})
	if res.OK() {
		t.Fatalf("an unresolvable name was delivered to: %+v", res)
	}

	ctx := context.Background()
	addr := netip.MustParseAddr("192.0.2.1")
	for _, tc := range []struct {
		allow []string
		port  int
		want  bool
	}{
		{nil, 80, false},
		{[]string{"192.0.2.1"}, 80, true},
		{[]string{"192.0.2.1:8080"}, 80, false},
		{[]string{"192.0.2.1:8080"}, 8080, true},
		{[]string{"192.0.2.2"}, 80, false},
		{[]string{"localhost"}, 80, false}, // resolves to loopback, not to 192.0.2.1
	} {
		g, err := ParseAllow(tc.allow)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Allows(ctx, addr, tc.port); got != tc.want {
			t.Errorf("allow %v, port %d: %v, want %v", tc.allow, tc.port, got, tc.want)
		}
	}
	if !guard.Allows(ctx, netip.MustParseAddr("127.0.0.1"), 1) || !guard.Allows(ctx, netip.MustParseAddr("::1"), 1) || !guard.Allows(ctx, netip.MustParseAddr("::ffff:127.0.0.1"), 1) {
		t.Error("loopback refused")
	}
	for _, bad := range []string{"a b", "host:0", "host:99999", "host:x"} {
		if _, err := ParseAllow([]string{bad}); err == nil {
			t.Errorf("ParseAllow(%q) accepted", bad)
		}
	}
}

// TestRedirectNotFollowed: a 3xx is the receiver's answer, a failure; its Location is never
// visited.
func TestRedirectNotFollowed(t *testing.T) {
	visited := make(chan struct{}, 1)
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { visited <- struct{}{} }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	guard, _ := ParseAllow(nil)
	tr := NewTransport(guard, "test")
	defer tr.Close()
	res := tr.Send(context.Background(), Attempt{URL: redirect.URL, ID: "msg_1", Body: []byte("{}")})
	if res.Status != http.StatusTemporaryRedirect || res.OK() {
		t.Fatalf("%+v, want a failed 307", res)
	}
	select {
	case <-visited:
		t.Fatal("the redirect was followed")
	default:
	}
}

// TestSecretNeverShown: no format or document of a configuration holds its secret.
func TestSecretNeverShown(t *testing.T) {
	cfg, err := Parse(api.WebhookConfig{URL: "http://127.0.0.1:1/", Secret: testSecret}, true)
	if err != nil {
		t.Fatal(err)
	}
	b64 := strings.TrimPrefix(testSecret, "whsec_")
	doc, _ := json.Marshal(cfg)
	wire, _ := json.Marshal(cfg.Wire())
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg.Secret), string(doc), string(wire)} {
		if strings.Contains(s, b64) || strings.Contains(s, string(cfg.Secret.key)) {
			t.Errorf("secret shown: %s", s)
		}
	}
	if !cfg.Wire().SecretSet {
		t.Error("secret_set is false")
	}
}

// TestParse refuses what cannot be sent, field by field.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   api.WebhookConfig
		ptrs string
	}{
		{api.WebhookConfig{}, "[/url /secret]"},
		{api.WebhookConfig{URL: "ftp://x/", Secret: "abc"}, "[/url /secret]"},
		{api.WebhookConfig{URL: "http://u:p@127.0.0.1/", Secret: "whsec_!!"}, "[/url /secret]"},
		{api.WebhookConfig{URL: "http://127.0.0.1/", Secret: testSecret, Events: []string{"job.done"}}, "[/events/0]"},
		{api.WebhookConfig{URL: "http://127.0.0.1/", Secret: testSecret, Chaos: &api.WebhookChaos{Duplicate: 2, Reorder: -1, Delay: "soon"}}, "[/chaos/duplicate /chaos/reorder /chaos/delay]"},
	} {
		_, err := Parse(tc.in, true)
		var ptrs []string
		if p := problem.As(err); p != nil {
			for _, fe := range p.Errors {
				ptrs = append(ptrs, fe.Pointer)
			}
		}
		if fmt.Sprint(ptrs) != tc.ptrs {
			t.Errorf("%+v: %v, want %s", tc.in, ptrs, tc.ptrs)
		}
	}
	cfg, err := Parse(api.WebhookConfig{URL: "http://127.0.0.1/", Secret: testSecret}, true)
	if err != nil || fmt.Sprint(cfg.Events) != fmt.Sprint(DefaultEvents) {
		t.Errorf("default events %v, %v", cfg, err)
	}
}

// TestPendingBounded: past MaxPending, events are dropped and counted.
func TestPendingBounded(t *testing.T) {
	c := clock.NewManual(start)
	h := testHub(t, c, "http://127.0.0.1:1/", nil)
	for i := range MaxPending + 5 {
		h.Reached(ended("job-"+strconv.Itoa(i), start))
	}
	if s := h.Summary(); s.Pending != MaxPending || s.Dropped != 5 {
		t.Fatalf("summary %+v", s)
	}
	if b := h.Bytes(); b < MaxPending*10 || b > MaxPendingBytes {
		t.Fatalf("the hub counts %d bytes against the budget", b)
	}
}

// TestCloseCancelsAttempts: Close returns once an attempt stuck on a slow receiver is
// canceled, and starts nothing more.
func TestCloseCancelsAttempts(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	c := clock.NewReal()
	defer c.Close()
	h := testHub(t, c, slow.URL, nil)
	h.Reached(ended("job-1", c.Now()))
	waitFor(t, func() bool { return h.Summary().InFlight == 1 })
	began := time.Now()
	h.Close()
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("Close took %s", d)
	}
	if s := h.Summary(); s.InFlight != 0 {
		t.Fatalf("summary %+v", s)
	}
	h.Reached(ended("job-2", c.Now()))
	if s := h.Summary(); s.Pending != 0 {
		t.Fatalf("a closed hub queued a delivery: %+v", s)
	}
}

// senderFunc is a Sender that answers without a network.
type senderFunc func(Attempt) Result

func (f senderFunc) Send(_ context.Context, a Attempt) Result { return f(a) }

// fakeHub is a hub on a manual clock whose attempts f answers, recorded in order.
func fakeHub(t testing.TB, edit func(*api.WebhookConfig), f func(Attempt) Result) (*Hub, *clock.Clock, *[]Attempt) {
	t.Helper()
	c := clock.NewManual(start)
	var mu sync.Mutex
	var sent []Attempt
	h := New(Options{Clock: c, IDs: ids.NewSeeded(1), Render: func(v jobs.View) ([]byte, error) { return json.Marshal(v.ID) },
		Sender: senderFunc(func(a Attempt) Result {
			mu.Lock()
			sent = append(sent, a)
			mu.Unlock()
			return f(a)
		})})
	in := api.WebhookConfig{URL: "http://127.0.0.1:1/", Secret: testSecret}
	if edit != nil {
		edit(&in)
	}
	cfg, err := Parse(in, true)
	if err != nil {
		t.Fatal(err)
	}
	h.Configure(cfg)
	t.Cleanup(h.Close)
	return h, c, &sent
}

func ok200(Attempt) Result { return Result{Status: 200, Latency: time.Millisecond} }

// told is an attempt as OnAttempt hears of it.
type told struct {
	api.WebhookAttempt
	audited bool
}

// record makes the hub tell its attempts to the list it returns a reader of, as the tenant's
// journal hears of them; call it before any attempt.
func record(h *Hub) func() []told {
	var mu sync.Mutex
	var list []told
	h.o.OnAttempt = func(at time.Time, a api.WebhookAttempt, audited bool) {
		if a.At != at.UTC().Format(time.RFC3339Nano) {
			panic("an attempt told with another time than its own")
		}
		mu.Lock()
		list = append(list, told{a, audited})
		mu.Unlock()
	}
	return func() []told {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(list)
	}
}

// TestChaosDuplicate: a delivered delivery is sent again with the same id, and a 2xx to it is
// correct: no finding.
func TestChaosDuplicate(t *testing.T) {
	h, c, sent := fakeHub(t, func(in *api.WebhookConfig) { in.Chaos = &api.WebhookChaos{Duplicate: 1}; in.Audit = true }, func(a Attempt) Result {
		if verify(testSecret, http.Header{"Webhook-Id": {a.ID}, "Webhook-Timestamp": {strconv.FormatInt(a.Timestamp, 10)}, "Webhook-Signature": {a.Signature}}, a.Body, start) != nil {
			return Result{Status: 401}
		}
		return ok200(a)
	})
	log := record(h)
	h.Reached(ended("job-1", start))
	_ = c.Advance(0)
	kinds := map[string]string{}
	for _, a := range log() {
		kinds[a.Kind] = a.ID + " " + a.Outcome
	}
	if kinds[KindDuplicate] == "" || kinds[KindDuplicate] != strings.Replace(kinds[KindDelivery], OutcomeDelivered, OutcomeAccepted, 1) {
		t.Fatalf("log %+v", log())
	}
	if len(*sent) != 4 {
		t.Fatalf("%d sent", len(*sent))
	}
}

// TestChaosDelay postpones the first attempt, on the tenant's clock.
func TestChaosDelay(t *testing.T) {
	h, c, sent := fakeHub(t, func(in *api.WebhookConfig) { in.Chaos = &api.WebhookChaos{Delay: "30s"} }, ok200)
	h.Reached(ended("job-1", start))
	_ = c.Advance(29 * time.Second)
	if len(*sent) != 0 {
		t.Fatal("sent before the delay")
	}
	_ = c.Advance(time.Second)
	if len(*sent) != 1 || (*sent)[0].Timestamp != start.Add(30*time.Second).Unix() {
		t.Fatalf("sent %+v", *sent)
	}
}

// TestChaosReorder: a held delivery goes out after the next one; seeded, the same ones are held
// every run.
func TestChaosReorder(t *testing.T) {
	run := func() []string {
		h, c, sent := fakeHub(t, func(in *api.WebhookConfig) { in.Chaos = &api.WebhookChaos{Reorder: 0.5} }, ok200)
		for i := range 10 {
			h.Reached(ended("job-"+strconv.Itoa(i), start.Add(time.Duration(i)*time.Second)))
		}
		_ = c.Advance(10 * time.Minute)
		var order []string
		for _, a := range *sent {
			order = append(order, string(a.Body))
		}
		return order
	}
	first := run()
	if len(first) != 10 {
		t.Fatalf("%d sent, want 10", len(first))
	}
	inversions := 0
	for i := 1; i < len(first); i++ {
		if first[i] < first[i-1] {
			inversions++
		}
	}
	if inversions == 0 {
		t.Fatalf("order %v: none out of order", first)
	}
	if again := run(); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatalf("seeded runs differ: %v, %v", first, again)
	}
}

// TestChaosAfterPoll holds a job's end until a client polled the job to its end.
func TestChaosAfterPoll(t *testing.T) {
	h, c, sent := fakeHub(t, func(in *api.WebhookConfig) { in.Chaos = &api.WebhookChaos{AfterPoll: true} }, ok200)
	h.Reached(ended("job-1", start))
	_ = c.Advance(time.Minute)
	if len(*sent) != 0 {
		t.Fatal("sent before the job was polled")
	}
	h.Polled("job-1")
	_ = c.Advance(0)
	if len(*sent) != 1 {
		t.Fatalf("%d sent after the poll, want 1", len(*sent))
	}
	// Never polled: it goes after PollHold all the same.
	h.Reached(ended("job-2", c.Now()))
	_ = c.Advance(PollHold)
	if len(*sent) != 2 {
		t.Fatalf("%d sent after PollHold, want 2", len(*sent))
	}
}

// TestAuditTellsWhatItSent: with the audit on, a delivery goes out with a wrong signature and
// one with a stale timestamp beside the first real one, each told as audited with its kind and
// outcome, so the report can judge the receiver; without it, nothing is audited.
func TestAuditTellsWhatItSent(t *testing.T) {
	careful := func(a Attempt) Result {
		h := http.Header{"Webhook-Id": {a.ID}, "Webhook-Timestamp": {strconv.FormatInt(a.Timestamp, 10)}, "Webhook-Signature": {a.Signature}}
		if verify(testSecret, h, a.Body, start) != nil {
			return Result{Status: 401, Latency: time.Millisecond}
		}
		return ok200(a)
	}
	for _, audit := range []bool{true, false} {
		h, c, _ := fakeHub(t, func(in *api.WebhookConfig) { in.Audit = audit }, careful)
		log := record(h)
		h.Reached(ended("job-1", start))
		_ = c.Advance(0)
		var got []string
		for _, a := range log() {
			got = append(got, fmt.Sprint(a.Kind, " ", a.Status, " ", a.Outcome, " ", a.audited))
		}
		slices.Sort(got)
		want := "[audit_signature 401 refused true audit_timestamp 401 refused true delivery 200 delivered true]"
		if !audit {
			want = "[delivery 200 delivered false]"
		}
		if fmt.Sprint(got) != want {
			t.Errorf("audit %v: told %v, want %s", audit, got, want)
		}
	}
}

// TestImportReportsEachProblem: a snapshot's webhook is checked field by field, and a sound one
// comes back without a secret, its deliveries due, their bodies rendered again from the jobs
// whatever the document says.
func TestImportReportsEachProblem(t *testing.T) {
	h, c, sent := fakeHub(t, nil, func(Attempt) Result { return Result{Status: 500} })
	h.Reached(ended("job-1", start))
	_ = c.Advance(0)
	doc := h.Export()
	if doc == nil || len(doc.Pending) != 1 || doc.Pending[0].Attempts != 1 || doc.Config.Secret != "" {
		t.Fatalf("export %+v", doc)
	}
	good := doc.Pending[0]
	bad := func(edit func(*api.SnapshotDelivery)) api.SnapshotDelivery { d := good; edit(&d); return d }
	in := &api.SnapshotWebhooks{Config: &api.WebhookConfig{URL: "gopher://x", Secret: testSecret}, Pending: []api.SnapshotDelivery{
		good,
		bad(func(d *api.SnapshotDelivery) { d.ID = "" }),
		bad(func(d *api.SnapshotDelivery) { d.Event = "job.done" }),
		bad(func(d *api.SnapshotDelivery) { d.Kind = "other" }),
		bad(func(d *api.SnapshotDelivery) { d.Attempts = len(Schedule) }),
		bad(func(d *api.SnapshotDelivery) { d.Due = "soon" }),
		bad(func(d *api.SnapshotDelivery) { d.Job = "job-2" }),
		bad(func(d *api.SnapshotDelivery) { d.Event = "job.failed" }),
	}}
	jobsHeld := func(id string) (jobs.View, bool) { return ended("job-1", start), id == "job-1" }
	var ptrs []string
	restored, _, _ := fakeHub(t, nil, ok200)
	restored.Import(in, jobsHeld, func(ptr, msg string) { ptrs = append(ptrs, ptr) })
	want := "[/config/secret /config/url /pending/1/id /pending/2/event /pending/3/kind /pending/4/attempts /pending/5/due /pending/6/job /pending/7/event]"
	if fmt.Sprint(ptrs) != want {
		t.Fatalf("problems %v, want %s", ptrs, want)
	}
	in.Config.URL, in.Config.Secret, in.Pending = "http://127.0.0.1:2/", "", in.Pending[:1]
	in.Pending[0].Body = json.RawMessage(`{"type":"job.succeeded","data":"forged"}`)
	restored, c2, sent2 := fakeHub(t, nil, ok200) // a refused document's world is thrown away
	restored.Import(in, jobsHeld, func(ptr, msg string) { t.Errorf("%s: %s", ptr, msg) })
	if cfg := restored.Config(); cfg == nil || cfg.Secret.Set() || cfg.Source != "snapshot" || restored.Summary().Pending != 1 {
		t.Fatalf("restored %+v %+v", cfg, restored.Summary())
	}
	_ = c2.Advance(time.Hour)
	if len(*sent2) != 0 {
		t.Fatal("sent without a secret")
	}
	cfg, _ := Parse(api.WebhookConfig{URL: "http://127.0.0.1:2/", Secret: testSecret}, true)
	restored.Configure(cfg)
	_ = c2.Advance(0)
	if len(*sent2) != 1 || (*sent2)[0].ID != (*sent)[0].ID || string((*sent2)[0].Body) != string((*sent)[0].Body) {
		t.Fatalf("after the secret: %+v", *sent2)
	}
}

// TestDeletedWhileInFlight: a webhook removed while an attempt is under way makes no retry,
// and nothing stays pending.
func TestDeletedWhileInFlight(t *testing.T) {
	var h *Hub
	h, c, _ := fakeHub(t, nil, func(Attempt) Result {
		h.Configure(nil) // DELETE /_emulator/webhooks while the receiver is answering
		return Result{Status: 500}
	})
	h.Reached(ended("job-1", start))
	_ = c.Advance(0)
	if s := h.Summary(); s.Pending != 0 || s.Attempts != 1 {
		t.Fatalf("summary %+v", s)
	}
}

// TestHeldBeyondTheBoundsLeaveNothing: events dropped past the bounds are not remembered for
// the after_poll knob either.
func TestHeldBeyondTheBoundsLeaveNothing(t *testing.T) {
	h, _, _ := fakeHub(t, func(in *api.WebhookConfig) { in.Chaos = &api.WebhookChaos{AfterPoll: true} }, ok200)
	for i := range MaxPending + 50 {
		h.Reached(ended("job-"+strconv.Itoa(i), start))
	}
	h.mu.Lock()
	n := len(h.polls)
	h.mu.Unlock()
	if n != MaxPending {
		t.Fatalf("%d jobs remembered for after_poll, want %d", n, MaxPending)
	}
}

// hanging is a loopback receiver that answers no attempt until answer is called (or the test
// ends), then 500 to every one; it records each attempt's webhook-timestamp.
func hanging(t *testing.T) (url string, stamps func() []string, answer func()) {
	release := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		got = append(got, req.Header.Get("webhook-timestamp"))
		mu.Unlock()
		select {
		case <-release:
		case <-req.Context().Done():
		}
		w.WriteHeader(500)
	}))
	answer = func() { once.Do(func() { close(release) }) }
	t.Cleanup(srv.Close)
	t.Cleanup(answer) // runs first, so the server's Close finds no handler blocked
	return srv.URL, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) }, answer
}

// drained waits until the hub's sender of a still clock has nothing due left.
func drained(t *testing.T, h *Hub) {
	t.Helper()
	h.mu.Lock()
	sending, idle := h.sending, h.idle
	h.mu.Unlock()
	if !sending {
		return
	}
	select {
	case <-idle:
	case <-time.After(time.Minute):
		t.Fatal("the deliveries due were never sent")
	}
}

// TestHangingReceiverDoesNotHoldTheMove: an advance that makes a whole retry schedule due on a
// receiver that never answers returns once its budget is spent, long before one attempt's
// timeout (before the fix it took the sum of them), and every attempt is still made after it,
// in order and stamped with its own instant, as a move that waited would have.
func TestHangingReceiverDoesNotHoldTheMove(t *testing.T) {
	c := clock.NewManual(start)
	c.SetMoveBudget(20 * time.Millisecond)
	url, stamps, answer := hanging(t)
	h := testHub(t, c, url, nil)
	told := record(h)
	h.Reached(ended("job-1", start))
	moved := make(chan error, 1)
	go func() { moved <- c.Advance(2 * time.Hour) }()
	select {
	case err := <-moved:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(AttemptTimeout / 2):
		t.Fatal("the advance waits for a receiver that never answers")
	}
	if !c.Now().Equal(start.Add(2 * time.Hour)) {
		t.Errorf("the clock is at %v after the advance", c.Now())
	}
	if s := h.Summary(); s.Attempts != 0 || s.Pending+s.InFlight != 1 {
		t.Errorf("after the advance: %+v, want the delivery due, none settled", s)
	}
	answer()
	drained(t, h)
	var want []string
	var at time.Time
	outcomes := []string{}
	for i, a := range told() {
		if i == 0 {
			at = start
		} else {
			at = at.Add(Schedule[i])
		}
		want = append(want, strconv.FormatInt(at.Unix(), 10))
		outcomes = append(outcomes, fmt.Sprint(a.Attempt, a.Outcome, a.At == at.Format(time.RFC3339Nano)))
	}
	if fmt.Sprint(stamps()) != fmt.Sprint(want) || len(want) != len(Schedule) {
		t.Errorf("timestamps %v, want the schedule's %v", stamps(), want)
	}
	if got := fmt.Sprint(outcomes); got != "[1retryingtrue 2retryingtrue 3retryingtrue 4retryingtrue 5retryingtrue 6retryingtrue 7gave_uptrue]" {
		t.Errorf("log %s", got)
	}
	if s := h.Summary(); s.Attempts != int64(len(Schedule)) || s.GaveUp != 1 || s.Pending != 0 {
		t.Errorf("summary %+v", s)
	}
}

// TestNoWaitMoveSendsAfter: a move made with clock.NoWait (a skipping clock's wait=true jump)
// returns without waiting at all, even within its budget; the delivery goes out after it.
func TestNoWaitMoveSendsAfter(t *testing.T) {
	c := clock.NewManual(start)
	url, stamps, answer := hanging(t)
	h := testHub(t, c, url, nil)
	told := record(h)
	h.Reached(ended("job-1", start))
	if err := c.SetContext(clock.NoWait(), start.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if s := h.Summary(); s.Attempts != 0 {
		t.Errorf("the move waited: %+v", s)
	}
	answer()
	drained(t, h)
	if got := told(); len(got) != 1 || got[0].At != start.Format(time.RFC3339Nano) || fmt.Sprint(stamps()) != fmt.Sprint([]int64{start.Unix()}) {
		t.Errorf("attempts %+v, stamps %v", got, stamps())
	}
}
