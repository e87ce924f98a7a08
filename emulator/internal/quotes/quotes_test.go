package quotes_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/quotes"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

const ttl = 10 * time.Minute

func newStore(t *testing.T) (*quotes.Store, *clock.Clock) {
	t.Helper()
	c := clock.NewManual(t0)
	return quotes.NewBounded(c, quotes.DefaultLimits), c
}

func quote(account, id string, at time.Time) quotes.Quote {
	return quotes.Quote{
		ID: id, Account: account, Model: "m", Input: []byte(`{"prompt":"x"}`), Credits: 4,
		CreatedAt: at, ExpiresAt: at.Add(ttl),
	}
}

func advance(t testing.TB, c *clock.Clock, d time.Duration) {
	t.Helper()
	if err := c.Advance(d); err != nil {
		t.Fatal(err)
	}
}

func TestGetIsPerAccount(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	q := quote("acct_a", "q1", t0)
	s.Add(q)
	got, ok := s.Find("acct_a", "q1")
	if !ok || got.ID != "q1" || got.Credits != 4 || !got.ExpiresAt.Equal(t0.Add(ttl)) || !got.Live || got.Input != nil || !got.SameInput([]byte(`{"prompt":"x"}`)) {
		t.Errorf("Get = %+v, %v", got, ok)
	}
	if _, ok := s.Find("acct_b", "q1"); ok {
		t.Error("another account's quote was found")
	}
	if _, ok := s.Find("acct_a", "nope"); ok {
		t.Error("an unknown quote was found")
	}
	// Get returns a copy.
	got.UsedBy = "job"
	if again, _ := s.Find("acct_a", "q1"); again.UsedBy != "" {
		t.Error("changing Get's result changed the stored quote")
	}
}

func TestUseAndRelease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		steps     func(s *quotes.Store) (string, bool)
		wantBy    string
		wantOK    bool
		wantUsing string // UsedBy afterwards
	}{
		{"first use wins", func(s *quotes.Store) (string, bool) { return s.Use("acct_a", "q1", "job1") }, "job1", true, "job1"},
		{"second use names the first job", func(s *quotes.Store) (string, bool) {
			s.Use("acct_a", "q1", "job1")
			return s.Use("acct_a", "q1", "job2")
		}, "job1", false, "job1"},
		{"unknown quote", func(s *quotes.Store) (string, bool) { return s.Use("acct_a", "nope", "job1") }, "", false, ""},
		{"another account's quote", func(s *quotes.Store) (string, bool) { return s.Use("acct_b", "q1", "job1") }, "", false, ""},
		{"release makes the quote usable again", func(s *quotes.Store) (string, bool) {
			s.Use("acct_a", "q1", "job1")
			s.Release("acct_a", "q1", "job1")
			return s.Use("acct_a", "q1", "job2")
		}, "job2", true, "job2"},
		{"release by another job does nothing", func(s *quotes.Store) (string, bool) {
			s.Use("acct_a", "q1", "job1")
			s.Release("acct_a", "q1", "job2")
			return s.Use("acct_a", "q1", "job3")
		}, "job1", false, "job1"},
		{"release by another account does nothing", func(s *quotes.Store) (string, bool) {
			s.Use("acct_a", "q1", "job1")
			s.Release("acct_b", "q1", "job1")
			return s.Use("acct_a", "q1", "job3")
		}, "job1", false, "job1"},
		{"release of an unused quote does nothing", func(s *quotes.Store) (string, bool) {
			s.Release("acct_a", "q1", "job1")
			return s.Use("acct_a", "q1", "job1")
		}, "job1", true, "job1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore(t)
			s.Add(quote("acct_a", "q1", t0))
			by, ok := tc.steps(s)
			if by != tc.wantBy || ok != tc.wantOK {
				t.Errorf("Use = %q, %v; want %q, %v", by, ok, tc.wantBy, tc.wantOK)
			}
			if q, _ := s.Find("acct_a", "q1"); q.UsedBy != tc.wantUsing {
				t.Errorf("UsedBy = %q; want %q", q.UsedBy, tc.wantUsing)
			}
		})
	}
}

// TestUseSingleWinner: 64 generations race to spend one quote; exactly one gets it, and every
// loser is told which job won.
func TestUseSingleWinner(t *testing.T) {
	t.Parallel()
	for round := range 20 {
		s, _ := newStore(t)
		s.Add(quote("acct_a", "q1", t0))
		const n = 64
		type result struct {
			job, by string
			ok      bool
		}
		results := make([]result, n)
		var ready, wg sync.WaitGroup
		ready.Add(n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				job := fmt.Sprintf("job%d", i)
				ready.Done()
				<-start
				by, ok := s.Use("acct_a", "q1", job)
				results[i] = result{job, by, ok}
			})
		}
		ready.Wait()
		close(start)
		wg.Wait()
		winner := ""
		for _, r := range results {
			if r.ok {
				if winner != "" {
					t.Fatalf("round %d: both %s and %s used the quote", round, winner, r.job)
				}
				winner = r.job
				if r.by != r.job {
					t.Errorf("round %d: the winner %s was told %q", round, r.job, r.by)
				}
			}
		}
		if winner == "" {
			t.Fatalf("round %d: nobody used the quote", round)
		}
		for _, r := range results {
			if !r.ok && r.by != winner {
				t.Errorf("round %d: loser %s was told %q; want the winner %q", round, r.job, r.by, winner)
			}
		}
		if q, _ := s.Find("acct_a", "q1"); q.UsedBy != winner {
			t.Errorf("round %d: UsedBy = %q; want %q", round, q.UsedBy, winner)
		}
	}
}

// TestQuotesForgotten: a quote is live until it expires, then known by its marker (so it can
// answer quote_expired) until Remember after it expires, and forgotten just after; the store
// sets no timer for it.
func TestQuotesForgotten(t *testing.T) {
	t.Parallel()
	s, c := newStore(t)
	remember := quotes.DefaultLimits.Remember
	s.Add(quote("acct_a", "q1", t0))
	advance(t, c, time.Minute)
	s.Add(quote("acct_a", "q2", c.Now())) // expires a minute after q1
	if s.Len() != 2 || c.Pending() != 0 {
		t.Fatalf("Len = %d, Pending = %d; want 2 quotes and no timer", s.Len(), c.Pending())
	}
	for _, step := range []struct {
		to         time.Time
		live, mark int
		q1, q2     bool
	}{
		{t0.Add(ttl), 2, 0, true, true},                               // q1 expires: valid at that instant
		{t0.Add(ttl + time.Nanosecond), 1, 1, true, true},             // q1 is a marker
		{t0.Add(ttl + remember), 0, 2, true, true},                    // the last moment q1 is known
		{t0.Add(ttl + remember + time.Nanosecond), 0, 1, false, true}, // q1 forgotten, q2 a marker
		{t0.Add(time.Minute + ttl + remember + time.Nanosecond), 0, 0, false, false},
	} {
		if err := c.Set(step.to); err != nil {
			t.Fatal(err)
		}
		_, ok1 := s.Find("acct_a", "q1")
		_, ok2 := s.Find("acct_a", "q2")
		if ok1 != step.q1 || ok2 != step.q2 || s.Len() != step.live || s.Markers() != step.mark {
			t.Errorf("at +%v: q1 known %v, q2 known %v, %d live, %d markers; want %v, %v, %d, %d",
				step.to.Sub(t0), ok1, ok2, s.Len(), s.Markers(), step.q1, step.q2, step.live, step.mark)
		}
	}
	if c.Pending() != 0 {
		t.Errorf("Pending = %d; want no timer", c.Pending())
	}
}

// TestUsedQuoteLeavesTheBound: a used quote no longer counts among the live quotes (it is part
// of its job); its marker answers with the job that used it, without the input, until Remember
// after it expires.
func TestUsedQuoteLeavesTheBound(t *testing.T) {
	t.Parallel()
	s, c := newStore(t)
	s.Add(quote("acct_a", "q1", t0))
	if _, ok := s.Use("acct_a", "q1", "job1"); !ok {
		t.Fatal("Use failed")
	}
	if s.Len() != 0 || s.Markers() != 1 {
		t.Errorf("after Use: %d live, %d markers; want 0 and 1", s.Len(), s.Markers())
	}
	q, ok := s.Find("acct_a", "q1")
	if !ok || q.UsedBy != "job1" || q.Input != nil || !q.SameInput([]byte(`{"prompt":"x"}`)) || q.SameInput([]byte(`{}`)) {
		t.Errorf("after Use: Find = %+v, %v; want the marker naming job1", q, ok)
	}
	if by, ok := s.Use("acct_a", "q1", "job2"); ok || by != "job1" {
		t.Errorf("second Use = %q, %v; want job1, false", by, ok)
	}
	advance(t, c, ttl+quotes.DefaultLimits.Remember)
	if q, ok := s.Find("acct_a", "q1"); !ok || q.UsedBy != "job1" {
		t.Errorf("at the end of Remember: Find = %+v, %v", q, ok)
	}
	advance(t, c, time.Nanosecond)
	if _, ok := s.Find("acct_a", "q1"); ok {
		t.Error("the used quote is still known after Remember")
	}
}

// TestOneKeyUnderLoad: 100,000 quote → generate flows on one account with the default limits,
// the clock never reaching the quotes' expiry: used quotes once counted toward the 10,000-quote
// bound for their lifetime plus an hour, so the 10,001st quote was refused. Now no flow is
// refused and what the store keeps levels off at the marker bound.
func TestOneKeyUnderLoad(t *testing.T) {
	t.Parallel()
	s, c := newStore(t)
	for i := range 100_000 {
		id := fmt.Sprint("q", i)
		if err := s.Add(quote("acct_a", id, c.Now())); err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
		if _, ok := s.Use("acct_a", id, "job"+id); !ok {
			t.Fatalf("flow %d: Use failed", i)
		}
		if i%1000 == 999 {
			if s.Len() != 0 || s.Markers() != min(i+1, quotes.DefaultLimit) {
				t.Fatalf("after %d flows: %d live, %d markers", i+1, s.Len(), s.Markers())
			}
			advance(t, c, time.Millisecond)
		}
	}
	// The newest markers answer; the oldest were forgotten first.
	if q, ok := s.Find("acct_a", "q99999"); !ok || q.UsedBy != "jobq99999" {
		t.Errorf("newest marker: %+v, %v", q, ok)
	}
	if _, ok := s.Find("acct_a", "q0"); ok {
		t.Error("the oldest marker outlived the bound")
	}
}

// TestAccountBoundRefusesNotEvicts: one account's 100,001 quotes once made another account's
// unexpired quote answer 404. Each account now has its own bound, by count and by bytes, and a
// quote past it is refused; nothing already handed out is dropped.
func TestAccountBoundRefusesNotEvicts(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(t0)
	s := quotes.NewBounded(c, quotes.Limits{PerAccount: 3, PerAccountBytes: 1 << 20, Remember: time.Hour, Markers: 10, MarkerBytes: 1 << 20})
	if err := s.Add(quote("b", "victim", t0)); err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		err := s.Add(quote("a", fmt.Sprint("q", i), t0))
		if (err == nil) != (i < 3) {
			t.Fatalf("quote %d: err = %v", i, err)
		}
		if i >= 3 {
			var le *quotes.LimitError
			if !errors.Is(err, quotes.ErrTooMany) || !errors.As(err, &le) || le.Held != 3 || !le.RetryAt.Equal(t0.Add(ttl+time.Nanosecond)) {
				t.Fatalf("quote %d: err = %#v", i, err)
			}
		}
	}
	if _, ok := s.Find("b", "victim"); !ok {
		t.Error("another account's quote was dropped")
	}
	for i := range 3 {
		if _, ok := s.Find("a", fmt.Sprint("q", i)); !ok {
			t.Errorf("the account's own quote q%d was dropped", i)
		}
	}
	if s.Len() != 4 || c.Pending() != 0 {
		t.Errorf("Len = %d, Pending = %d; want 4 quotes and no timer", s.Len(), c.Pending())
	}
	// Once the quotes expire, the account has room again.
	advance(t, c, ttl+time.Nanosecond)
	if err := s.Add(quote("a", "later", c.Now())); err != nil {
		t.Errorf("after expiry: %v", err)
	}
}

// TestAccountByteBound: a quote's input is not kept (a digest stands in for it), so a 1 MB
// image_url costs what any quote does; the byte bound counts what is kept.
func TestAccountByteBound(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(t0)
	big := quote("a", "big00", t0)
	big.Input = []byte(`{"image_url":"` + strings.Repeat("A", 1<<20) + `"}`)
	bound := 10 * quotes.Size(big)
	if bound > 4<<10 {
		t.Fatalf("a quote of a 1 MB input counts %d bytes", bound/10)
	}
	s := quotes.NewBounded(c, quotes.Limits{PerAccount: 1000, PerAccountBytes: bound, Remember: time.Hour, Markers: 10, MarkerBytes: 1 << 20})
	stored := 0
	for i := range 100 {
		big.ID = fmt.Sprintf("big%02d", i)
		if s.Add(big) == nil {
			stored++
		}
	}
	if stored != 10 {
		t.Errorf("stored %d quotes under a bound of 10 quotes' size, want 10", stored)
	}
	if err := s.Add(quote("a", "small", t0)); err == nil || !strings.Contains(err.Error(), "per account") {
		t.Errorf("past the byte bound: %v", err)
	}
	if q, ok := s.Find("a", "big00"); !ok || q.Input != nil || !q.SameInput(big.Input) {
		t.Errorf("a stored quote: %+v, %v; want its digest only", q, ok)
	}
}

// TestExpiredQuoteKnownForRemember: once expired, a quote is known by its marker as expired for
// Remember, without its input, and then forgotten.
func TestExpiredQuoteKnownForRemember(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(t0)
	const remember = 24 * time.Hour
	s := quotes.NewBounded(c, quotes.Limits{PerAccount: 10, PerAccountBytes: 1 << 20, Remember: remember, Markers: 10, MarkerBytes: 1 << 20})
	q := quote("a", "q1", t0)
	if err := s.Add(q); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(t0.Add(ttl)); err != nil {
		t.Fatal(err)
	}
	if q, ok := s.Find("a", "q1"); !ok || !q.Live {
		t.Error("at its expires_at the quote is no longer whole")
	}
	if err := c.Advance(time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	got, ok := s.Find("a", "q1")
	if !ok || got.Live || got.Model != "m" || !got.ExpiresAt.Equal(q.ExpiresAt) {
		t.Fatalf("Find = %+v, %v; want the marker", got, ok)
	}
	if !got.SameInput(q.Input) || got.SameInput([]byte(`{"prompt":"y"}`)) {
		t.Error("the marker does not tell its input from another")
	}
	if _, ok := s.Find("b", "q1"); ok {
		t.Error("another account finds the marker")
	}
	if s.Len() != 0 || c.Pending() != 0 {
		t.Errorf("Len = %d, Pending = %d; a marker holds no quote and no timer", s.Len(), c.Pending())
	}
	if err := c.Set(t0.Add(ttl + remember)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Find("a", "q1"); !ok {
		t.Error("the marker is gone before Remember")
	}
	if err := c.Set(t0.Add(ttl + remember + time.Nanosecond)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Find("a", "q1"); ok {
		t.Error("the marker outlives Remember")
	}
}

// TestMarkersAreBounded: an account keeps at most Markers markers, dropping its oldest, and
// never another account's.
func TestMarkersAreBounded(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(t0)
	s := quotes.NewBounded(c, quotes.Limits{PerAccount: 100, PerAccountBytes: 1 << 20, Remember: 24 * time.Hour, Markers: 5, MarkerBytes: 1 << 20})
	if err := s.Add(quote("b", "other", t0)); err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		for i := range 10 {
			if err := s.Add(quote("a", fmt.Sprint("q", round*10+i), c.Now())); err != nil {
				t.Fatal(err)
			}
		}
		advance(t, c, ttl+time.Nanosecond) // past expires_at: the batch turns into markers
	}
	known := 0
	for i := range 200 {
		if _, ok := s.Find("a", fmt.Sprint("q", i)); ok {
			known++
			if i < 195 {
				t.Errorf("q%d is still known; the newest 5 markers should be", i)
			}
		}
	}
	if known != 5 {
		t.Errorf("%d markers kept, want 5", known)
	}
	if _, ok := s.Find("b", "other"); !ok {
		t.Error("another account's marker was dropped")
	}
}

// TestQuotesEndingTogetherEndInTheOrderMade: quotes that end at the same instant turn into
// markers in the order they were made, whatever their ids, so the marker bound forgets the
// first made first.
func TestQuotesEndingTogetherEndInTheOrderMade(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(t0)
	s := quotes.NewBounded(c, quotes.Limits{PerAccount: 10, PerAccountBytes: 1 << 20, Remember: time.Hour, Markers: 2, MarkerBytes: 1 << 20})
	for _, id := range []string{"c", "b", "a"} {
		if err := s.Add(quote("acct_a", id, t0)); err != nil {
			t.Fatal(err)
		}
	}
	advance(t, c, ttl+time.Nanosecond)
	for id, want := range map[string]bool{"c": false, "b": true, "a": true} {
		if _, known := s.Find("acct_a", id); known != want {
			t.Errorf("%s known %v; want %v", id, known, want)
		}
	}
}

func BenchmarkAdd(b *testing.B) {
	c := clock.NewManual(t0)
	s := quotes.NewBounded(c, quotes.DefaultLimits)
	i := 0
	for b.Loop() {
		i++
		if s.Add(quote(fmt.Sprint("acct", i%8), fmt.Sprint("q", i), t0)) != nil {
			b.StopTimer()
			s = quotes.NewBounded(c, quotes.DefaultLimits)
			b.StartTimer()
		}
	}
}

// TestQuotesEndByTheirOwnTime: quotes of different lifetimes end each at its own time, whatever
// order they came in; a quote made again under the same id ends when the new one does; and a
// refusal names the end of the oldest quote still held.
func TestQuotesEndByTheirOwnTime(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(t0)
	s := quotes.NewBounded(c, quotes.Limits{PerAccount: 3, PerAccountBytes: 1 << 20, Remember: 24 * time.Hour, Markers: 10, MarkerBytes: 1 << 20})
	lasting := func(id string, d time.Duration) quotes.Quote {
		q := quote("a", id, t0)
		q.ExpiresAt = t0.Add(d)
		return q
	}
	for _, q := range []quotes.Quote{lasting("long", 2*time.Hour), lasting("short", 10*time.Minute), lasting("again", 5*time.Minute), lasting("again", 30*time.Minute)} {
		if err := s.Add(q); err != nil {
			t.Fatal(err)
		}
	}
	var le *quotes.LimitError
	if err := s.Add(lasting("extra", time.Hour)); !errors.As(err, &le) || !le.RetryAt.Equal(t0.Add(10*time.Minute+time.Nanosecond)) {
		t.Fatalf("a fourth quote: %v (RetryAt %v); want refused until just after the short one ends", err, le)
	}
	for _, step := range []struct {
		at                 time.Duration
		long, short, again bool
	}{
		{5*time.Minute + time.Nanosecond, true, true, true}, // the first "again" was replaced
		{10 * time.Minute, true, true, true},
		{10*time.Minute + time.Nanosecond, true, false, true},
		{30*time.Minute + time.Nanosecond, true, false, false},
		{2*time.Hour + time.Nanosecond, false, false, false},
	} {
		if err := c.Set(t0.Add(step.at)); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]bool{"long": step.long, "short": step.short, "again": step.again} {
			if q, _ := s.Find("a", id); q.Live != want {
				t.Errorf("at +%v: %s held %v; want %v", step.at, id, q.Live, want)
			}
			if _, known := s.Find("a", id); !known {
				t.Errorf("at +%v: %s is not known as a quote or a marker", step.at, id)
			}
		}
	}
	if s.Len() != 0 {
		t.Errorf("Len = %d after every quote ended", s.Len())
	}
}

// BenchmarkAddSteady is the load benchmark's steady state: 8 accounts, each making about 2,000
// quotes a second that live a second, so each holds about 2,000 quotes and its 10,000 markers,
// and every Add ends one quote and drops one marker. The limits are the emulator's: the
// defaults without a grace, so a quote ends as it expires.
func BenchmarkAddSteady(b *testing.B) {
	const (
		accounts = 8
		perSec   = 2000                       // quotes per second per account
		life     = time.Second                // how long a quote lives
		step     = life / (accounts * perSec) // between two Adds, whatever the account
		ring     = 16384                      // ids per account, reused once long forgotten
		prefill  = accounts * perSec * 7      // seven seconds: 2,000 held and 10,000 markers each
	)
	l := quotes.DefaultLimits
	c := clock.NewManual(t0)
	s := quotes.NewBounded(c, l)
	names := make([]string, accounts)
	ids := make([][]string, accounts)
	for a := range accounts {
		names[a] = fmt.Sprintf("acct_%016x", uint64(a+1)*0x9e3779b97f4a7c15)
		ids[a] = make([]string, ring)
		for i := range ring {
			ids[a][i] = fmt.Sprintf("quote_%08x-%04x-%04x-%04x-%012x", a, i>>16, i&0xffff, a*31+i%7, i*2654435761)
		}
	}
	input := []byte(`{"aspect_ratio":"16:9","prompt":"a lighthouse on a cliff at dusk, long exposure","seed":42}`)
	n := 0
	add := func() {
		a := n % accounts
		now := c.Now()
		q := quotes.Quote{ID: ids[a][(n/accounts)%ring], Account: names[a], Model: "image-fast", Input: input, Credits: 4, CreatedAt: now, ExpiresAt: now.Add(life)}
		if err := s.Add(q); err != nil {
			b.Fatal(err)
		}
		n++
		if err := c.Advance(step); err != nil {
			b.Fatal(err)
		}
	}
	for range prefill {
		add()
	}
	if held := s.Len(); held < accounts*perSec*9/10 || held > accounts*perSec*11/10 {
		b.Fatalf("%d quotes held after the warm-up; want about %d", held, accounts*perSec)
	}
	// The oldest of the 10,000 markers is there; the one before it is gone.
	last := n/accounts - 1 // account 0's last quote
	if _, ok := s.Find(names[0], ids[0][last-perSec-9999]); !ok {
		b.Fatal("the oldest marker is missing")
	}
	if _, ok := s.Find(names[0], ids[0][last-perSec-10001]); ok {
		b.Fatal("more than 10,000 markers are kept")
	}
	b.ReportAllocs()
	for b.Loop() {
		add()
	}
}

// BenchmarkFootprint reports what one account's held quote and marker cost in memory beyond
// their text (id, input): 10,000 quotes held at once, then 10,000 markers made 100 at a time
// (so few quotes are held beside them). The time per op is meaningless.
func BenchmarkFootprint(b *testing.B) {
	const n, batch = 10_000, 100
	l := quotes.DefaultLimits
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("quote_%032x", i)
	}
	input := []byte(`{"prompt":"a lighthouse"}`)
	heap := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	add := func(s *quotes.Store, c *clock.Clock, id string) {
		if err := s.Add(quotes.Quote{ID: id, Account: "acct", Model: "m", Input: input, CreatedAt: c.Now(), ExpiresAt: c.Now().Add(time.Second)}); err != nil {
			b.Fatal(err)
		}
	}
	var perQuote, perMarker float64
	for b.Loop() {
		c := clock.NewManual(t0)
		before := heap()
		s := quotes.NewBounded(c, l)
		for _, id := range ids {
			add(s, c, id)
		}
		perQuote = float64(heap()-before) / n
		runtime.KeepAlive(s)

		before = heap()
		s = quotes.NewBounded(c, l)
		for i, id := range ids {
			add(s, c, id)
			if i%batch == batch-1 {
				advance(b, c, time.Second+time.Nanosecond)
			}
		}
		if s.Len() != 0 {
			b.Fatal("quotes are still held")
		}
		perMarker = float64(heap()-before) / n
		if _, ok := s.Find("acct", ids[0]); !ok {
			b.Fatal("the first marker is missing")
		}
	}
	runtime.KeepAlive(ids)
	b.ReportMetric(perQuote, "B/quote")
	b.ReportMetric(perMarker, "B/marker")
}

// A quote just used stays known by its marker even when the marker bound is full and its
// marker is due before the others: the generation may yet fail to hold credits and Release it.
func TestJustUsedMarkerIsNotEvicted(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(t0)
	l := quotes.DefaultLimits
	l.Markers = 1
	s := quotes.NewBounded(c, l)
	late := quote("acct_a", "late", t0)
	late.ExpiresAt = t0.Add(time.Hour) // its marker is forgotten after the next one's
	if err := s.Add(late); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(quote("acct_a", "soon", t0)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Use("acct_a", "late", "job1"); !ok {
		t.Fatal("late could not be used")
	}
	if _, ok := s.Use("acct_a", "soon", "job2"); !ok {
		t.Fatal("soon could not be used")
	}
	s.Release("acct_a", "soon", "job2")
	if by, ok := s.Use("acct_a", "soon", "job3"); !ok || by != "job3" {
		t.Errorf("after Release, Use = %q, %v; want the quote usable again", by, ok)
	}
	if n := s.Markers(); n > 1 {
		t.Errorf("%d markers held, bound 1", n)
	}
}

// A quote that expired unused leaves a marker naming no job: a Release naming no job does not
// bring it back to life.
func TestReleaseOfNoJobRevivesNothing(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(t0)
	s := quotes.NewBounded(c, quotes.Limits{PerAccount: 10, PerAccountBytes: 1 << 20, Remember: time.Hour, Markers: 10, MarkerBytes: 1 << 20})
	if err := s.Add(quote("a", "q1", t0)); err != nil {
		t.Fatal(err)
	}
	advance(t, c, ttl+time.Nanosecond)
	s.Release("a", "q1", "")
	if q, ok := s.Find("a", "q1"); !ok || q.Live || s.Len() != 0 {
		t.Errorf("after Release of no job: %+v, %v, %d live; want the expired marker", q, ok, s.Len())
	}
}
