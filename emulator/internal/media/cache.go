package media

import (
	"container/list"
	"fmt"
	"sync"
)

// CacheEntryOverhead is what the Cache counts for each kept file besides its bytes and its key:
// the list element, the map slot and the entry's own fields, rounded up.
const CacheEntryOverhead = 160

// Cache keeps made files in memory, dropping the least recently used once the memory they hold
// would pass a budget, and makes each missing file at most once at a time however many callers
// ask for it together. It counts what is really held: each slice's capacity, its key, and
// CacheEntryOverhead. It is safe for concurrent use.
//
// The slices it returns are shared between callers and must not be modified.
type Cache struct {
	budget int64

	mu    sync.Mutex
	used  int64
	order list.List // of *cacheEntry; front is the most recently used
	items map[string]*list.Element
	calls map[string]*cacheCall // makes under way
	epoch uint64                // bumped by Clear, so a make begun before it is not kept
}

// cacheEntry is one kept file.
type cacheEntry struct {
	key  string
	data []byte
	cost int64
}

// cacheCall is one make under way; done closes when data and err are set.
type cacheCall struct {
	done chan struct{}
	data []byte
	err  error
}

// NewCache returns an empty cache that holds at most budget bytes.
func NewCache(budget int64) *Cache {
	return &Cache{budget: max(0, budget), items: map[string]*list.Element{}, calls: map[string]*cacheCall{}}
}

// entryCost is what keeping data under key costs.
func entryCost(key string, data []byte) int64 {
	return int64(cap(data)) + int64(len(key)) + CacheEntryOverhead
}

// Get returns the file kept under key, and marks it recently used.
func (c *Cache) Get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(key)
}

func (c *Cache) getLocked(key string) ([]byte, bool) {
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).data, true
}

// Put keeps data under key, replacing what was there, then drops the least recently used files
// until the budget holds. A file that alone exceeds the budget is not kept.
func (c *Cache) Put(key string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(key, data)
}

func (c *Cache) putLocked(key string, data []byte) {
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
	cost := entryCost(key, data)
	if cost > c.budget {
		return
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, data: data, cost: cost})
	c.used += cost
	for c.used > c.budget {
		c.remove(c.order.Back())
	}
}

// remove drops one kept file.
func (c *Cache) remove(el *list.Element) {
	e := c.order.Remove(el).(*cacheEntry)
	delete(c.items, e.key)
	c.used -= e.cost
}

// Do returns the file kept under key or, if there is none, makes it with render, keeps it and
// returns it. Callers asking for the same missing key while it is being made wait for that one
// make and share its result, error included; an error is not kept, so a later call tries again.
// A render that panics is reported to its waiters as an error and the panic goes on in the caller
// that ran it.
func (c *Cache) Do(key string, render func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	if data, ok := c.getLocked(key); ok {
		c.mu.Unlock()
		return data, nil
	}
	if call, ok := c.calls[key]; ok {
		c.mu.Unlock()
		<-call.done
		return call.data, call.err
	}
	call := &cacheCall{done: make(chan struct{})}
	c.calls[key] = call
	epoch := c.epoch
	c.mu.Unlock()

	finished := false
	defer func() {
		if !finished {
			call.err = fmt.Errorf("media: making %s panicked", key)
		}
		c.mu.Lock()
		if c.calls[key] == call {
			delete(c.calls, key)
		}
		if call.err == nil && c.epoch == epoch {
			c.putLocked(key, call.data)
		}
		c.mu.Unlock()
		close(call.done)
	}()
	call.data, call.err = render()
	finished = true
	return call.data, call.err
}

// Clear drops every kept file. Makes under way still answer their callers but are not kept.
func (c *Cache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.items)
	c.used = 0
	c.epoch++
	clear(c.calls) // later callers start afresh rather than wait for a make from before
}

// Used returns the bytes the cache counts as held.
func (c *Cache) Used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// Len returns how many files are kept.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

// Budget returns the most bytes the cache holds.
func (c *Cache) Budget() int64 { return c.budget }
