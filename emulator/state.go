package emulator

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/faults"
	"github.com/mediagen/mediagen-emulator/emulator/internal/idempotency"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/journal"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
	"github.com/mediagen/mediagen-emulator/emulator/internal/quotes"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ratelimit"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// state is everything a reset puts back: the clock and all it drives. Requests load the current
// state once, so a reset never mixes the old and the new within one request.
type state struct {
	clock  *clock.Clock
	ledger *ledger.Ledger
	quotes *quotes.Store
	idem   *idempotency.Store
	jobs   *jobs.Engine

	scenario atomic.Pointer[scenario.Scenario]
	faults   *faults.Set
	limiter  *ratelimit.Limiter
	journal  *journal.Journal

	// gone is closed when a reset or shutdown retires this state, waking long waits.
	gone     chan struct{}
	goneOnce sync.Once

	mu       sync.Mutex
	quoteSeq map[string]uint64 // per account, for seeded quote ids
}

func (s *Server) newState() *state {
	var c *clock.Clock
	if s.cfg.ManualClock {
		c = clock.NewManual(s.cfg.Start)
	} else {
		c = clock.NewReal()
	}
	start := make(map[string]int64, len(s.catalog.Accounts))
	for _, a := range s.catalog.Accounts {
		start[a.ID] = a.Credits
	}
	l := ledger.New(start)
	st := &state{
		clock:    c,
		ledger:   l,
		quotes:   quotes.NewStore(c, quotes.DefaultLimit),
		idem:     idempotency.NewStore(c),
		jobs:     jobs.NewEngine(c, l, s.cfg.JobRetention),
		faults:   faults.New(s.cfg.Seeded, s.cfg.Seed),
		limiter:  ratelimit.New(),
		journal:  journal.New(journalCapacity),
		gone:     make(chan struct{}),
		quoteSeq: map[string]uint64{},
	}
	st.useScenario(s.startScenario)
	return st
}

// journalCapacity bounds the request journal; older entries are dropped first.
const journalCapacity = 10_000

// useScenario puts a scenario in force: its faults replace the previous scenario's (faults
// added through the control API stay), and rate-limit windows start afresh.
func (st *state) useScenario(sc *scenario.Scenario) {
	st.scenario.Store(sc)
	st.faults.RemoveSource("scenario")
	for _, f := range sc.Faults {
		st.faults.Add("scenario", f)
	}
	st.limiter.Reset()
}

// retire stops the state's clock and wakes everyone waiting on it.
func (st *state) retire() {
	st.goneOnce.Do(func() {
		close(st.gone)
		st.clock.Close()
	})
}

// nextQuote numbers an account's quotes, so seeded quote ids follow each account's own order.
func (st *state) nextQuote(account string) uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.quoteSeq[account]++
	return st.quoteSeq[account]
}

// timestamp formats an instant as the API does: RFC 3339, UTC, Z.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// nullableTime is a timestamp, or null for the zero time.
func nullableTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := timestamp(t)
	return &s
}
