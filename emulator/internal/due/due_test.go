package due

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// model is the queue's specification: a plain list, searched for its earliest entry.
type model struct{ items []*Entry[int] }

func (m *model) earliest() int {
	best := -1
	for i, e := range m.items {
		if best < 0 || less(e, m.items[best]) {
			best = i
		}
	}
	return best
}

// TestQueueMatchesModel drives a queue and the model with the same random operations (many ties,
// removals and moves) and checks that they agree after each, and that every entry knows its place.
func TestQueueMatchesModel(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 1))
		var q Queue[int]
		var m model
		var seq uint64
		all := make([]*Entry[int], 0, 600)
		for step := range 3000 {
			switch op := r.IntN(10); {
			case op < 4: // push a new entry or an old one that left
				var e *Entry[int]
				if len(all) > 0 && r.IntN(3) == 0 {
					e = all[r.IntN(len(all))]
				}
				if e == nil || e.Queued() {
					e = &Entry[int]{Value: len(all)}
					all = append(all, e)
				}
				seq++
				e.At, e.Seq = int64(r.IntN(20)), seq
				q.Push(e)
				m.items = append(m.items, e)
			case op < 6: // pop
				got := q.Pop()
				i := m.earliest()
				if i < 0 {
					if got != nil {
						t.Fatalf("seed %d step %d: Pop of an empty queue gave %v", seed, step, got.Value)
					}
					continue
				}
				want := m.items[i]
				m.items = slices.Delete(m.items, i, i+1)
				if got != want || got.Queued() {
					t.Fatalf("seed %d step %d: Pop gave %v, want %v", seed, step, got.Value, want.Value)
				}
			case op < 8: // remove any entry, queued or not
				if len(all) == 0 {
					continue
				}
				e := all[r.IntN(len(all))]
				i := slices.Index(m.items, e)
				if got := q.Remove(e); got != (i >= 0) {
					t.Fatalf("seed %d step %d: Remove reported %v, want %v", seed, step, got, i >= 0)
				}
				if i >= 0 {
					m.items = slices.Delete(m.items, i, i+1)
				}
			default: // move a queued entry
				if len(m.items) == 0 {
					continue
				}
				e := m.items[r.IntN(len(m.items))]
				seq++
				e.At, e.Seq = int64(r.IntN(20)), seq
				q.Fix(e)
			}
			check(t, seed, step, &q, &m)
		}
		for q.Len() > 0 {
			want := m.items[m.earliest()]
			if got := q.Pop(); got != want {
				t.Fatalf("seed %d draining: Pop gave %v, want %v", seed, got.Value, want.Value)
			}
			m.items = slices.DeleteFunc(m.items, func(e *Entry[int]) bool { return e == want })
		}
	}
}

func check(t *testing.T, seed uint64, step int, q *Queue[int], m *model) {
	t.Helper()
	if q.Len() != len(m.items) {
		t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, q.Len(), len(m.items))
	}
	if i := m.earliest(); i < 0 && q.Peek() != nil || i >= 0 && q.Peek() != m.items[i] {
		t.Fatalf("seed %d step %d: Peek is not the earliest entry", seed, step)
	}
	for i, e := range q.items {
		if e.index != i+1 {
			t.Fatalf("seed %d step %d: entry at %d says it is at %d", seed, step, i, e.index-1)
		}
		if i > 0 && less(e, q.items[(i-1)/2]) {
			t.Fatalf("seed %d step %d: entry at %d is earlier than its parent", seed, step, i)
		}
	}
}

func TestPushQueuedPanics(t *testing.T) {
	var q Queue[int]
	e := &Entry[int]{}
	q.Push(e)
	defer func() {
		if recover() == nil {
			t.Fatal("a second Push of a queued entry did not panic")
		}
	}()
	q.Push(e)
}

func TestClearUnqueues(t *testing.T) {
	var q Queue[int]
	es := []*Entry[int]{{At: 2}, {At: 1}}
	for _, e := range es {
		q.Push(e)
	}
	q.Clear()
	if q.Len() != 0 || q.Peek() != nil || es[0].Queued() || es[1].Queued() {
		t.Fatal("Clear left entries queued")
	}
	q.Push(es[0]) // a cleared entry may be queued again
	if q.Pop() != es[0] {
		t.Fatal("a cleared entry pushed again did not come back")
	}
}

// BenchmarkPushPop is the steady state of a queue of 10,000 entries: one push, one pop.
func BenchmarkPushPop(b *testing.B) {
	var q Queue[int]
	es := make([]Entry[int], 10_001)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 10_000 {
		es[i].At, es[i].Seq = r.Int64N(1e9), uint64(i)
		q.Push(&es[i])
	}
	free := &es[10_000]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		free.At, free.Seq = r.Int64N(1e9), uint64(10_000+i)
		q.Push(free)
		free = q.Pop()
	}
}
