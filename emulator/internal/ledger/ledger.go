// Package ledger keeps each account's credits as available, held and charged (with a running
// total of refunds). Every change
// moves credits between those three under one lock, so their sum only changes when a balance is
// set on purpose, and concurrent generations can never spend the same credit twice.
package ledger

import (
	"github.com/mediagen/mediagen-emulator/emulator/api"

	"errors"
	"sort"
	"sync"
)

// ErrInsufficient is returned when an account cannot cover a hold.
var ErrInsufficient = errors.New("insufficient credits")

// ErrNoAccount is returned for an account the ledger does not know.
var ErrNoAccount = errors.New("no such account")

// Balance is one account's credits.
type Balance = api.Balance

// Ledger holds every account's balance. It is safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	accounts map[string]*Balance
}

// New returns a ledger with the starting credits of each account.
func New(start map[string]int64) *Ledger {
	l := &Ledger{accounts: make(map[string]*Balance, len(start))}
	for id, credits := range start {
		l.accounts[id] = &Balance{Account: id, Available: credits}
	}
	return l
}

// Hold moves credits from available to held, or fails without changing anything.
func (l *Ledger) Hold(account string, credits int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.accounts[account]
	if !ok {
		return ErrNoAccount
	}
	if credits < 0 || b.Available < credits {
		return ErrInsufficient
	}
	b.Available -= credits
	b.Held += credits
	return nil
}

// Release undoes a hold for a job that was never made: the credits go back to available, and
// no refund is counted, since nothing was ever bought.
func (l *Ledger) Release(account string, credits int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.accounts[account]; ok {
		credits = min(credits, b.Held)
		b.Held -= credits
		b.Available += credits
	}
}

// Charge turns held credits into charged ones (a job succeeded).
func (l *Ledger) Charge(account string, credits int64) {
	l.settle(account, credits, true)
}

// Refund returns held credits to available (a job failed, was canceled or expired).
func (l *Ledger) Refund(account string, credits int64) {
	l.settle(account, credits, false)
}

func (l *Ledger) settle(account string, credits int64, charge bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.accounts[account]
	if !ok {
		return
	}
	credits = min(credits, b.Held)
	b.Held -= credits
	if charge {
		b.Charged += credits
	} else {
		b.Available += credits
		b.Refunded += credits
	}
}

// Balance returns an account's balance.
func (l *Ledger) Balance(account string) (Balance, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.accounts[account]
	if !ok {
		return Balance{}, false
	}
	return *b, true
}

// Balances returns every account's balance, ordered by account id.
func (l *Ledger) Balances() []Balance {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Balance, 0, len(l.accounts))
	for _, b := range l.accounts {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Account < out[j].Account })
	return out
}

// SetAvailable sets what an account can spend now; held and charged credits are untouched.
func (l *Ledger) SetAvailable(account string, credits int64) (Balance, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.accounts[account]
	if !ok {
		return Balance{}, ErrNoAccount
	}
	if credits < 0 {
		return Balance{}, ErrInsufficient
	}
	b.Available = credits
	return *b, nil
}

// Restore returns a ledger holding exactly these balances (a snapshot's accounts).
func Restore(balances []Balance) *Ledger {
	l := &Ledger{accounts: make(map[string]*Balance, len(balances))}
	for _, b := range balances {
		l.accounts[b.Account] = &b
	}
	return l
}
