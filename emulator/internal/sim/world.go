package sim

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evolve"
	"github.com/mediagen/mediagen-emulator/emulator/internal/faults"
	"github.com/mediagen/mediagen-emulator/emulator/internal/idempotency"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/quotes"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ratelimit"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
	"github.com/mediagen/mediagen-emulator/emulator/internal/webhooks"
)

// Bounds of a world's stores, each per tenant.
const (
	// JournalEntries and JournalBytes bound the request journal; older entries go first.
	JournalEntries = 10_000
	JournalBytes   = 8 << 20
	// QuotesPerAccount and QuoteBytesPerAccount bound the live (unexpired, unused) quotes of
	// one account.
	QuotesPerAccount     = quotes.DefaultLiveLimit
	QuoteBytesPerAccount = 512 << 20
)

// quoteLimits are the quote store's bounds: live quotes as above, and markers of spent and
// expired quotes remembered as long as jobs are.
func quoteLimits(retention time.Duration) quotes.Limits {
	l := quotes.DefaultLimits
	l.PerAccount, l.PerAccountBytes, l.Remember = QuotesPerAccount, QuoteBytesPerAccount, retention
	return l
}

// World is everything one tenant's reset puts back: the clock and all it drives. A request uses
// one world from start to end, so a reset never mixes the old and the new within a request.
type World struct {
	cfg   *Config
	ids   *ids.Generator
	files *media.Cache
	path  string // the prefix of the world's file paths: /files/ or /files/{tenant}/
	// cacheKey sets this world's files apart in the shared cache: after a reset a seeded world
	// makes the same ids, and so the same paths, for jobs that may be different.
	cacheKey string

	clock   *clock.Clock
	ledger  *ledger.Ledger
	quotes  *quotes.Store
	idem    *idempotency.Store
	jobs    *jobs.Engine
	faults  *faults.Set
	limiter *ratelimit.Limiter
	journal *evidence.Journal
	hooks   *webhooks.Hub // webhook deliveries (webhooks.go)
	uploads *uploadStore  // files sent to POST /v1/uploads (media_uploads.go)
	base    atomic.Value  // string: the scheme and host clients reach the emulator by

	scenario atomic.Pointer[scenario.Scenario]
	// tuned is the scenario with the adversity plan's knobs turned, nil when they turn none;
	// tuneMu orders its making.
	tuned  atomic.Pointer[scenario.Scenario]
	tuneMu sync.Mutex
	// tunedFrom is the scenario and the knobs tuned was made of, so a change to the plan that
	// leaves both as they were keeps the same tuned scenario (and its seeded latency draws).
	tunedFrom struct {
		base  *scenario.Scenario
		knobs api.Knobs
	}
	waiting atomic.Int64 // generations blocked waiting for their job
	stale   staleFiles   // files last asked for at an expired link (links.go)

	waitingChanged signal

	parkMu  sync.Mutex
	parked  map[*Waiter]struct{} // generations waiting without a goroutine (WaitThen)
	retired bool

	// version counts changes to the world, marks holds it at each part's latest change, and
	// changed wakes whoever watches them (events.go).
	version atomic.Uint64
	marks   [len(partNames)]atomic.Uint64
	changed signal

	// gone is closed when a reset, a drop or shutdown retires this world, waking long waits.
	gone     chan struct{}
	goneOnce sync.Once

	mu       sync.Mutex
	quoteSeq map[string]uint64 // per account, for seeded quote ids
	// latencySeq counts the answers each latency rule of latencyOf has delayed; a new scenario
	// starts the counts afresh.
	latencySeq []uint64
	latencyOf  *scenario.Scenario

	// coverage counts the contract's cases seen in this world, and adds them to the run's.
	coverage *evidence.Counts

	// evolution is the forward-compatibility mode's additions, drawn from the world's seed when
	// first asked for (evolve.go).
	evolution struct {
		once    sync.Once
		kit     *evolve.Kit
		evolved *catalog.Model
	}

	expectMu sync.Mutex
	expected []*evidence.Pattern // the error answers a test declared it expects; guarded by expectMu

	// gate lets a snapshot see the world stand still: every change made on a request's behalf
	// holds it shared, a snapshot holds it alone (with the clock's callbacks held too).
	gate sync.RWMutex
}

// MaxExpected bounds the expected-error patterns a world holds.
const MaxExpected = 100

// Coverage is the world's count of the contract's cases.
func (w *World) Coverage() *evidence.Counts { return w.coverage }

// Expect adds an expected-error pattern and returns them all; past MaxExpected it refuses.
func (w *World) Expect(p *evidence.Pattern) ([]*evidence.Pattern, error) {
	// Admitted before the lock: the budget may count the world, which reads the patterns.
	if err := w.admit(p.Bytes()); err != nil {
		return nil, err
	}
	w.expectMu.Lock()
	defer w.expectMu.Unlock()
	if len(w.expected) >= MaxExpected {
		return nil, problem.New(problem.InvalidRequest, "a tenant holds at most %d expected errors; DELETE /_emulator/expected-errors clears them", MaxExpected)
	}
	w.expected = append(w.expected, p)
	return slices.Clone(w.expected), nil
}

// Expected returns the expected-error patterns, in the order added.
func (w *World) Expected() []*evidence.Pattern {
	w.expectMu.Lock()
	defer w.expectMu.Unlock()
	return slices.Clone(w.expected)
}

// expectedBytes is what the expected-error patterns hold, as counted against the memory budget.
func (w *World) expectedBytes() int64 {
	w.expectMu.Lock()
	defer w.expectMu.Unlock()
	var n int64
	for _, p := range w.expected {
		n += p.Bytes()
	}
	return n
}

// ClearExpected forgets every expected-error pattern.
func (w *World) ClearExpected() {
	w.expectMu.Lock()
	defer w.expectMu.Unlock()
	w.expected = nil
}

// newWorld builds a world at the configured start; a clock or ledger given (a snapshot's)
// replaces the configured one.
func newWorld(cfg *Config, g *ids.Generator, c *clock.Clock, l *ledger.Ledger, files *media.Cache, path, cacheKey string) *World {
	if c == nil && (cfg.ManualClock || cfg.SkipClock) {
		c = clock.NewAt(cfg.clockMode(), cfg.Start)
	} else if c == nil {
		c = clock.NewReal()
	}
	if l == nil {
		start := make(map[string]int64, len(cfg.Catalog.Accounts))
		for _, a := range cfg.Catalog.Accounts {
			start[a.ID] = a.Credits
		}
		l = ledger.New(start)
	}
	w := &World{
		cfg:      cfg,
		ids:      g,
		files:    files,
		cacheKey: cacheKey,
		path:     path,
		clock:    c,
		ledger:   l,
		quotes:   quotes.NewBounded(c, quoteLimits(cfg.JobRetention)),
		idem:     idempotency.NewStore(c, cfg.MaxJobs),
		coverage: evidence.NewCounts(cfg.Coverage),
		faults:   faults.New(g.Float64),
		limiter:  ratelimit.New(),
		journal:  evidence.NewBounded(cfg.JournalMax, JournalBytes),
		gone:     make(chan struct{}),
		quoteSeq: map[string]uint64{},
		uploads:  newUploadStore(),
	}
	w.hooks = w.newHub()
	w.jobs = jobs.NewEngine(c, l, jobs.Options{Retention: cfg.JobRetention, MaxJobs: cfg.MaxJobs,
		OnChange:   func() { w.Changed(PartJobs | PartAccounts) },
		OnTerminal: func(s jobs.Status, code string) { w.coverage.JobEnded(string(s), code) },
		Observer:   w.hooks})
	w.journal.OnChange(func() { w.Changed(PartJournal) })
	w.UseScenario(cfg.Scenario)
	return w
}

// retire stops the world's clock and wakes everyone waiting in it.
func (w *World) retire() {
	w.goneOnce.Do(func() {
		close(w.gone)
		w.clock.Close()
		w.hooks.Close()
		w.endParked()
	})
}

// Gone is closed once the world has been reset away, dropped or shut down.
func (w *World) Gone() <-chan struct{} { return w.gone }

// Now is the world's current time.
func (w *World) Now() time.Time { return w.clock.Now() }

// Manual reports whether the world's time stands still until moved (manual or skip).
func (w *World) Manual() bool { return w.clock.Manual() }

// ClockMode is how the world's time moves now.
func (w *World) ClockMode() clock.Mode { return w.clock.Mode() }

// SetClockMode changes how the world's time moves from now on; a reset puts the configured
// mode back.
func (w *World) SetClockMode(m clock.Mode) {
	defer w.Changed(PartClock)
	w.clock.SetMode(m)
}

// Advance moves the world's time forward and returns once everything that fell due happened.
func (w *World) Advance(d time.Duration) error { return w.advance(context.Background(), d) }

// advance is Advance whose wait for webhook deliveries ends with ctx, or the move's budget.
func (w *World) advance(ctx context.Context, d time.Duration) error {
	defer w.Changed(PartClock)
	return w.clock.AdvanceContext(ctx, d)
}

// SetTime moves the world's time forward to t, like Advance.
func (w *World) SetTime(t time.Time) error { return w.setTime(context.Background(), t) }

// setTime is SetTime whose wait for webhook deliveries ends like advance's.
func (w *World) setTime(ctx context.Context, t time.Time) error {
	defer w.Changed(PartClock)
	return w.clock.SetContext(ctx, t)
}

// Clock is the world's clock itself, for benchmarks that schedule markers on it.
func (w *World) Clock() *clock.Clock { return w.clock }

// Scenario is the scenario in force.
func (w *World) Scenario() *scenario.Scenario { return w.scenario.Load() }

// UseScenario puts a scenario in force: its faults replace the previous scenario's (faults added
// through the control API stay), and rate-limit windows start afresh.
func (w *World) UseScenario(sc *scenario.Scenario) { _ = w.useScenario(sc, false) }

// useScenario is UseScenario; with bounded, a scenario whose faults with the API's would be
// past the bounds of a tenant's rules changes nothing and is refused.
func (w *World) useScenario(sc *scenario.Scenario, bounded bool) error {
	if err := w.faults.ReplaceSource("scenario", sc.Plan, bounded); err != nil {
		return faultsFull()
	}
	w.scenario.Store(sc)
	w.retune()
	w.limiter.Reset()
	if c := sc.Webhook(); c != nil {
		w.hooks.Configure(w.withRunSecret(c))
	}
	w.Changed(PartScenario)
	return nil
}

// inlineScenarioCost is what one byte of a scenario document sent inline costs the heap while
// it is in force: the document, kept for snapshots, and the scenario decoded from it.
const inlineScenarioCost = 4

// inlineScenarioBytes is what a scenario sent inline holds against the memory budget; one the
// emulator was given is shared by every tenant and counted by none.
func inlineScenarioBytes(sc *scenario.Scenario) int64 {
	return int64(len(sc.Document)) * inlineScenarioCost
}

// scenarioBytes is what the scenario in force holds against the memory budget.
func (w *World) scenarioBytes() int64 {
	if sc := w.scenario.Load(); sc != nil && !w.knownScenario(sc) {
		return inlineScenarioBytes(sc)
	}
	return 0
}

// Faults is the world's set of fault rules, for the control API to list and change.
func (w *World) Faults() *faults.Set { return w.faults }

// Journal is the world's request journal.
func (w *World) Journal() *evidence.Journal { return w.journal }

// Ledger is the world's credit ledger.
func (w *World) Ledger() *ledger.Ledger { return w.ledger }

// Waiting counts the generations blocked waiting for their job to end.
func (w *World) Waiting() int64 { return w.waiting.Load() }

// MaxWait is the longest a generation waits for its job, defaults applied.
func (w *World) MaxWait() time.Duration { return w.cfg.MaxWait }

// addWaiting changes the count of waiting generations and wakes whoever watches it.
func (w *World) addWaiting(d int64) {
	w.waiting.Add(d)
	w.waitingChanged.fire()
}

// AwaitWaiting blocks until at least n generations are waiting for their job, ctx ends, stop is
// closed or the world is retired. It returns the count and whether it reached n. Tests use it to
// advance a manual clock only once their wait=true request has begun.
func (w *World) AwaitWaiting(ctx context.Context, n int64, stop <-chan struct{}) (int64, bool) {
	return w.awaitWaiting(ctx, func(cur int64) bool { return cur >= n }, stop)
}

// AwaitWaitingExactly is AwaitWaiting for exactly n, so a test can also see waits end.
func (w *World) AwaitWaitingExactly(ctx context.Context, n int64, stop <-chan struct{}) (int64, bool) {
	return w.awaitWaiting(ctx, func(cur int64) bool { return cur == n }, stop)
}

// awaitWaiting blocks until the count of waiting generations satisfies done.
func (w *World) awaitWaiting(ctx context.Context, done func(int64) bool, stop <-chan struct{}) (int64, bool) {
	for {
		changed := w.waitingChanged.next()
		if cur := w.waiting.Load(); done(cur) {
			return cur, true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return w.waiting.Load(), false
		case <-stop:
			return w.waiting.Load(), false
		case <-w.gone:
			return w.waiting.Load(), false
		}
	}
}

// Jobs counts the jobs the world holds.
func (w *World) Jobs() int { return w.jobs.Len() }

// Quotes counts the quotes the world holds.
func (w *World) Quotes() int { return w.quotes.Len() }

// RequestID returns an id for a request that arrived without one.
func (w *World) RequestID() string { return w.ids.RequestID() }

// SetCredits sets what an account can spend; held and charged credits stay.
func (w *World) SetCredits(account string, credits int64) (ledger.Balance, error) {
	defer w.Changed(PartAccounts)
	w.gate.RLock()
	defer w.gate.RUnlock()
	b, err := w.ledger.SetAvailable(account, credits)
	if err != nil {
		return b, accountError(account, err)
	}
	w.journal.AddNote(evidence.Note{Kind: evidence.CreditsSet, Time: w.Now(), Account: account}, 0)
	return b, nil
}

// Judge judges the client's behaviour in this world from its log (see evidence.Judge): how
// many events it examined, and what it found.
func (w *World) Judge() (int, []api.Finding) {
	log, dropped := w.journal.Log()
	findings := evidence.Judge(evidence.Input{Log: log, Dropped: dropped, Job: w.jobNow, Now: w.Now(), Still: w.clock.Manual(), Skips: w.clock.Mode() == clock.Skip, DeprecatedAt: w.deprecatedAt,
		Expected: w.Expected()})
	return len(log), findings
}

// jobNow is what the report needs of a job as it stands.
func (w *World) jobNow(id string) (evidence.JobNow, bool) {
	v, ok := w.jobs.Get("", id)
	if !ok {
		return evidence.JobNow{}, false
	}
	out := evidence.JobNow{Status: string(v.Status)}
	if v.Status == jobs.Succeeded {
		out.OutputsExpireAt = v.OutputsExpireAt
	}
	return out, true
}

// NeedsModel reports whether a fault or rate-limit rule in force matches on models, so the
// transport knows whether it must find a request's model before the gate.
func (w *World) NeedsModel() bool {
	return w.faults.NeedsModel() || w.inForce().LimitsNeedModel()
}

// PickFault returns what the perturbations in force do to a request, if any strikes it.
func (w *World) PickFault(method, path string, m *catalog.Model) (faults.Struck, bool) {
	return w.faults.Pick(method, path, m)
}

// inForce is the scenario jobs and answers follow: the one put in force, with the knobs of the
// adversity plan turned.
func (w *World) inForce() *scenario.Scenario {
	if t := w.tuned.Load(); t != nil {
		return t
	}
	return w.scenario.Load()
}

// sameKnobs reports whether two sets of knobs turn the same: evolution by its kinds, not its
// pointer.
func sameKnobs(a, b api.Knobs) bool {
	ea, eb := a.Evolution, b.Evolution
	a.Evolution, b.Evolution = nil, nil
	return a == b && (ea == eb || (ea != nil && eb != nil && *ea == *eb))
}

// retune lays the plan's knobs over the scenario in force, after either changed.
func (w *World) retune() {
	w.tuneMu.Lock()
	defer w.tuneMu.Unlock()
	k, base := w.faults.Knobs(), w.scenario.Load()
	if k == (api.Knobs{}) {
		w.tuned.Store(nil)
		w.tunedFrom.base = nil
		return
	}
	if t := w.tuned.Load(); t != nil && w.tunedFrom.base == base && sameKnobs(w.tunedFrom.knobs, k) {
		return
	}
	w.tuned.Store(scenario.Tune(base, k))
	w.tunedFrom.base, w.tunedFrom.knobs = base, k
}

// RateLimit counts a request against every rate limit of the scenario that matches it and
// returns the tightest decision, or nil when no limit applies. Counting stops at the first
// limit that refuses.
func (w *World) RateLimit(method, path string, key *catalog.Key, m *catalog.Model) *ratelimit.Decision {
	sc := w.inForce()
	if len(sc.RateLimits) == 0 {
		return nil
	}
	now := w.clock.Now()
	var tightest *ratelimit.Decision
	for i, rl := range sc.RateLimits {
		if !scenario.Selects(rl.Match, method, path, m) {
			continue
		}
		caller := key.Key
		if rl.Scope == "account" {
			caller = key.Account
		}
		if rl.PerJob {
			job, ok := jobOfPath(path)
			if !ok {
				continue // a per-job limit counts only requests about one job
			}
			caller += " job " + job
		}
		d := w.limiter.Take(i, caller, rl.Limit, rl.Per, now)
		if !d.Allowed && d.Again && w.clock.Mode() == clock.Skip {
			// On a skipping clock a client's return after a Retry-After is a wait like any
			// other: the clock moves to the window's end, where the limit lets it through (the
			// report judges by the request's arrival, and real time, whether it waited).
			if err := w.clock.Set(now.Add(d.Reset)); err == nil || errors.Is(err, clock.ErrBackwards) {
				w.Changed(PartClock)
				now = w.clock.Now()
				d = w.limiter.Take(i, caller, rl.Limit, rl.Per, now)
			}
		}
		d.RetryAfterDate = rl.RetryAfterFormat == api.RetryAfterDate
		if tightest == nil || !d.Allowed || (tightest.Allowed && d.Remaining < tightest.Remaining) {
			tightest = &d
		}
		if !d.Allowed {
			break
		}
	}
	return tightest
}

// jobOfPath finds the job id in /v1/jobs/{id} and the paths under it.
func jobOfPath(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/v1/jobs/")
	if !ok {
		return "", false
	}
	id, _, _ := strings.Cut(rest, "/")
	return id, id != ""
}

// AnswerDelay draws the delay the scenario's latency rules give a request's answer (0 when none
// matches): the n-th request a rule delays gets the n-th draw of that rule, so a seed repeats
// the same delays.
func (w *World) AnswerDelay(method, path string, m *catalog.Model) time.Duration {
	sc := w.inForce()
	i, ok := sc.LatencyFor(method, path, m)
	if !ok {
		return 0
	}
	w.mu.Lock()
	if w.latencySeq == nil || w.latencyOf != sc {
		w.latencySeq, w.latencyOf = make([]uint64, len(sc.Latency)), sc
	}
	w.latencySeq[i]++
	n := w.latencySeq[i]
	w.mu.Unlock()
	return min(sc.Latency[i].Delay.Draw(w.ids.Float64("latency", strconv.Itoa(i), strconv.FormatUint(n, 10)), 0), scenario.MaxLatency)
}

// nextQuote numbers an account's quotes, so seeded quote ids follow each account's own order.
func (w *World) nextQuote(account string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.quoteSeq[account]++
	return w.quoteSeq[account]
}
