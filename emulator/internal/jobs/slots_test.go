package jobs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// limited makes a job of group g under limit, with a plan of queue then run.
func limited(id, g string, limit int, queue, run time.Duration) jobs.New {
	return jobs.New{ID: id, Slot: jobs.Slot{Group: g, Limit: limit},
		Plan: jobs.Plan{Queue: queue, Run: run, Ending: jobs.Ending{Status: jobs.Succeeded}}}
}

// line is each job's status and queue position, as "id:status/position".
func (w *world) line(ids ...string) string {
	w.t.Helper()
	s := ""
	for _, id := range ids {
		v := w.get(id)
		s += fmt.Sprintf("%s:%s/%d ", id, v.Status, v.QueuePosition)
	}
	return s
}

// TestSlotsQueueInOrder: with two slots, jobs past the limit wait in the order they came,
// each with its place in the line; as each running job ends the next in line starts its
// course (queue time, then run) at that instant, and the positions move up.
func TestSlotsQueueInOrder(t *testing.T) {
	w := newWorld(t, retention)
	for i := range 5 {
		w.create(limited(fmt.Sprint("j", i), "acct", 2, time.Second, 10*time.Second))
	}
	if got, want := w.line("j0", "j1", "j2", "j3", "j4"), "j0:queued/0 j1:queued/0 j2:queued/1 j3:queued/2 j4:queued/3 "; got != want {
		t.Fatalf("at creation: %s, want %s", got, want)
	}
	w.advance(time.Second)
	if got, want := w.line("j0", "j1", "j2"), "j0:running/0 j1:running/0 j2:queued/1 "; got != want {
		t.Fatalf("after 1s: %s, want %s", got, want)
	}
	w.advance(10 * time.Second) // j0 and j1 end at 11s; j2 and j3 get their slots then
	if got, want := w.line("j0", "j1", "j2", "j3", "j4"), "j0:succeeded/0 j1:succeeded/0 j2:queued/0 j3:queued/0 j4:queued/1 "; got != want {
		t.Fatalf("after 11s: %s, want %s", got, want)
	}
	w.advance(time.Second)
	v := w.get("j2")
	if v.Status != jobs.Running || !v.StartedAt.Equal(t0.Add(12*time.Second)) {
		t.Fatalf("j2 = %s started %v, want running from %v (its course starts with its slot)", v.Status, v.StartedAt, t0.Add(12*time.Second))
	}
	w.advance(time.Hour) // every slot frees in turn, whatever step the clock takes
	for i := range 5 {
		v := w.get(fmt.Sprint("j", i))
		want := t0.Add(time.Duration(11*(i/2+1)) * time.Second)
		if v.Status != jobs.Succeeded || !v.FinishedAt.Equal(want) {
			t.Errorf("j%d = %s at %v, want succeeded at %v", i, v.Status, v.FinishedAt, want)
		}
	}
	if b := w.balance(account); b.Held != 0 || b.Charged != 5*credits {
		t.Errorf("balance = %+v, want every job charged", b)
	}
}

// TestSlotsCancelMovesUp: a waiting job that is canceled frees nothing, leaves the line and
// is refunded; the jobs behind it move up, and a canceled running job gives its slot to the
// first in line at once.
func TestSlotsCancelMovesUp(t *testing.T) {
	w := newWorld(t, retention)
	for i := range 5 {
		w.create(limited(fmt.Sprint("j", i), "acct", 1, 0, time.Minute))
	}
	w.advance(0)
	if _, err := w.engine.Cancel(account, "j2"); err != nil {
		t.Fatal(err)
	}
	if got, want := w.line("j0", "j1", "j2", "j3", "j4"), "j0:running/0 j1:queued/1 j2:canceled/0 j3:queued/2 j4:queued/3 "; got != want {
		t.Fatalf("after canceling j2: %s, want %s", got, want)
	}
	if _, err := w.engine.Cancel(account, "j1"); err != nil { // the first in line
		t.Fatal(err)
	}
	if got, want := w.line("j0", "j3", "j4"), "j0:running/0 j3:queued/1 j4:queued/2 "; got != want {
		t.Fatalf("after canceling j1: %s, want %s", got, want)
	}
	w.advance(10 * time.Second)
	if _, err := w.engine.Cancel(account, "j0"); err != nil { // the running one
		t.Fatal(err)
	}
	w.advance(0)
	if got, want := w.line("j0", "j3", "j4"), "j0:canceled/0 j3:running/0 j4:queued/1 "; got != want {
		t.Fatalf("after canceling j0: %s, want %s", got, want)
	}
	if v := w.get("j3"); !v.StartedAt.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("j3 started at %v, want when j0's slot freed", v.StartedAt)
	}
	if b := w.balance(account); b.Held != 2*credits || b.Available != start-2*credits {
		t.Errorf("balance = %+v, want only j3 and j4 held", b)
	}
}

// TestSlotsLeavingLetsTheNextIn: the line's first job decides its limit, so when a waiting
// job leaves and the new first job's limit is higher (a scenario raised it), it gets a free
// slot at once rather than waiting for an unrelated job to come or go.
func TestSlotsLeavingLetsTheNextIn(t *testing.T) {
	w := newWorld(t, retention)
	w.create(limited("a", "acct", 1, 0, time.Minute))
	w.create(limited("b", "acct", 1, 0, time.Minute))
	w.create(limited("c", "acct", 3, 0, time.Minute))
	w.advance(0)
	if got, want := w.line("a", "b", "c"), "a:running/0 b:queued/1 c:queued/2 "; got != want {
		t.Fatalf("before: %s, want %s", got, want)
	}
	if _, err := w.engine.Cancel(account, "b"); err != nil {
		t.Fatal(err)
	}
	w.advance(0)
	if got, want := w.line("a", "b", "c"), "a:running/0 b:canceled/0 c:running/0 "; got != want {
		t.Errorf("after b left: %s, want %s", got, want)
	}
}

// TestSlotsGroupsApart: each group has its own slots: a job of one never waits for another's.
func TestSlotsGroupsApart(t *testing.T) {
	w := newWorld(t, retention)
	w.create(limited("a1", "key a", 1, 0, time.Minute))
	w.create(limited("a2", "key a", 1, 0, time.Minute))
	w.create(limited("b1", "key b", 1, 0, time.Minute))
	w.create(jobs.New{ID: "free", Plan: jobs.Plan{Run: time.Minute, Ending: jobs.Ending{Status: jobs.Succeeded}}})
	w.advance(0)
	if got, want := w.line("a1", "a2", "b1", "free"), "a1:running/0 a2:queued/1 b1:running/0 free:running/0 "; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}

// TestSlotsDeadline: a waiting job's time limit counts from its creation: one still in the
// line then expires and leaves it; one that gets its slot too late to start in time expires
// at its limit holding the slot, and the next in line starts then.
func TestSlotsDeadline(t *testing.T) {
	w := newWorld(t, retention)
	n := func(id string, timeout time.Duration) jobs.New {
		j := limited(id, "acct", 1, 0, time.Minute)
		j.Plan.QueueTimeout = timeout
		return j
	}
	w.create(n("run", 0))
	w.create(n("short", 30*time.Second))
	w.create(n("long", 2*time.Minute))
	w.advance(30 * time.Second)
	v := w.get("short")
	if v.Status != jobs.Expired || v.Error == nil || v.Error.Code != "queue_timeout" || !v.FinishedAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("short = %+v, want expired with queue_timeout at 30s", v)
	}
	if got := w.get("long").QueuePosition; got != 1 {
		t.Fatalf("long's position = %d, want 1 once short left", got)
	}
	w.advance(time.Hour)
	if v := w.get("long"); v.Status != jobs.Succeeded || !v.StartedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("long = %s started %v, want succeeded from 1m", v.Status, v.StartedAt)
	}
	if b := w.balance(account); b.Held != 0 || b.Charged != 2*credits {
		t.Errorf("balance = %+v, want two charged and the expired one refunded", b)
	}
}

// TestSlotsNextOf: a waiting job next moves when its group's first slot frees, which is when
// the job holding it ends (its queue time and run), or at its own deadline if sooner.
func TestSlotsNextOf(t *testing.T) {
	w := newWorld(t, retention)
	w.create(limited("first", "acct", 1, 5*time.Second, time.Minute))
	w.create(limited("second", "acct", 1, 5*time.Second, time.Minute))
	at, ok := w.engine.NextOf(account, "second")
	if want := t0.Add(65 * time.Second); !ok || !at.Equal(want) {
		t.Fatalf("NextOf(second) = %v %v, want %v", at, ok, want)
	}
	if _, busy := w.engine.Busy(jobs.Slot{Group: "acct", Limit: 1}); !busy {
		t.Error("Busy says a slot is free while one job runs and one waits")
	}
	w.setTime(at)
	if v := w.get("second"); v.Status != jobs.Queued || v.QueuePosition != 0 {
		t.Fatalf("second = %s/%d, want holding its slot", v.Status, v.QueuePosition)
	}
}

// TestTryCreate: a job that must not wait is not created while its group is full, and says
// when the first slot frees; nothing of it is held.
func TestTryCreate(t *testing.T) {
	w := newWorld(t, retention)
	w.create(limited("run", "acct", 1, 2*time.Second, 8*time.Second))
	_, err := w.engine.TryCreate(limited("refused", "acct", 1, 0, time.Second))
	var limit *jobs.LimitError
	if !errors.As(err, &limit) || !limit.RetryAt.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("TryCreate = %v, want a LimitError retrying at 10s", err)
	}
	if _, ok := w.engine.Get(account, "refused"); ok || w.engine.Len() != 1 {
		t.Fatal("the refused job was created")
	}
	w.advance(10 * time.Second)
	if _, err := w.engine.TryCreate(limited("next", "acct", 1, 0, time.Second)); err != nil {
		t.Fatalf("TryCreate once the slot freed = %v", err)
	}
}

// TestSlotsSnapshot: a line with holders and waiters goes through Export and Import as it
// stood: the same positions, the same next steps, and the same course afterwards.
func TestSlotsSnapshot(t *testing.T) {
	w := newWorld(t, retention)
	for i := range 4 {
		w.create(limited(fmt.Sprint("j", i), "acct", 1, time.Second, 10*time.Second))
	}
	w.engine.Cancel(account, "j2")
	w.advance(5 * time.Second)
	doc, err := json.Marshal(w.engine.Export())
	if err != nil {
		t.Fatal(err)
	}
	var list []jobsSnapshotJob
	if err := json.Unmarshal(doc, &list); err != nil {
		t.Fatal(err)
	}
	slots := map[string]string{}
	for _, sj := range list {
		switch {
		case sj.Slot == nil:
			slots[sj.ID] = "none"
		case sj.Slot.AdmittedAt != "":
			slots[sj.ID] = "holds"
		default:
			slots[sj.ID] = "waits"
		}
	}
	if got, want := fmt.Sprint(slots), "map[j0:holds j1:waits j2:none j3:waits]"; got != want {
		t.Errorf("exported slots %s, want %s", got, want)
	}
	r := newWorld(t, retention)
	r.setTime(w.clock.Now())
	r.engine.Import(w.engine.Export(), nil, "/files/", func(ptr, msg string) { t.Errorf("import: %s %s", ptr, msg) })
	ids := []string{"j0", "j1", "j2", "j3"}
	if got, want := r.line(ids...), w.line(ids...); got != want {
		t.Fatalf("restored line %s, want %s", got, want)
	}
	again, _ := json.Marshal(r.engine.Export())
	if string(again) != string(doc) {
		t.Errorf("a restored engine exports\n%s\nwant\n%s", again, doc)
	}
	w.advance(time.Hour)
	r.advance(time.Hour)
	for _, id := range ids {
		a, b := w.get(id), r.get(id)
		if a.Status != b.Status || !a.StartedAt.Equal(b.StartedAt) || !a.FinishedAt.Equal(b.FinishedAt) {
			t.Errorf("%s: restored ran %s %v–%v, the original %s %v–%v", id, b.Status, b.StartedAt, b.FinishedAt, a.Status, a.StartedAt, a.FinishedAt)
		}
	}
}

// jobsSnapshotJob reads the slot a snapshot gives a job.
type jobsSnapshotJob struct {
	ID   string `json:"id"`
	Slot *struct {
		Group      string `json:"group"`
		AdmittedAt string `json:"admitted_at"`
	} `json:"slot"`
}

// TestSlotsLongLine: a long line whose jobs leave out of turn keeps exact positions, through
// the renumbering that bounds what it remembers of them.
func TestSlotsLongLine(t *testing.T) {
	w := newWorld(t, retention)
	w.ledger.SetAvailable(account, 1_000_000)
	const n = 400
	for i := range n {
		w.create(limited(fmt.Sprint("j", i), "acct", 1, 0, time.Minute))
	}
	// Cancel every job but each fifth from the back, out of turn.
	kept := []string{}
	for i := n - 1; i >= 1; i-- {
		id := fmt.Sprint("j", i)
		if i%5 == 0 {
			kept = append([]string{id}, kept...)
			continue
		}
		if _, err := w.engine.Cancel(account, id); err != nil {
			t.Fatal(err)
		}
	}
	for p, id := range kept {
		if got := w.get(id).QueuePosition; got != p+1 {
			t.Fatalf("%s at position %d, want %d", id, got, p+1)
		}
	}
}

// TestSlotsTooLateToStart: a job that gets its slot too late for its queue time to end before
// its time limit holds the slot until the limit, expires there, and the next in line starts.
func TestSlotsTooLateToStart(t *testing.T) {
	w := newWorld(t, retention)
	w.create(limited("first", "acct", 1, 0, time.Minute))
	late := limited("late", "acct", 1, 30*time.Second, time.Minute)
	late.Plan.QueueTimeout = 80 * time.Second
	w.create(late)
	w.create(limited("next", "acct", 1, 0, time.Minute))
	w.advance(time.Minute)
	if got, want := w.line("late", "next"), "late:queued/0 next:queued/1 "; got != want {
		t.Fatalf("at 1m: %s, want %s (late holds the slot)", got, want)
	}
	w.advance(20 * time.Second)
	v := w.get("late")
	if v.Status != jobs.Expired || !v.FinishedAt.Equal(t0.Add(80*time.Second)) || v.Error.Code != "queue_timeout" {
		t.Fatalf("late = %s at %v (%+v), want expired at its limit, 80s", v.Status, v.FinishedAt, v.Error)
	}
	if v := w.get("next"); v.Status != jobs.Running || !v.StartedAt.Equal(t0.Add(80*time.Second)) {
		t.Errorf("next = %s from %v, want running from 80s", v.Status, v.StartedAt)
	}
}

// TestSlotsForceLeavesTheLine: a waiting job the control API forces to succeed is charged and
// leaves the line without taking a slot; the running job keeps its own.
func TestSlotsForceLeavesTheLine(t *testing.T) {
	w := newWorld(t, retention)
	for i := range 3 {
		w.create(limited(fmt.Sprint("j", i), "acct", 1, 0, time.Minute))
	}
	w.advance(0)
	if _, err := w.engine.Force("j1", jobs.Succeeded, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := w.line("j0", "j1", "j2"), "j0:running/0 j1:succeeded/0 j2:queued/1 "; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	if b := w.balance(account); b.Charged != credits || b.Held != 2*credits {
		t.Errorf("balance %+v, want the forced one charged and two held", b)
	}
}
