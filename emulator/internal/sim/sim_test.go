package sim

import (
	"context"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/config"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testConfig is a manual-clock, seeded configuration over the small test catalog.
func testConfig(t testing.TB) Config {
	t.Helper()
	data, err := os.ReadFile("../../../testdata/catalogs/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse("small.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse("default", []byte("name: default\n"))
	if err != nil {
		t.Fatal(err)
	}
	return Config{Catalog: cat, Scenario: sc, Scenarios: map[string]*scenario.Scenario{"default": sc},
		Settings: config.Settings{ManualClock: true, Start: start, Seeded: true, Seed: 7}}
}

func newTestTenants(t testing.TB, cfg Config) *Tenants {
	ts := NewTenants(cfg, ids.NewSeeded(cfg.Seed), media.NewCache(64<<20))
	t.Cleanup(ts.Close)
	return ts
}

func newTestWorld(t testing.TB) *World {
	return newTestTenants(t, testConfig(t)).Default().World()
}

func fox(n int) map[string]any {
	return map[string]any{"prompt": "a red fox", "num_images": n}
}

func codeOf(err error) problem.Code {
	if pe := problem.As(err); pe != nil {
		return pe.Code
	}
	return ""
}

func TestQuoteRules(t *testing.T) {
	tests := []struct {
		name    string
		model   string
		input   map[string]any
		code    problem.Code
		credits int64
	}{
		{"priced by table and count", "test/pixel", map[string]any{"prompt": "x", "num_images": 2, "image_size": "landscape_16_9"}, "", 6},
		{"defaults price too", "test/pixel", map[string]any{"prompt": "x"}, "", 2},
		{"unknown model", "test/nope", map[string]any{"prompt": "x"}, problem.ModelNotFound, 0},
		{"schema violation", "test/pixel", map[string]any{"prompt": "x", "num_images": 9}, problem.InvalidInput, 0},
		{"not ready", "test/legacy", map[string]any{"prompt": "x"}, problem.ModelUnavailable, 0},
		{"unknown outcome token", "test/pixel", map[string]any{"prompt": "[emulator:explode]"}, problem.InvalidInput, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newTestWorld(t)
			q, err := w.Quote("acct_a", tt.model, tt.input)
			if codeOf(err) != tt.code {
				t.Fatalf("code = %q (%v), want %q", codeOf(err), err, tt.code)
			}
			if err == nil && (q.Credits != tt.credits || !q.ExpiresAt.Equal(start.Add(10*time.Minute))) {
				t.Errorf("quote = %+v, want %d credits expiring at start+10m", q, tt.credits)
			}
			if err != nil && w.Quotes() != 0 {
				t.Errorf("a refused quote was kept")
			}
		})
	}
}

func TestGenerateRules(t *testing.T) {
	type step func(t *testing.T, w *World, quoteID string) Generation
	gen := func(account, key, model, quote string, input map[string]any) Generation {
		return Generation{Account: account, IdempotencyKey: key, Model: model, QuoteID: quote, Input: input}
	}
	tests := []struct {
		name      string
		prepare   func(t *testing.T, w *World)
		make      step
		code      problem.Code
		available int64 // acct_a's credits afterwards
	}{
		{"holds the quoted credits", nil,
			func(t *testing.T, w *World, q string) Generation { return gen("acct_a", "k", "test/pixel", q, fox(1)) }, "", 998},
		{"missing key", nil,
			func(t *testing.T, w *World, q string) Generation { return gen("acct_a", " ", "test/pixel", q, fox(1)) }, problem.MissingIdempotencyKey, 1000},
		{"another account's quote", nil,
			func(t *testing.T, w *World, q string) Generation { return gen("acct_b", "k", "test/pixel", q, fox(1)) }, problem.QuoteNotFound, 1000},
		{"other input", nil,
			func(t *testing.T, w *World, q string) Generation { return gen("acct_a", "k", "test/pixel", q, fox(2)) }, problem.QuoteMismatch, 1000},
		{"other model", nil,
			func(t *testing.T, w *World, q string) Generation {
				return gen("acct_a", "k", "test/pixel/edit", q, map[string]any{"prompt": "x", "image_url": "https://example.com/a.png"})
			}, problem.QuoteMismatch, 1000},
		{"valid at the instant it expires", func(t *testing.T, w *World) { mustAdvance(t, w, 10*time.Minute) },
			func(t *testing.T, w *World, q string) Generation { return gen("acct_a", "k", "test/pixel", q, fox(1)) }, "", 998},
		{"expired just after", func(t *testing.T, w *World) { mustAdvance(t, w, 10*time.Minute+time.Nanosecond) },
			func(t *testing.T, w *World, q string) Generation { return gen("acct_a", "k", "test/pixel", q, fox(1)) }, problem.QuoteExpired, 1000},
		{"too poor", func(t *testing.T, w *World) {
			if _, err := w.SetCredits("acct_a", 1); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, w *World, q string) Generation { return gen("acct_a", "k", "test/pixel", q, fox(1)) }, problem.InsufficientCredits, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newTestWorld(t)
			q, err := w.Quote("acct_a", "test/pixel", fox(1))
			if err != nil {
				t.Fatal(err)
			}
			if tt.prepare != nil {
				tt.prepare(t, w)
			}
			_, _, err = w.Generate(context.Background(), tt.make(t, w, q.ID))
			if codeOf(err) != tt.code {
				t.Fatalf("code = %q (%v), want %q", codeOf(err), err, tt.code)
			}
			b, _ := w.Ledger().Balance("acct_a")
			if b.Available != tt.available {
				t.Errorf("available = %d, want %d", b.Available, tt.available)
			}
		})
	}
}

func mustAdvance(t testing.TB, w *World, d time.Duration) {
	t.Helper()
	if err := w.Advance(d); err != nil {
		t.Fatal(err)
	}
}

func TestQuoteBuysOneGeneration(t *testing.T) {
	w := newTestWorld(t)
	q, _ := w.Quote("acct_a", "test/pixel", fox(1))
	g := Generation{Account: "acct_a", IdempotencyKey: "one", Model: "test/pixel", QuoteID: q.ID, Input: fox(1)}
	if _, _, err := w.Generate(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	g.IdempotencyKey = "two"
	if _, _, err := w.Generate(context.Background(), g); codeOf(err) != problem.QuoteAlreadyUsed {
		t.Fatalf("second generation on one quote: %v, want quote_already_used", err)
	}
}

func TestIdempotencyUnderConcurrency(t *testing.T) {
	w := newTestWorld(t)
	q, _ := w.Quote("acct_a", "test/pixel", fox(1))
	g := Generation{Account: "acct_a", IdempotencyKey: "same", Model: "test/pixel", QuoteID: q.ID, Input: fox(1)}
	const n = 32
	ids := make([]string, n)
	replays := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			v, replayed, err := w.Generate(context.Background(), g)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i], replays[i] = v.ID, replayed
		})
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if ids[i] != ids[0] {
			t.Fatalf("two jobs for one key: %s and %s", ids[0], ids[i])
		}
		if !replays[i] {
			fresh++
		}
	}
	if fresh != 1 || w.Jobs() != 1 {
		t.Errorf("%d fresh answers and %d jobs, want 1 and 1", fresh, w.Jobs())
	}
	if b, _ := w.Ledger().Balance("acct_a"); b.Held != 2 {
		t.Errorf("held = %d, want one hold of 2", b.Held)
	}
	other := g
	other.Input = fox(2) // another body
	if _, _, err := w.Generate(context.Background(), other); codeOf(err) != problem.IdempotencyKeyReused {
		t.Errorf("same key, other body: %v, want idempotency_key_reused", err)
	}
}

func TestLifecycleSettlesCredits(t *testing.T) {
	tests := []struct {
		outcome string
		status  jobs.Status
		credit  string
	}{
		{"succeed", jobs.Succeeded, jobs.CreditsCharged},
		{"fail", jobs.Failed, jobs.CreditsRefunded},
		{"expire", jobs.Expired, jobs.CreditsRefunded},
	}
	for _, tt := range tests {
		t.Run(tt.outcome, func(t *testing.T) {
			w := newTestWorld(t)
			q, _ := w.Quote("acct_a", "test/pixel", fox(1))
			v, _, err := w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: "k", Model: "test/pixel",
				QuoteID: q.ID, Input: fox(1), Outcome: tt.outcome})
			if err != nil {
				t.Fatal(err)
			}
			mustAdvance(t, w, 2*time.Minute)
			v, err = w.Job("acct_a", v.ID)
			if err != nil {
				t.Fatal(err)
			}
			if v.Status != tt.status || v.CreditStatus != tt.credit {
				t.Errorf("job %s/%s, want %s/%s", v.Status, v.CreditStatus, tt.status, tt.credit)
			}
			b, _ := w.Ledger().Balance("acct_a")
			if b.Held != 0 || b.Total() != 1000 {
				t.Errorf("balance %+v: nothing may stay held, and no credit may appear or vanish", b)
			}
			if _, err := w.Job("acct_b", v.ID); codeOf(err) != problem.JobNotFound {
				t.Errorf("another account sees the job: %v", err)
			}
		})
	}
}

func TestWaitWakesOnTheEnd(t *testing.T) {
	w := newTestWorld(t)
	q, _ := w.Quote("acct_a", "test/pixel", fox(1))
	v, _, err := w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: "k", Model: "test/pixel", QuoteID: q.ID, Input: fox(1)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan jobs.View)
	go func() { done <- w.Wait(context.Background(), v, nil) }()
	if n, ok := w.AwaitWaiting(context.Background(), 1, nil); !ok || n != 1 {
		t.Fatalf("AwaitWaiting = %d, %v", n, ok)
	}
	mustAdvance(t, w, 5*time.Second)
	if got := <-done; got.Status != jobs.Succeeded {
		t.Errorf("wait returned %s, want succeeded", got.Status)
	}
	if w.Waiting() != 0 {
		t.Errorf("waiting = %d after the wait", w.Waiting())
	}
}

func TestForceAndCancel(t *testing.T) {
	w := newTestWorld(t)
	newJob := func(key string) jobs.View {
		q, _ := w.Quote("acct_a", "test/pixel", fox(1))
		v, _, err := w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: key, Model: "test/pixel", QuoteID: q.ID, Input: fox(1)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a, b, c := newJob("a"), newJob("b"), newJob("c")
	if v, err := w.Force(a.ID, jobs.Succeeded, nil); err != nil || v.Status != jobs.Succeeded || len(v.Outputs) != 1 {
		t.Errorf("force complete: %+v %v", v, err)
	}
	if v, err := w.Force(b.ID, jobs.Failed, nil); err != nil || v.Error == nil || v.Error.Code != "generation_failed" {
		t.Errorf("force fail: %+v %v", v, err)
	}
	if _, err := w.Cancel("acct_b", c.ID); codeOf(err) != problem.JobNotFound {
		t.Errorf("cancel by another account: %v", err)
	}
	if v, err := w.Cancel("acct_a", c.ID); err != nil || v.Status != jobs.Canceled {
		t.Errorf("cancel: %+v %v", v, err)
	}
	if _, err := w.Cancel("acct_a", c.ID); codeOf(err) != problem.JobNotCancelable {
		t.Errorf("cancel twice: %v", err)
	}
	if _, err := w.Force("nope", jobs.Succeeded, nil); codeOf(err) != problem.JobNotFound {
		t.Errorf("force unknown: %v", err)
	}
	if b, _ := w.Ledger().Balance("acct_a"); b.Held != 0 || b.Charged != 2 || b.Available != 998 {
		t.Errorf("balance %+v, want one charge of 2 and the rest refunded", b)
	}
}

func TestFileLookup(t *testing.T) {
	w := newTestWorld(t)
	q, _ := w.Quote("acct_a", "test/pixel", fox(1))
	v, _, _ := w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: "k", Model: "test/pixel", QuoteID: q.ID, Input: fox(1)})
	if _, err := w.File(v.ID, "0.png"); codeOf(err) != problem.NotFound {
		t.Errorf("file of an unfinished job: %v", err)
	}
	mustAdvance(t, w, 5*time.Second)
	f, err := w.File(v.ID, "0.png")
	if err != nil || len(f.Data) == 0 {
		t.Fatalf("file: %v", err)
	}
	v, _ = w.Job("acct_a", v.ID)
	if int64(len(f.Data)) != v.Outputs[0].SizeBytes {
		t.Errorf("file is %d bytes, the job says %d", len(f.Data), v.Outputs[0].SizeBytes)
	}
	for _, name := range []string{"1.png", "0.jpg", "00.png", "-1.png", "x"} {
		if _, err := w.File(v.ID, name); codeOf(err) != problem.NotFound {
			t.Errorf("%s: %v, want not_found", name, err)
		}
	}
	mustAdvance(t, w, time.Hour)
	if _, err := w.File(v.ID, "0.png"); codeOf(err) != problem.OutputExpired {
		t.Errorf("after the output TTL: %v, want output_expired", err)
	}
}

func TestTenants(t *testing.T) {
	cfg := testConfig(t)
	cfg.Wall = clock.NewManual(start)
	tick := func(d time.Duration) { mustAdvanceClock(t, cfg.Wall, d) }
	cfg.MaxTenants = 2
	cfg.TenantIdle = time.Minute
	ts := NewTenants(cfg, ids.NewSeeded(1), media.NewCache(64<<20))
	t.Cleanup(ts.Close)

	for _, bad := range []string{"", "a.b", "ü", string(make([]byte, 65))} {
		if bad == "" {
			continue // empty means the default tenant
		}
		if _, err := ts.Get(bad); codeOf(err) != problem.InvalidTenant {
			t.Errorf("Get(%q): %v, want invalid_tenant", bad, err)
		}
	}
	a, err := ts.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := ts.Get("a"); again != a {
		t.Error("a second Get made another tenant")
	}
	if _, err := ts.Get("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Get("c"); codeOf(err) != problem.TooManyTenants {
		t.Fatalf("third named tenant over a bound of 2: %v, want too_many_tenants", err)
	}
	// a stays busy; b idles out and makes room.
	a.Enter()
	tick(2 * time.Minute)
	if _, err := ts.Get("c"); err != nil {
		t.Fatalf("after b idled out: %v", err)
	}
	if _, ok := ts.Lookup("b"); ok {
		t.Error("idle tenant b is still there")
	}
	if _, ok := ts.Lookup("a"); !ok {
		t.Error("busy tenant a was dropped")
	}
	a.Leave()
	if err := ts.Delete(DefaultTenant); codeOf(err) != problem.TenantNotDeletable {
		t.Errorf("delete default: %v", err)
	}
	if err := ts.Delete("zzz"); codeOf(err) != problem.TenantNotFound {
		t.Errorf("delete unknown: %v", err)
	}
	w := a.World()
	if err := ts.Delete("a"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Gone():
	default:
		t.Error("a deleted tenant's world was not retired")
	}
	names := []string{}
	for _, info := range ts.List() {
		names = append(names, info.Name)
	}
	if len(names) != 2 || names[0] != DefaultTenant || names[1] != "c" {
		t.Errorf("tenants = %v, want [default c]", names)
	}
}

func mustAdvanceClock(t testing.TB, c *clock.Clock, d time.Duration) {
	t.Helper()
	if err := c.Advance(d); err != nil {
		t.Fatal(err)
	}
}

// TestIdleTenantsAreSweptWithoutRequests: the periodic sweep drops a tenant idle for longer
// than the idle time even when no request comes to make or list tenants, and keeps one with a
// request in progress.
func TestIdleTenantsAreSweptWithoutRequests(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Wall = clock.NewManual(start)
	cfg.MaxTenants = 10
	cfg.TenantIdle = time.Minute
	ts := NewTenants(cfg, ids.NewSeeded(1), media.NewCache(64<<20))
	t.Cleanup(ts.Close)
	idle, _ := ts.Get("idle")
	busy, _ := ts.Get("busy")
	busy.Enter()
	gone := idle.World().Gone()
	mustAdvanceClock(t, cfg.Wall, 59*time.Second)
	if _, ok := ts.Lookup("idle"); !ok {
		t.Fatal("a tenant was dropped before its idle time was over")
	}
	mustAdvanceClock(t, cfg.Wall, 7*time.Second)
	if _, ok := ts.Lookup("idle"); ok {
		t.Error("a tenant idle for over a minute was not swept")
	}
	select {
	case <-gone:
	default:
		t.Error("the swept tenant's world was not retired")
	}
	if _, ok := ts.Lookup("busy"); !ok {
		t.Error("a tenant with a request in progress was swept")
	}
	busy.Leave()
	mustAdvanceClock(t, cfg.Wall, 2*time.Minute)
	if _, ok := ts.Lookup("busy"); ok {
		t.Error("a tenant idle since its last request ended was not swept")
	}
	if _, ok := ts.Lookup(DefaultTenant); !ok {
		t.Error("the default tenant was swept")
	}
}

func TestTenantsAreReproducibleAlone(t *testing.T) {
	cfg := testConfig(t)
	run := func(noise bool) (string, string) {
		ts := newTestTenants(t, cfg)
		if noise {
			other, _ := ts.Get("other")
			ow := other.World()
			for i := range 5 {
				if _, err := ow.Quote("acct_a", "test/pixel", fox(1+i%3)); err != nil {
					t.Fatal(err)
				}
			}
		}
		tn, err := ts.Get("mine")
		if err != nil {
			t.Fatal(err)
		}
		w := tn.World()
		q, _ := w.Quote("acct_a", "test/pixel", fox(1))
		v, _, err := w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: "k", Model: "test/pixel", QuoteID: q.ID, Input: fox(1)})
		if err != nil {
			t.Fatal(err)
		}
		mustAdvance(t, w, 5*time.Second)
		f, err := w.File(v.ID, "0.png")
		if err != nil {
			t.Fatal(err)
		}
		return q.ID + "/" + v.ID, string(f.Data)
	}
	id1, data1 := run(false)
	id2, data2 := run(true)
	if id1 != id2 || data1 != data2 {
		t.Errorf("a tenant's ids or bytes changed with another tenant's traffic: %s vs %s", id1, id2)
	}
}

func TestResetIsPerTenant(t *testing.T) {
	ts := newTestTenants(t, testConfig(t))
	a, _ := ts.Get("a")
	b, _ := ts.Get("b")
	for _, tn := range []*Tenant{a, b} {
		if _, err := tn.World().Quote("acct_a", "test/pixel", fox(1)); err != nil {
			t.Fatal(err)
		}
	}
	mustAdvance(t, b.World(), time.Minute)
	old := a.World()
	fresh := a.Reset()
	if fresh.Quotes() != 0 || old == fresh {
		t.Errorf("reset kept %d quotes", fresh.Quotes())
	}
	if b.World().Quotes() != 1 || !b.World().Now().Equal(start.Add(time.Minute)) {
		t.Errorf("resetting a changed b: %d quotes at %s", b.World().Quotes(), b.World().Now())
	}
	if !a.World().Now().Equal(start) {
		t.Errorf("a's clock after reset: %s", a.World().Now())
	}
}

func TestAwaitWaitingGivesUp(t *testing.T) {
	w := newTestWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, ok := w.AwaitWaiting(ctx, 1, nil); ok || n != 0 {
		t.Errorf("AwaitWaiting with an ended context = %d, %v", n, ok)
	}
	if _, ok := w.AwaitWaiting(context.Background(), 0, nil); !ok {
		t.Error("zero waiters is reached at once")
	}
}

// TestWaitThen: a parked generation is answered once, by its job's end, by the wait limit on the
// world's clock, or by a reset; it counts as waiting until then.
func TestWaitThen(t *testing.T) {
	generateOne := func(t *testing.T, w *World, outcome string) jobs.View {
		q, _ := w.Quote("acct_a", "test/pixel", fox(1))
		v, _, err := w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: "k", Model: "test/pixel",
			QuoteID: q.ID, Input: fox(1), Outcome: outcome})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Run("the job ends", func(t *testing.T) {
		w := newTestWorld(t)
		answered := make(chan jobs.View, 2)
		w.WaitThen(generateOne(t, w, ""), func(v jobs.View) { answered <- v })
		if w.Waiting() != 1 {
			t.Fatalf("waiting = %d", w.Waiting())
		}
		mustAdvance(t, w, 5*time.Second)
		if v := <-answered; v.Status != jobs.Succeeded {
			t.Errorf("answered with %s", v.Status)
		}
		if n, _ := w.AwaitWaiting(context.Background(), 0, nil); n != 0 {
			t.Errorf("waiting = %d after the answer", n)
		}
	})
	t.Run("the limit passes", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.MaxWait = time.Minute
		w := newTestTenants(t, cfg).Default().World()
		answered := make(chan jobs.View, 2)
		w.WaitThen(generateOne(t, w, "slow"), func(v jobs.View) { answered <- v })
		mustAdvance(t, w, time.Minute)
		if v := <-answered; v.Status.Terminal() {
			t.Errorf("answered with %s; a slow job is still going", v.Status)
		}
	})
	t.Run("the job ends and goes in one step", func(t *testing.T) {
		// The answer is the job as it ended, though the same clock step also dropped it.
		cfg := testConfig(t)
		cfg.MaxWait = time.Hour
		cfg.JobRetention, cfg.OutputTTL = time.Minute, time.Minute // a job is kept at least as long as its outputs
		w := newTestTenants(t, cfg).Default().World()
		answered := make(chan jobs.View, 2)
		v := generateOne(t, w, "")
		w.WaitThen(v, func(v jobs.View) { answered <- v })
		mustAdvance(t, w, 10*time.Minute)
		if _, err := w.JobAny(v.ID); err == nil {
			t.Fatal("the job is still held; the test needs it gone")
		}
		if v := <-answered; v.Status != jobs.Succeeded || len(v.Outputs) == 0 {
			t.Errorf("answered with %s, %d outputs", v.Status, len(v.Outputs))
		}
	})
	// A reset, a drop or an idle sweep retires the world: its waiters are answered then, with
	// their job as it stands, long before the wait limit (an hour here) could answer them. The
	// bubble's goroutines all settle before the check, so it sees an answer only if the retiring
	// made one.
	retire := map[string]func(t *testing.T, ts *Tenants, tn *Tenant, wall *clock.Clock){
		"a reset": func(t *testing.T, ts *Tenants, tn *Tenant, wall *clock.Clock) { tn.Reset() },
		"a drop": func(t *testing.T, ts *Tenants, tn *Tenant, wall *clock.Clock) {
			if err := ts.Delete(tn.Name()); err != nil {
				t.Fatal(err)
			}
		},
		"an idle sweep": func(t *testing.T, ts *Tenants, tn *Tenant, wall *clock.Clock) {
			mustAdvanceClock(t, wall, 2*config.DefaultTenantIdle)
		},
	}
	for name, retire := range retire {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig(t)
				cfg.MaxWait = time.Hour
				cfg.Wall = clock.NewManual(start)
				ts := newTestTenants(t, cfg)
				tn, err := ts.Get("waits")
				if err != nil {
					t.Fatal(err)
				}
				w := tn.World()
				answered := make(chan jobs.View, 2)
				wt := w.WaitThen(generateOne(t, w, ""), func(v jobs.View) { answered <- v })
				synctest.Wait()
				if len(answered) != 0 || w.Waiting() != 1 {
					t.Fatalf("answered %d times before the world was retired; %d waiting", len(answered), w.Waiting())
				}
				retire(t, ts, tn, cfg.Wall)
				synctest.Wait()
				if len(answered) != 1 {
					t.Fatalf("answered %d times once the world was retired, want once", len(answered))
				}
				if v := <-answered; v.Status != jobs.Queued {
					t.Errorf("answered with %s, want the job as it stood (queued)", v.Status)
				}
				if w.Waiting() != 0 {
					t.Errorf("%d still waiting after the answer", w.Waiting())
				}
				wt.End() // a second end does nothing
				synctest.Wait()
				if len(answered) != 0 {
					t.Error("answered twice")
				}
			})
		})
	}
}

// TestResetNeverServesAnEarlierWorldsFile: under a seed, ids start over after a reset, so a new
// job can have an earlier job's id and file path; its download must be its own file, not the
// earlier one still in the shared cache.
func TestResetNeverServesAnEarlierWorldsFile(t *testing.T) {
	tn := newTestTenants(t, testConfig(t)).Default()
	download := func(w *World, input map[string]any) (int64, []byte) {
		q, err := w.Quote("acct_a", "test/pixel", input)
		if err != nil {
			t.Fatal(err)
		}
		v, _, err := w.Generate(context.Background(), Generation{Account: "acct_a", IdempotencyKey: "k", Model: "test/pixel", QuoteID: q.ID, Input: input})
		if err != nil {
			t.Fatal(err)
		}
		mustAdvance(t, w, 5*time.Second)
		v, _ = w.Job("acct_a", v.ID)
		f, err := w.File(v.ID, "0.png")
		if err != nil {
			t.Fatal(err)
		}
		return v.Outputs[0].SizeBytes, f.Data
	}
	_, before := download(tn.World(), map[string]any{"prompt": "square", "image_size": "square"})
	size, after := download(tn.Reset(), map[string]any{"prompt": "wide", "image_size": "landscape_16_9"})
	if int64(len(after)) != size || string(after) == string(before) {
		t.Errorf("after a reset the download is %d bytes (the job says %d): an earlier world's file", len(after), size)
	}
}

// TestCompleteConfig: the core takes the settings' defaults from the one applier, and makes
// the budget every store shares from the memory budget, given or defaulted.
func TestCompleteConfig(t *testing.T) {
	c := Config{}.complete()
	if want := (config.Settings{}).WithDefaults(); c.MaxWait != want.MaxWait || c.MaxJobs != want.MaxJobs || !c.Start.Equal(want.Start) || c.Logger == nil {
		t.Errorf("the settings' defaults were not applied: %+v", c.Settings)
	}
	if c.Budget.Limit() != config.DefaultMemoryBudget || c.JournalMax != JournalEntries || c.Coverage == nil || c.maker == nil {
		t.Errorf("the wiring of a zero Config: budget %d, journal %d, coverage %v", c.Budget.Limit(), c.JournalMax, c.Coverage)
	}
	if c := (Config{Settings: config.Settings{MemoryBudget: 5 << 20}}).complete(); c.Budget.Limit() != 5<<20 {
		t.Errorf("budget %d from a memory budget of 5 MiB", c.Budget.Limit())
	}
}

// TestLateRequestFindsANewTenant: a request that found a tenant just before the idle sweep
// dropped it is told so when it enters, and finding the tenant again makes a new one; the
// dropped world is not used.
func TestLateRequestFindsANewTenant(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Wall = clock.NewManual(start)
	cfg.MaxTenants = 10
	cfg.TenantIdle = time.Minute
	ts := NewTenants(cfg, ids.NewSeeded(1), media.NewCache(64<<20))
	t.Cleanup(ts.Close)
	found, _ := ts.Get("late") // found, not yet entered
	mustAdvanceClock(t, cfg.Wall, 2*time.Minute)
	if _, ok := ts.Lookup("late"); ok {
		t.Fatal("the idle tenant was not swept")
	}
	if found.Enter() {
		t.Fatal("a swept tenant was entered")
	}
	again, err := ts.Get("late")
	if err != nil || again == found {
		t.Fatalf("finding the tenant again: %v, same tenant %v", err, again == found)
	}
	if !again.Enter() {
		t.Fatal("the new tenant could not be entered")
	}
	again.Leave()
	// A request under way when its tenant is deleted leaves normally; one after it comes too late.
	if err := ts.Delete("late"); err != nil {
		t.Fatal(err)
	}
	if again.Enter() {
		t.Error("a deleted tenant was entered")
	}
}

// TestResetAfterDropMakesNoWorld: a reset that loses the race with a DELETE or Close leaves
// no world behind with its clock running, and Close still returns.
func TestResetAfterDropMakesNoWorld(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ManualClock = true
	cfg.MaxTenants = 10
	cfg.TenantIdle = time.Minute
	ts := NewTenants(cfg, ids.NewSeeded(1), media.NewCache(64<<20))
	a, _ := ts.Get("a")
	old := a.World()
	if err := ts.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if w := a.Reset(); w != old {
		t.Error("a reset after the tenant was deleted made a new world")
	}
	d := ts.Default()
	ts.Close()
	before := d.World()
	if w := d.Reset(); w != before {
		t.Error("a reset after Close made a new world")
	}
	select {
	case <-before.clock.Exited():
	default:
		t.Error("the closed tenant's clock still runs")
	}
}

// TestSnapshotKeepsLatencyDraws: a restored tenant draws the answer delays the original would
// have drawn next, rather than starting each latency rule over.
func TestSnapshotKeepsLatencyDraws(t *testing.T) {
	t.Parallel()
	ts := newTestTenants(t, testConfig(t))
	sc, err := scenario.Parse("lat.yaml", []byte("name: lat\nlatency:\n  - match: {path: /v1/models}\n    delay: {uniform: {min: 1ms, max: 1s}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ts.Get("a")
	a.World().UseScenario(sc)
	for range 3 {
		a.World().AnswerDelay("GET", "/v1/models", nil)
	}
	doc := a.World().Snapshot(false)
	if len(doc.Random.Latency) != 1 || doc.Random.Latency[0] != 3 {
		t.Fatalf("latency draws in the snapshot: %v, want [3]", doc.Random.Latency)
	}
	b, _ := ts.Get("b")
	if _, err := b.Restore(&doc); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		want, got := a.World().AnswerDelay("GET", "/v1/models", nil), b.World().AnswerDelay("GET", "/v1/models", nil)
		if got != want {
			t.Errorf("draw %d after the restore: %v, want %v", i+4, got, want)
		}
	}
}
