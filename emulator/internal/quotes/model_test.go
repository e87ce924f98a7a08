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
	live  map[string][]entry // per account
	marks map[string][]entry // per account
}

// entry is a live quote (due when it expires) or a marker (due when it is forgotten).
type entry struct {
	q    quotes.Quote // Live while a live quote, Input nil once a marker
	orig []byte       // the input it was made for, to check SameInput
	due  time.Time
	size int64
	seq  int
}

// earliest is the index of the entry due first, or -1.
func earliest(es []entry) int {
	best := -1
	for i, e := range es {
		if best < 0 || e.due.Before(es[best].due) || e.due.Equal(es[best].due) && e.seq < es[best].seq {
			best = i
		}
	}
	return best
}

func total(es []entry) int64 {
	n := int64(0)
	for _, e := range es {
		n += e.size
	}
	return n
}

func (m *model) settle(account string, now time.Time) {
	for {
		i := earliest(m.live[account])
		if i < 0 || now.Before(m.live[account][i].due) {
			break
		}
		e := m.live[account][i]
		m.live[account] = slices.Delete(m.live[account], i, i+1)
		m.mark(account, e, now)
	}
	m.marks[account] = slices.DeleteFunc(m.marks[account], func(e entry) bool { return !now.Before(e.due) })
}

func (m *model) mark(account string, e entry, now time.Time) {
	e.q.Input, e.q.Live = nil, false
	e.size = quotes.MarkerSize(e.q)
	e.due = e.q.ExpiresAt.Add(m.l.Remember + time.Nanosecond)
	if !now.Before(e.due) {
		return
	}
	// The new marker is never the one evicted: the others due first make room for it.
	for len(m.marks[account]) > 0 && (len(m.marks[account])+1 > m.l.Markers || total(m.marks[account])+e.size > m.l.MarkerBytes) {
		i := earliest(m.marks[account])
		m.marks[account] = slices.Delete(m.marks[account], i, i+1)
	}
	m.seq++
	e.seq = m.seq
	m.marks[account] = append(m.marks[account], e)
}

func (m *model) add(q quotes.Quote, now time.Time) error {
	m.settle(q.Account, now)
	count, size := 0, int64(0)
	for _, e := range m.live[q.Account] {
		if e.q.ID != q.ID {
			count, size = count+1, size+e.size
		}
	}
	if count+1 > m.l.PerAccount || size+quotes.Size(q) > m.l.PerAccountBytes {
		le := &quotes.LimitError{Held: len(m.live[q.Account]), HeldBytes: total(m.live[q.Account]), Limits: m.l}
		if i := earliest(m.live[q.Account]); i >= 0 {
			le.RetryAt = m.live[q.Account][i].due
		}
		return le
	}
	other := func(e entry) bool { return e.q.ID == q.ID }
	m.live[q.Account] = slices.DeleteFunc(m.live[q.Account], other)
	m.marks[q.Account] = slices.DeleteFunc(m.marks[q.Account], other)
	m.seq++
	q.Live = true
	m.live[q.Account] = append(m.live[q.Account], entry{q, q.Input, q.ExpiresAt.Add(time.Nanosecond), quotes.Size(q), m.seq})
	return nil
}

// find is Find: the quote as the store should give it, the input it was made for, and whether
// it is known.
func (m *model) find(account, id string, now time.Time) (quotes.Quote, []byte, bool) {
	m.settle(account, now)
	for _, es := range [][]entry{m.live[account], m.marks[account]} {
		for _, e := range es {
			if e.q.ID == id {
				return e.q, e.orig, true
			}
		}
	}
	return quotes.Quote{}, nil, false
}

func (m *model) use(account, id, job string, now time.Time) (string, bool) {
	m.settle(account, now)
	for _, e := range m.marks[account] {
		if e.q.ID == id {
			return e.q.UsedBy, false
		}
	}
	for i, e := range m.live[account] {
		if e.q.ID == id {
			m.live[account] = slices.Delete(m.live[account], i, i+1)
			e.q.UsedBy = job
			m.mark(account, e, now)
			return job, true
		}
	}
	return "", false
}

func (m *model) release(account, id, job string, now time.Time) {
	m.settle(account, now)
	for i, e := range m.marks[account] {
		if e.q.ID == id && e.q.UsedBy == job && job != "" {
			m.marks[account] = slices.Delete(m.marks[account], i, i+1)
			e.q.UsedBy, e.q.Live = "", true
			e.size = quotes.Size(quotes.Quote{ID: id, Account: account, Model: e.q.Model})
			e.due = e.q.ExpiresAt.Add(time.Nanosecond)
			m.seq++
			e.seq = m.seq
			m.live[account] = append(m.live[account], e)
			return
		}
	}
}

// TestStoreMatchesModel runs random sequences of calls against the store and the model: ids
// made again while live or as markers, quotes used and released, lifetimes that end out of
// order and at the same instant, bounds reached by count and bytes of live quotes and of
// markers, the clock stepping onto exact ends.
func TestStoreMatchesModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		l := quotes.Limits{PerAccount: 1 + rng.IntN(12), PerAccountBytes: 2000 + rng.Int64N(4000),
			Remember: time.Duration(rng.IntN(6)) * time.Second, Markers: 1 + rng.IntN(8), MarkerBytes: 300 + rng.Int64N(2000)}
		c := clock.NewManual(t0)
		s := quotes.NewBounded(c, l)
		m := &model{l: l, live: map[string][]entry{}, marks: map[string][]entry{}}
		inputs := [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2}`), []byte(`{"prompt":"` + fmt.Sprint(seed) + `"}`), make([]byte, 700)}
		ids := 5 + rng.IntN(40)
		for step := range 3000 {
			now := c.Now()
			account := fmt.Sprint("acct", rng.IntN(2))
			id := fmt.Sprint("q", rng.IntN(ids))
			where := fmt.Sprintf("seed %d, step %d (%s/%s at +%v)", seed, step, account, id, now.Sub(t0))
			switch op := rng.IntN(12); {
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
				want, orig, ok := m.find(account, id, now)
				got, gotOK := s.Find(account, id)
				if gotOK != ok || ok && (got.ID != want.ID || got.Model != want.Model || !got.ExpiresAt.Equal(want.ExpiresAt) ||
					got.Input != nil || got.Live != want.Live || !got.SameInput(orig) ||
					got.UsedBy != want.UsedBy || got.Credits != want.Credits) {
					t.Fatalf("%s: Find = %+v, %v; want %+v, %v", where, got, gotOK, want, ok)
				}
			case op < 9:
				job := fmt.Sprint("job", step)
				gotBy, gotOK := s.Use(account, id, job)
				wantBy, wantOK := m.use(account, id, job, now)
				if gotBy != wantBy || gotOK != wantOK {
					t.Fatalf("%s: Use = %q, %v; want %q, %v", where, gotBy, gotOK, wantBy, wantOK)
				}
			case op < 10:
				// Release names the job of a recent Use half the time.
				job := fmt.Sprint("job", step-rng.IntN(4))
				if q, _, ok := m.find(account, id, now); ok && rng.IntN(2) == 0 {
					job = q.UsedBy
				}
				s.Release(account, id, job)
				m.release(account, id, job, now)
			default:
				// Step by a multiple of 250ms, sometimes a nanosecond more, so the clock lands
				// on exact ends and just past them.
				d := time.Duration(rng.IntN(5))*250*time.Millisecond + time.Duration(rng.IntN(2))*time.Nanosecond
				advance(t, c, d)
			}
			if step%100 == 0 {
				live, marks := 0, 0
				for _, a := range []string{"acct0", "acct1"} {
					m.settle(a, c.Now())
					live += len(m.live[a])
					marks += len(m.marks[a])
				}
				if got, gotMarks := s.Len(), s.Markers(); got != live || gotMarks != marks {
					t.Fatalf("%s: Len, Markers = %d, %d; want %d, %d", where, got, gotMarks, live, marks)
				}
			}
		}
	}
}
