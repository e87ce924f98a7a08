package media

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// checkCacheAccounting recomputes what the cache holds from its entries and compares it with
// its running total and its budget.
func checkCacheAccounting(t *testing.T, c *Cache) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum int64
	for el := c.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*cacheEntry)
		if e.cost != entryCost(e.key, e.data) {
			t.Errorf("entry %q counted as %d, costs %d", e.key, e.cost, entryCost(e.key, e.data))
		}
		sum += e.cost
	}
	if sum != c.used || len(c.items) != c.order.Len() {
		t.Errorf("entries hold %d bytes in %d items; cache counts %d in %d", sum, c.order.Len(), c.used, len(c.items))
	}
	if c.used > c.budget {
		t.Errorf("cache holds %d bytes, over its budget of %d", c.used, c.budget)
	}
}

func TestCacheCountsCapacityAndOverhead(t *testing.T) {
	t.Parallel()
	c := NewCache(1 << 20)
	c.Put("k", make([]byte, 10, 1000))
	if got, want := c.Used(), int64(1000+1+CacheEntryOverhead); got != want {
		t.Errorf("Used %d, want %d (capacity, key and overhead)", got, want)
	}
	c.Put("k", make([]byte, 5))
	if got, want := c.Used(), int64(5+1+CacheEntryOverhead); got != want {
		t.Errorf("after replacing: Used %d, want %d", got, want)
	}
	checkCacheAccounting(t, c)
}

func TestCacheDropsLeastRecentlyUsedPastItsBudget(t *testing.T) {
	t.Parallel()
	const per = 1000 + 2 + CacheEntryOverhead // a 1000-byte file under a two-letter key
	c := NewCache(5 * per)
	for i := range 5 {
		c.Put(fmt.Sprintf("k%d", i), make([]byte, 1000))
	}
	if c.Len() != 5 || c.Used() != 5*per {
		t.Fatalf("%d files, %d bytes; want 5 files, %d bytes", c.Len(), c.Used(), 5*per)
	}
	c.Get("k0") // now the most recent; k1 is the oldest
	c.Put("k5", make([]byte, 1000))
	if _, ok := c.Get("k1"); ok {
		t.Error("k1, the least recently used, is still kept")
	}
	for _, k := range []string{"k0", "k2", "k3", "k4", "k5"} {
		if _, ok := c.Get(k); !ok {
			t.Errorf("%s was dropped", k)
		}
	}
	// Far past the bound: only the newest that fit remain.
	for i := range 100 {
		c.Put(fmt.Sprintf("n%d", i%10), make([]byte, 1000+i))
		checkCacheAccounting(t, c)
	}
	if c.Len() > 5 {
		t.Errorf("%d files kept in a budget for 5", c.Len())
	}
	if _, ok := c.Get("n9"); !ok {
		t.Error("the newest file was dropped")
	}
	// A file larger than the whole budget is not kept, and does not push others out.
	before := c.Len()
	c.Put("huge", make([]byte, 5*per))
	if _, ok := c.Get("huge"); ok || c.Len() != before {
		t.Errorf("an over-budget file was kept (%v) or evicted others (%d files, had %d)", ok, c.Len(), before)
	}
	c.Clear()
	if c.Len() != 0 || c.Used() != 0 {
		t.Errorf("after Clear: %d files, %d bytes", c.Len(), c.Used())
	}
	checkCacheAccounting(t, c)
}

// A hundred callers asking at once for a file nobody has made make it once and all get it.
func TestCacheDoMakesOnceForConcurrentCallers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := NewCache(1 << 20)
		var calls atomic.Int32
		release := make(chan struct{})
		render := func() ([]byte, error) {
			calls.Add(1)
			<-release
			return []byte("the file"), nil
		}
		results := make([][]byte, 100)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() {
				data, err := c.Do("f", render)
				if err != nil {
					t.Error(err)
				}
				results[i] = data
			})
		}
		synctest.Wait() // every caller is now blocked: one in render, the rest waiting for it
		if n := calls.Load(); n != 1 {
			t.Errorf("%d renders started, want 1", n)
		}
		close(release)
		wg.Wait()
		for i, r := range results {
			if string(r) != "the file" {
				t.Fatalf("caller %d got %q", i, r)
			}
		}
		if data, ok := c.Get("f"); !ok || string(data) != "the file" {
			t.Error("the made file was not kept")
		}
		if _, err := c.Do("f", func() ([]byte, error) { return nil, errors.New("must not run") }); err != nil {
			t.Errorf("Do of a kept file rendered again: %v", err)
		}
	})
}

func TestCacheDoDoesNotKeepErrorsOrFilesMadeBeforeClear(t *testing.T) {
	t.Parallel()
	c := NewCache(1 << 20)
	boom := errors.New("boom")
	if _, err := c.Do("f", func() ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("error %v, want boom", err)
	}
	data, err := c.Do("f", func() ([]byte, error) { return []byte("ok"), nil })
	if err != nil || string(data) != "ok" {
		t.Fatalf("after an error, Do gave %q, %v; want a fresh make", data, err)
	}

	// A make that straddles Clear answers its caller but is not kept.
	data, err = c.Do("g", func() ([]byte, error) {
		c.Clear()
		return []byte("old"), nil
	})
	if err != nil || string(data) != "old" {
		t.Fatalf("Do gave %q, %v", data, err)
	}
	if _, ok := c.Get("g"); ok {
		t.Error("a file made before Clear was kept after it")
	}
	checkCacheAccounting(t, c)
}

func TestCacheDoReportsPanicToWaiters(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := NewCache(1 << 20)
		release := make(chan struct{})
		waiterErr := make(chan error, 1)
		go func() {
			defer func() { _ = recover() }()
			_, _ = c.Do("p", func() ([]byte, error) {
				<-release
				panic("render failed")
			})
		}()
		synctest.Wait()
		go func() {
			_, err := c.Do("p", func() ([]byte, error) { return []byte("x"), nil })
			waiterErr <- err
		}()
		synctest.Wait()
		close(release)
		if err := <-waiterErr; err == nil {
			t.Error("a waiter on a render that panicked got no error")
		}
		if data, err := c.Do("p", func() ([]byte, error) { return []byte("x"), nil }); err != nil || string(data) != "x" {
			t.Errorf("after the panic, Do gave %q, %v", data, err)
		}
	})
}

// Many goroutines reading, writing, making and clearing: the accounting stays exact and within
// the budget (run with -race).
func TestCacheConcurrentUseStaysWithinBudget(t *testing.T) {
	t.Parallel()
	c := NewCache(20_000)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := splitmix64{state: uint64(g)}
			for range 500 {
				key := fmt.Sprintf("k%d", rng.intn(40))
				switch rng.intn(20) {
				case 0:
					c.Clear()
				case 1, 2, 3, 4, 5:
					c.Put(key, make([]byte, rng.intn(3000)))
				case 6, 7, 8, 9, 10, 11, 12:
					data, err := c.Do(key, func() ([]byte, error) { return bytes.Repeat([]byte{1}, 500), nil })
					if err != nil || data == nil {
						t.Errorf("Do: %v", err)
					}
				default:
					c.Get(key)
				}
			}
		})
	}
	wg.Wait()
	checkCacheAccounting(t, c)
}
