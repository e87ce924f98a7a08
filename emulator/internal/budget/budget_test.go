package budget

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

func TestAdmitRecountsBeforeRefusing(t *testing.T) {
	t.Parallel()
	b := New(100)
	held := int64(90) // what the holders really hold; Add reports lag behind it
	b.Add(held)
	recounts := 0
	b.OnRecount(func() { recounts++; b.Add(held - b.Used()) })
	if !b.Admit(10) || recounts != 0 {
		t.Errorf("10 bytes into 90 of 100: admitted %v after %d recounts, want at once", b.Admit(10), recounts)
	}
	if b.Admit(11) {
		t.Error("11 bytes into 90 of 100 were admitted")
	}
	if recounts != 1 {
		t.Errorf("%d recounts before refusing, want 1", recounts)
	}
	held = 50 // let go, not yet reported
	if !b.Admit(40) {
		t.Error("the recount did not find the bytes let go")
	}
	if b.Full() {
		t.Error("a budget half used reports full")
	}
	b.Add(60)
	if !b.Full() {
		t.Errorf("%d of %d used, and not full", b.Used(), b.Limit())
	}
}

func TestNoLimit(t *testing.T) {
	t.Parallel()
	b := New(0)
	b.Add(1 << 62)
	if !b.Admit(1<<61) || b.Full() {
		t.Error("a budget without a limit refused")
	}
}

// A caller that queued behind a recount uses its result: with the budget truly full, callers
// must not each walk every store in turn.
func TestWaitersShareARecount(t *testing.T) {
	t.Parallel()
	b := New(100)
	b.Add(100)
	inRecount, release := make(chan struct{}), make(chan struct{})
	var recounts atomic.Int32
	b.OnRecount(func() {
		if recounts.Add(1) == 1 {
			close(inRecount)
			<-release
		}
	})
	done := make(chan bool, 2)
	go func() { done <- b.Admit(1) }()
	<-inRecount
	go func() { done <- b.Admit(1) }()
	// Wait until the second caller is queued on the lock the first one holds.
	for !waitingOnLock() {
		runtime.Gosched()
	}
	close(release)
	if first, second := <-done, <-done; first || second {
		t.Error("a full budget admitted a byte")
	}
	if n := recounts.Load(); n != 1 {
		t.Errorf("%d recounts for two callers queued together, want 1", n)
	}
}

// waitingOnLock reports whether some goroutine is blocked on a mutex inside Admit.
func waitingOnLock() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[sync.Mutex.Lock") && strings.Contains(g, "budget.(*Budget).Admit") {
			return true
		}
	}
	return false
}
