package emulator

import (
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/idempotency"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
	"github.com/mediagen/mediagen-emulator/emulator/internal/quotes"
)

// state is everything a reset puts back: the clock and all it drives. Requests load the current
// state once, so a reset never mixes the old and the new within one request.
type state struct {
	clock  *clock.Clock
	ledger *ledger.Ledger
	quotes *quotes.Store
	idem   *idempotency.Store
	jobs   *jobs.Engine

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
	return &state{
		clock:    c,
		ledger:   l,
		quotes:   quotes.NewStore(c),
		idem:     idempotency.NewStore(c),
		jobs:     jobs.NewEngine(c, l, s.cfg.JobRetention),
		gone:     make(chan struct{}),
		quoteSeq: map[string]uint64{},
	}
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
