package quotes_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/quotes"
)

// model is the store's behaviour written the plain way: lists scanned whole, nothing indexed.
type model struct {
	l     quotes.Limits
	seq   int
	held  map[string][]heldQuote // per account
	marks map[string][]mark      // per account, oldest first
}

type heldQuote struct {
	q    quotes.Quote
	size int64
	seq  int
}

type mark struct {
	q      quotes.Quote // Input kept here only to check SameInput
	forget time.Time
}

func (m *model) end(q quotes.Quote) time.Time { return q.ExpiresAt.Add(m.l.Grace + time.Nanosecond) }

// ordered lists an account's held quotes by end, then by when they were made.
func (m *model) ordered(account string) []heldQuote {
	hs := slices.Clone(m.held[account])
	slices.SortFunc(hs, func(a, b heldQuote) int {
		if c := m.end(a.q).Compare(m.end(b.q)); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	return hs
}

func (m *model) settle(account string, now time.Time) {
	for _, h := range m.ordered(account) {
		if now.Before(m.end(h.q)) {
			break
		}
		m.held[account] = slices.DeleteFunc(m.held[account], func(x heldQuote) bool { return x.seq == h.seq })
		if m.l.Remember > m.l.Grace {
			if len(m.marks[account]) >= m.l.Markers {
				m.marks[account] = m.marks[account][1:]
			}
			m.marks[account] = append(m.marks[account], mark{h.q, h.q.ExpiresAt.Add(m.l.Remember)})
		}
	}
	m.marks[account] = slices.DeleteFunc(m.marks[account], func(k mark) bool { return !now.Before(k.forget) })
}

func (m *model) add(q quotes.Quote, now time.Time) error {
	m.settle(q.Account, now)
	count, bytes := 0, int64(0)
	for _, h := range m.held[q.Account] {
		if h.q.ID != q.ID {
			count, bytes = count+1, bytes+h.size
		}
	}
	if count+1 > m.l.PerAccount || bytes+quotes.Size(q) > m.l.PerAccountBytes {
		total := int64(0)
		for _, h := range m.held[q.Account] {
			total += h.size
		}
		return &quotes.LimitError{Held: len(m.held[q.Account]), HeldBytes: total, Limits: m.l, RetryAt: m.end(m.ordered(q.Account)[0].q)}
	}
	m.held[q.Account] = slices.DeleteFunc(m.held[q.Account], func(h heldQuote) bool { return h.q.ID == q.ID })
	m.marks[q.Account] = slices.DeleteFunc(m.marks[q.Account], func(k mark) bool { return k.q.ID == q.ID })
	m.seq++
	m.held[q.Account] = append(m.held[q.Account], heldQuote{q, quotes.Size(q), m.seq})
	return nil
}

// find is Find: the held quote, or the marker's quote with its input (the caller compares
// inputs with SameInput), and whether it was whole.
func (m *model) find(account, id string, now time.Time) (q quotes.Quote, whole, ok bool) {
	m.settle(account, now)
	for i := range m.held[account] {
		if h := &m.held[account][i]; h.q.ID == id {
			return h.q, true, true
		}
	}
	for _, k := range m.marks[account] {
		if k.q.ID == id {
			return k.q, false, true
		}
	}
	return quotes.Quote{}, false, false
}

func (m *model) use(account, id, job string, now time.Time) (string, bool) {
	m.settle(account, now)
	for i := range m.held[account] {
		if h := &m.held[account][i]; h.q.ID == id {
			if h.q.UsedBy != "" {
				return h.q.UsedBy, false
			}
			h.q.UsedBy = job
			return job, true
		}
	}
	return "", false
}

// TestStoreMatchesModel runs random sequences of calls against the store and the model: ids
// made again while held or as markers, lifetimes that end out of order and at the same
// instant, bounds reached by count, bytes and markers, the clock stepping onto exact ends.
func TestStoreMatchesModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		l := quotes.Limits{PerAccount: 1 + rng.IntN(12), PerAccountBytes: 2000 + rng.Int64N(4000), Grace: time.Duration(rng.IntN(3)) * time.Second,
			Remember: time.Duration(rng.IntN(6)) * time.Second, Markers: 1 + rng.IntN(8)}
		c := clock.NewManual(t0)
		s := quotes.NewBounded(c, l)
		m := &model{l: l, held: map[string][]heldQuote{}, marks: map[string][]mark{}}
		inputs := [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2}`), []byte(`{"prompt":"` + fmt.Sprint(seed) + `"}`), make([]byte, 700)}
		ids := 5 + rng.IntN(40)
		for step := range 3000 {
			now := c.Now()
			account := fmt.Sprint("acct", rng.IntN(2))
			id := fmt.Sprint("q", rng.IntN(ids))
			where := fmt.Sprintf("seed %d, step %d (%s/%s at +%v)", seed, step, account, id, now.Sub(t0))
			switch op := rng.IntN(10); {
			case op < 4:
				q := quotes.Quote{ID: id, Account: account, Model: fmt.Sprint("m", rng.IntN(2)), Input: inputs[rng.IntN(len(inputs))],
					Credits: rng.Int64N(9), CreatedAt: now, ExpiresAt: now.Add(time.Duration(rng.IntN(4)) * 500 * time.Millisecond)}
				got, want := s.Add(q), m.add(q, now)
				var gotLE, wantLE *quotes.LimitError
				if (got == nil) != (want == nil) || got != nil && (!errors.As(got, &gotLE) || !errors.As(want, &wantLE) ||
					gotLE.Held != wantLE.Held || gotLE.HeldBytes != wantLE.HeldBytes || !gotLE.RetryAt.Equal(wantLE.RetryAt)) {
					t.Fatalf("%s: Add = %v; want %v", where, got, want)
				}
			case op < 7:
				want, whole, ok := m.find(account, id, now)
				got, gotOK := s.Find(account, id)
				if gotOK != ok || ok && (got.ID != want.ID || got.Model != want.Model || !got.ExpiresAt.Equal(want.ExpiresAt) ||
					(got.Input != nil) != whole || !got.SameInput(want.Input) || whole && (got.UsedBy != want.UsedBy || got.Credits != want.Credits)) {
					t.Fatalf("%s: Find = %+v, %v; want %+v, %v (whole %v)", where, got, gotOK, want, ok, whole)
				}
				if g, gok := s.Get(account, id); gok != whole || gok && g.UsedBy != want.UsedBy {
					t.Fatalf("%s: Get = %+v, %v; want whole %v", where, g, gok, whole)
				}
			case op < 8:
				job := fmt.Sprint("job", step)
				gotBy, gotOK := s.Use(account, id, job)
				wantBy, wantOK := m.use(account, id, job, now)
				if gotBy != wantBy || gotOK != wantOK {
					t.Fatalf("%s: Use = %q, %v; want %q, %v", where, gotBy, gotOK, wantBy, wantOK)
				}
			default:
				// Step by a multiple of 250ms, sometimes a nanosecond more, so the clock lands
				// on exact ends and just past them.
				d := time.Duration(rng.IntN(5))*250*time.Millisecond + time.Duration(rng.IntN(2))*time.Nanosecond
				advance(t, c, d)
			}
			if step%100 == 0 {
				want := 0
				for a := range m.held {
					m.settle(a, c.Now())
					want += len(m.held[a])
				}
				if got := s.Len(); got != want {
					t.Fatalf("%s: Len = %d; want %d", where, got, want)
				}
			}
		}
	}
}
