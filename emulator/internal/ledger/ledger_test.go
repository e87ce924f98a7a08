package ledger_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
)

func balance(t *testing.T, l *ledger.Ledger, account string) ledger.Balance {
	t.Helper()
	b, ok := l.Balance(account)
	if !ok {
		t.Fatalf("Balance(%q) not found", account)
	}
	return b
}

func TestLedgerOperations(t *testing.T) {
	t.Parallel()
	type op struct {
		kind    string // hold, charge, refund, release, set
		account string
		credits int64
		wantErr error
	}
	for _, tc := range []struct {
		name string
		ops  []op
		want ledger.Balance // of account "a", which starts with 100
	}{
		{"nothing", nil, ledger.Balance{Account: "a", Available: 100}},
		{"hold", []op{{"hold", "a", 30, nil}}, ledger.Balance{Account: "a", Available: 70, Held: 30}},
		{"hold everything", []op{{"hold", "a", 100, nil}}, ledger.Balance{Account: "a", Held: 100}},
		{"hold zero", []op{{"hold", "a", 0, nil}}, ledger.Balance{Account: "a", Available: 100}},
		{"hold then charge", []op{{"hold", "a", 30, nil}, {"charge", "a", 30, nil}}, ledger.Balance{Account: "a", Available: 70, Charged: 30}},
		{"hold then refund", []op{{"hold", "a", 30, nil}, {"refund", "a", 30, nil}}, ledger.Balance{Account: "a", Available: 100, Refunded: 30}},
		{"two holds, charge one, refund the other", []op{
			{"hold", "a", 30, nil}, {"hold", "a", 20, nil}, {"charge", "a", 20, nil}, {"refund", "a", 30, nil},
		}, ledger.Balance{Account: "a", Available: 80, Charged: 20, Refunded: 30}},
		{"partial charge leaves the rest held", []op{{"hold", "a", 30, nil}, {"charge", "a", 10, nil}}, ledger.Balance{Account: "a", Available: 70, Held: 20, Charged: 10}},
		{"insufficient hold changes nothing", []op{{"hold", "a", 101, ledger.ErrInsufficient}}, ledger.Balance{Account: "a", Available: 100}},
		{"insufficient after an earlier hold", []op{
			{"hold", "a", 60, nil}, {"hold", "a", 41, ledger.ErrInsufficient}, {"hold", "a", 40, nil},
		}, ledger.Balance{Account: "a", Held: 100}},
		{"negative hold is refused", []op{{"hold", "a", -5, ledger.ErrInsufficient}}, ledger.Balance{Account: "a", Available: 100}},
		{"charge cannot exceed what is held", []op{{"hold", "a", 10, nil}, {"charge", "a", 50, nil}}, ledger.Balance{Account: "a", Available: 90, Charged: 10}},
		{"refund cannot exceed what is held", []op{{"hold", "a", 10, nil}, {"refund", "a", 50, nil}}, ledger.Balance{Account: "a", Available: 100, Refunded: 10}},
		{"charge with nothing held", []op{{"charge", "a", 10, nil}}, ledger.Balance{Account: "a", Available: 100}},
		{"refund with nothing held", []op{{"refund", "a", 10, nil}}, ledger.Balance{Account: "a", Available: 100}},
		{"set available", []op{{"set", "a", 5, nil}}, ledger.Balance{Account: "a", Available: 5}},
		{"set available keeps held and charged", []op{
			{"hold", "a", 30, nil}, {"hold", "a", 20, nil}, {"charge", "a", 20, nil}, {"set", "a", 1000, nil},
		}, ledger.Balance{Account: "a", Available: 1000, Held: 30, Charged: 20}},
		{"set available to zero, then a hold fails", []op{{"set", "a", 0, nil}, {"hold", "a", 1, ledger.ErrInsufficient}}, ledger.Balance{Account: "a"}},
		{"set available negative is refused", []op{{"set", "a", -1, ledger.ErrInsufficient}}, ledger.Balance{Account: "a", Available: 100}},
		{"refund after set available returns the hold", []op{
			{"hold", "a", 30, nil}, {"set", "a", 0, nil}, {"refund", "a", 30, nil},
		}, ledger.Balance{Account: "a", Available: 30, Refunded: 30}},
		{"unknown account", []op{
			{"hold", "nobody", 1, ledger.ErrNoAccount}, {"set", "nobody", 1, ledger.ErrNoAccount},
			{"charge", "nobody", 1, nil}, {"refund", "nobody", 1, nil},
		}, ledger.Balance{Account: "a", Available: 100}},
		{"hold then release counts no refund", []op{{"hold", "a", 30, nil}, {"release", "a", 30, nil}}, ledger.Balance{Account: "a", Available: 100}},
		{"release cannot exceed what is held", []op{{"hold", "a", 10, nil}, {"release", "a", 50, nil}}, ledger.Balance{Account: "a", Available: 100}},
		{"other account untouched", []op{{"hold", "b", 50, nil}, {"charge", "b", 50, nil}}, ledger.Balance{Account: "a", Available: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := ledger.New(map[string]int64{"a": 100, "b": 100})
			for i, o := range tc.ops {
				before, _ := l.Balance(o.account)
				var err error
				switch o.kind {
				case "hold":
					err = l.Hold(o.account, o.credits)
				case "charge":
					l.Charge(o.account, o.credits)
				case "refund":
					l.Refund(o.account, o.credits)
				case "release":
					l.Release(o.account, o.credits)
				case "set":
					var got ledger.Balance
					got, err = l.SetAvailable(o.account, o.credits)
					if err == nil {
						if now := balance(t, l, o.account); got != now {
							t.Errorf("op %d: SetAvailable returned %+v; the balance is %+v", i, got, now)
						}
					}
				}
				if !errors.Is(err, o.wantErr) {
					t.Fatalf("op %d %s(%s, %d): error %v; want %v", i, o.kind, o.account, o.credits, err, o.wantErr)
				}
				if err != nil {
					if after, _ := l.Balance(o.account); after != before {
						t.Errorf("op %d %s(%s, %d) failed but changed %+v into %+v", i, o.kind, o.account, o.credits, before, after)
					}
				}
			}
			if got := balance(t, l, "a"); got != tc.want {
				t.Errorf("balance = %+v; want %+v", got, tc.want)
			}
		})
	}
}

func TestLedgerBalances(t *testing.T) {
	t.Parallel()
	l := ledger.New(map[string]int64{"zed": 3, "acct_b": 2, "acct_a": 1})
	if err := l.Hold("acct_b", 2); err != nil {
		t.Fatal(err)
	}
	l.Charge("acct_b", 1)
	want := []ledger.Balance{
		{Account: "acct_a", Available: 1},
		{Account: "acct_b", Held: 1, Charged: 1},
		{Account: "zed", Available: 3},
	}
	got := l.Balances()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Balances() = %+v; want %+v (ordered by account)", got, want)
	}
	// The snapshot is a copy: changing it does not change the ledger.
	got[0].Available = 999
	if b := balance(t, l, "acct_a"); b.Available != 1 {
		t.Errorf("changing a Balances() snapshot changed the ledger: %+v", b)
	}
	if _, ok := l.Balance("nobody"); ok {
		t.Error("Balance(nobody) found")
	}
	if b := (ledger.Balance{Available: 1, Held: 2, Charged: 3}); b.Total() != 6 {
		t.Errorf("Total() = %d; want 6", b.Total())
	}
	if got := ledger.New(nil).Balances(); len(got) != 0 {
		t.Errorf("empty ledger Balances() = %+v", got)
	}
}

// TestLedgerConcurrent runs goroutines doing thousands of random holds, each settled exactly
// once by a charge or a refund, on a few shared accounts. After every operation a snapshot of
// all balances must conserve each account's starting credits with no negative field; at the
// end nothing is held and what was charged is exactly what the goroutines charged.
func TestLedgerConcurrent(t *testing.T) {
	t.Parallel()
	const (
		workers = 8
		ops     = 3000
		start   = 200_000
	)
	accounts := []string{"acct_a", "acct_b", "acct_c"}
	startCredits := map[string]int64{}
	for _, a := range accounts {
		startCredits[a] = start
	}
	l := ledger.New(startCredits)
	var charged [3]atomic.Int64
	var insufficient atomic.Int64

	check := func() error {
		for _, b := range l.Balances() {
			if b.Available < 0 || b.Held < 0 || b.Charged < 0 {
				return fmt.Errorf("negative field: %+v", b)
			}
			if b.Total() != startCredits[b.Account] {
				return fmt.Errorf("%s: available+held+charged = %d; want %d (%+v)", b.Account, b.Total(), startCredits[b.Account], b)
			}
		}
		return nil
	}

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			type hold struct {
				account int
				credits int64
			}
			var open []hold
			settle := func(i int) {
				h := open[i]
				open[i] = open[len(open)-1]
				open = open[:len(open)-1]
				if rng.IntN(2) == 0 {
					l.Charge(accounts[h.account], h.credits)
					charged[h.account].Add(h.credits)
				} else {
					l.Refund(accounts[h.account], h.credits)
				}
			}
			for range ops {
				if len(open) == 0 || (len(open) < 16 && rng.IntN(2) == 0) {
					a := rng.IntN(len(accounts))
					credits := rng.Int64N(200)
					switch err := l.Hold(accounts[a], credits); {
					case err == nil:
						open = append(open, hold{a, credits})
					case errors.Is(err, ledger.ErrInsufficient):
						insufficient.Add(1)
					default:
						errs <- err
						return
					}
				} else {
					settle(rng.IntN(len(open)))
				}
				if err := check(); err != nil {
					errs <- err
					return
				}
			}
			for len(open) > 0 {
				settle(len(open) - 1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := check(); err != nil {
		t.Error(err)
	}
	for i, a := range accounts {
		b := balance(t, l, a)
		if b.Held != 0 {
			t.Errorf("%s: %d credits still held after every hold was settled", a, b.Held)
		}
		if b.Charged != charged[i].Load() {
			t.Errorf("%s: charged %d; the workers charged %d", a, b.Charged, charged[i].Load())
		}
		if b.Available != start-b.Charged {
			t.Errorf("%s: available %d; want start - charged = %d", a, b.Available, start-b.Charged)
		}
	}
	t.Logf("%d holds refused for insufficient credits", insufficient.Load())
}

// TestLedgerConcurrentLastCredits: many goroutines race to hold one credit each from an account
// that has exactly N; exactly N succeed.
func TestLedgerConcurrentLastCredits(t *testing.T) {
	t.Parallel()
	const n, goroutines = 50, 200
	l := ledger.New(map[string]int64{"a": n})
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			switch err := l.Hold("a", 1); {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, ledger.ErrInsufficient):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != n || refused.Load() != goroutines-n {
		t.Errorf("%d holds succeeded and %d were refused; want %d and %d", ok.Load(), refused.Load(), n, goroutines-n)
	}
	if b := balance(t, l, "a"); b != (ledger.Balance{Account: "a", Held: n}) {
		t.Errorf("balance = %+v", b)
	}
}

func BenchmarkLedgerHoldCharge(b *testing.B) {
	l := ledger.New(map[string]int64{"a": 1 << 62, "b": 1 << 62, "c": 1 << 62})
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Hold("b", 12); err != nil {
			b.Fatal(err)
		}
		l.Charge("b", 12)
	}
}
