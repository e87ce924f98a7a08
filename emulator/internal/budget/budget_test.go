package budget

import "testing"

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
