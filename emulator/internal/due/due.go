// Package due is the emulator's one ordered queue of what comes due: an indexed binary heap of
// entries ordered by their instant, then by a sequence number the caller gives, so entries due
// together leave in a fixed order. The clock's timers, the jobs engine's live jobs and the quote
// store's unused quotes and markers each wait in one.
//
// An entry lives inside the caller's own record (no allocation per push) and knows its place in
// the heap, so removing or moving one costs O(log n) without a search. Ordering compares two
// integers read from the entries: no comparison function, no interface call.
package due

import "iter"

// Entry is one place in a Queue: when it is due, its tie-break and the value it stands for.
// Set At and Seq before Push, and change them only through Fix.
type Entry[T any] struct {
	// At is when the entry is due, in nanoseconds since 1970.
	At int64
	// Seq orders entries due at the same instant, smallest first.
	Seq uint64
	// Value is what the entry stands for, handed back by Peek and Pop.
	Value T
	index int // in the heap, plus one: zero when not queued
}

// Queued reports whether the entry is in a queue.
func (e *Entry[T]) Queued() bool { return e.index > 0 }

// Queue is a heap of entries, earliest first. The zero value is empty and ready. It is not
// safe for concurrent use: its owner's lock guards it.
type Queue[T any] struct {
	items []*Entry[T]
}

// Len counts the entries queued.
func (q *Queue[T]) Len() int { return len(q.items) }

// Peek is the earliest entry, or nil when the queue is empty.
func (q *Queue[T]) Peek() *Entry[T] {
	if len(q.items) == 0 {
		return nil
	}
	return q.items[0]
}

// Push queues an entry that is not queued.
func (q *Queue[T]) Push(e *Entry[T]) {
	if e.index != 0 {
		panic("due: Push of an entry already queued")
	}
	q.items = append(q.items, e)
	e.index = len(q.items)
	q.up(len(q.items) - 1)
}

// Pop removes and returns the earliest entry, or nil when the queue is empty.
func (q *Queue[T]) Pop() *Entry[T] {
	if len(q.items) == 0 {
		return nil
	}
	return q.removeAt(0)
}

// Remove takes an entry out of the queue; it reports false when the entry was not queued.
// The entry must be queued in q, if anywhere.
func (q *Queue[T]) Remove(e *Entry[T]) bool {
	if e.index == 0 {
		return false
	}
	q.removeAt(e.index - 1)
	return true
}

// Fix restores the order after a queued entry's At or Seq changed.
func (q *Queue[T]) Fix(e *Entry[T]) {
	if i := e.index - 1; i >= 0 && !q.down(i) {
		q.up(i)
	}
}

// All yields every entry queued, in no particular order; the queue must not change meanwhile.
func (q *Queue[T]) All() iter.Seq[*Entry[T]] {
	return func(yield func(*Entry[T]) bool) {
		for _, e := range q.items {
			if !yield(e) {
				return
			}
		}
	}
}

// Clear empties the queue, leaving every entry unqueued.
func (q *Queue[T]) Clear() {
	for _, e := range q.items {
		e.index = 0
	}
	q.items = nil
}

func (q *Queue[T]) removeAt(i int) *Entry[T] {
	h := q.items
	last := len(h) - 1
	e := h[i]
	if i != last {
		h[i] = h[last]
		h[i].index = i + 1
	}
	h[last] = nil
	q.items = h[:last]
	if i != last && !q.down(i) {
		q.up(i)
	}
	e.index = 0
	// Give back a burst's worth of slots once it has passed.
	switch n := len(q.items); {
	case n == 0 && cap(h) > 64:
		q.items = nil
	case cap(h) > 1024 && n < cap(h)/4:
		q.items = append(make([]*Entry[T], 0, cap(h)/2), q.items...)
	}
	return e
}

// less orders two entries by (At, Seq).
func less[T any](a, b *Entry[T]) bool {
	return a.At < b.At || (a.At == b.At && a.Seq < b.Seq)
}

// up moves the entry at i towards the root while it is earlier than its parent.
func (q *Queue[T]) up(i int) {
	h := q.items
	e := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !less(e, h[p]) {
			break
		}
		h[i] = h[p]
		h[i].index = i + 1
		i = p
	}
	h[i] = e
	e.index = i + 1
}

// down moves the entry at i towards the leaves while a child is earlier; it reports whether
// the entry moved.
func (q *Queue[T]) down(i0 int) bool {
	h := q.items
	n := len(h)
	e := h[i0]
	i := i0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && less(h[r], h[c]) {
			c = r
		}
		if !less(h[c], e) {
			break
		}
		h[i] = h[c]
		h[i].index = i + 1
		i = c
	}
	h[i] = e
	e.index = i + 1
	return i > i0
}
