package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/due"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// Sign is the Standard Webhooks signature of a delivery: "v1," and the base64 of the
// HMAC-SHA256, keyed with the secret's bytes, of "id.timestamp.body".
func Sign(s Secret, id string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, timestamp, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Attempt is one POST for a Sender to make.
type Attempt struct {
	URL       string
	ID        string // webhook-id
	Timestamp int64  // webhook-timestamp, seconds since 1970 on the tenant's clock
	Signature string // webhook-signature
	Body      []byte
}

// Result is how an attempt went: the receiver's status, or why none came.
type Result struct {
	Status  int
	Latency time.Duration
	// Err is empty when a status came, else one of the Err* classes.
	Err string
}

// The reasons an attempt got no status.
const (
	ErrTimeout    = "timeout"     // no answer within AttemptTimeout
	ErrRefused    = "refused"     // nothing listens there
	ErrNotAllowed = "not_allowed" // the address is neither loopback nor allowed (--webhook-allow)
	ErrNetwork    = "network"     // any other failure to connect, send or read
	ErrCanceled   = "canceled"    // the emulator shut down or the tenant went away
)

// OK reports whether the receiver accepted the delivery.
func (r Result) OK() bool { return r.Err == "" && r.Status >= 200 && r.Status < 300 }

// Sender makes attempts; it is safe for concurrent use.
type Sender interface {
	Send(ctx context.Context, a Attempt) Result
}

// Kinds of delivery.
const (
	KindDelivery  = "delivery"
	KindDuplicate = "duplicate"       // the chaos knob's second send of a delivered delivery
	KindSignature = "audit_signature" // the audit's delivery with a wrong signature
	KindTimestamp = "audit_timestamp" // the audit's delivery signed StaleAge ago
)

// Outcomes of an attempt, as the log and coverage name them.
const (
	OutcomeDelivered = "delivered"
	OutcomeRetrying  = "retrying"
	OutcomeGaveUp    = "gave_up"
	OutcomeAccepted  = "accepted" // a duplicate or an audit delivery answered 2xx
	OutcomeRefused   = "refused"  // one answered otherwise
)

// Options are what a Hub is built from.
type Options struct {
	Clock  *clock.Clock
	Sender Sender
	IDs    *ids.Generator
	// Render is the job as GET /v1/jobs/{id} shows it, the data of a delivery.
	Render func(jobs.View) ([]byte, error)
	// OnAttempt, when set, hears of every attempt as it is settled: what happened, to log (the
	// tenant's journal) and count (coverage), and whether the receiver audit was on, so the
	// report judges the receiver by it. An attempt canceled by Close is not told: its tenant is
	// gone. It runs under the hub's lock, so attempts are told in the order they settle, and it
	// must be quick.
	OnAttempt func(at time.Time, a api.WebhookAttempt, audited bool)
}

// Hub is one tenant's webhook: its configuration and the deliveries due and under way; what
// became of each attempt is told to Options.OnAttempt, not kept. It observes the tenant's jobs
// (jobs.Observer) and is safe for concurrent use.
type Hub struct {
	o      Options
	wanted atomic.Uint32 // a bit per job status sent; zero while nothing is sent

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // attempts under way

	mu      sync.Mutex
	cfg     *Config
	queue   due.Queue[*delivery]
	seq     uint64
	pending int   // deliveries queued or under way
	bytes   int64 // their bodies
	flying  map[*delivery]time.Time
	held    []*delivery            // held back by the reorder knob
	polls   map[string][]*delivery // held back by the after_poll knob, by job
	audited bool                   // the audit's deliveries went out for this configuration
	sum     api.WebhookSummary
	closed  bool

	// timer is the one clock callback the hub has scheduled, at timerAt, for its earliest
	// delivery due; gen tells a stale callback from the current one.
	timer   *clock.Timer
	timerAt int64
	gen     uint64

	// On a still clock one sender makes the attempts (sending), closing idle once none is due;
	// floor is the clock's instant when the last move that waited for it started it.
	sending bool
	idle    chan struct{}
	floor   time.Time
}

// delivery is one event on its way to the receiver; every field is guarded by Hub.mu.
type delivery struct {
	id       string
	event    Event
	job      string
	kind     string
	body     []byte
	attempts int
	entry    due.Entry[*delivery]
	held     bool // by the reorder knob, until its attempt starts
}

// New returns a hub with no configuration.
func New(o Options) *Hub {
	h := &Hub{o: o, flying: map[*delivery]time.Time{}, polls: map[string][]*delivery{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h
}

// Configure puts a configuration in force, or none. The deliveries due stay and go to the
// new URL; with none they are dropped.
func (h *Hub) Configure(c *Config) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cfg = c
	h.audited = false
	if c == nil {
		for e := h.queue.Pop(); e != nil; e = h.queue.Pop() {
			h.forget(e.Value)
		}
		h.held, h.polls = nil, map[string][]*delivery{}
	}
	var mask uint32
	if h.active() {
		for i, s := range statuses {
			if c.Wants(EventOf(s)) {
				mask |= 1 << i
			}
		}
	}
	h.wanted.Store(mask)
	h.arm()
}

// statuses are the job statuses, by bit of Hub.wanted.
var statuses = []jobs.Status{jobs.Queued, jobs.Running, jobs.Succeeded, jobs.Failed, jobs.Canceled, jobs.Expired}

// Config is the configuration in force, or nil.
func (h *Hub) Config() *Config {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg
}

// active reports whether deliveries go out: a configuration with a secret. Callers hold h.mu.
func (h *Hub) active() bool { return !h.closed && h.cfg != nil && h.cfg.Secret.Set() }

// Sending reports whether some job status makes a delivery: one atomic load, for callers on a
// hot path that prepare for deliveries only when there will be some.
func (h *Hub) Sending() bool { return h.wanted.Load() != 0 }

// Wants reports whether a job reaching status s makes a delivery.
func (h *Hub) Wants(s jobs.Status) bool {
	i := slices.Index(statuses, s)
	return i >= 0 && h.wanted.Load()&(1<<i) != 0
}

// Reached queues the delivery of a job's new status. The jobs engine calls it under its lock.
func (h *Hub) Reached(v jobs.View) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.active() {
		return
	}
	ev := EventOf(v.Status)
	at := happened(v, ev)
	body, err := h.body(v, ev, at)
	if err != nil {
		h.sum.Dropped++
		return
	}
	d := &delivery{id: "msg_" + strings.ReplaceAll(h.o.IDs.UUID("webhook", v.ID, string(ev)), "-", ""), event: ev, job: v.ID, kind: KindDelivery, body: body}
	when := at.Add(h.cfg.Chaos.Delay)
	ch := h.cfg.Chaos
	switch {
	case ch.AfterPoll && v.Status.Terminal():
		if h.add(d, when.Add(PollHold)) {
			h.polls[v.ID] = append(h.polls[v.ID], d)
		}
	case ch.Reorder > 0 && h.o.IDs.Float64("webhook-reorder", d.id) < ch.Reorder:
		d.held = true
		if h.add(d, when.Add(ReorderHold)) {
			h.held = append(h.held, d)
		}
	default:
		h.add(d, when)
	}
}

// happened is when job v's event ev happened: when it was created, started or ended; zero
// when the job has not reached it (a job reaches one ending only).
func happened(v jobs.View, ev Event) time.Time {
	switch ev {
	case EventOf(jobs.Queued):
		return v.CreatedAt
	case EventOf(jobs.Running):
		return v.StartedAt
	case EventOf(v.Status):
		return v.FinishedAt
	}
	return time.Time{}
}

// body is the delivery of job v's event ev, which happened at at: its data is the job as
// Options.Render shows it.
func (h *Hub) body(v jobs.View, ev Event, at time.Time) ([]byte, error) {
	data, err := h.o.Render(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Type      Event           `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{ev, at.UTC().Format(time.RFC3339Nano), data})
}

// add queues a new delivery due at when, unless the pending bounds are reached; it reports
// whether it did. Callers hold h.mu.
func (h *Hub) add(d *delivery, when time.Time) bool {
	if h.pending >= MaxPending || h.bytes+int64(len(d.body)) > MaxPendingBytes {
		h.sum.Dropped++
		return false
	}
	h.pending++
	h.bytes += int64(len(d.body))
	h.push(d, when)
	h.arm()
	return true
}

// push queues a delivery at when. Callers hold h.mu.
func (h *Hub) push(d *delivery, when time.Time) {
	h.seq++
	d.entry.At, d.entry.Seq, d.entry.Value = clock.Nanos(when), h.seq, d
	h.queue.Push(&d.entry)
}

// forget lets go of a delivery that is done. Callers hold h.mu.
func (h *Hub) forget(d *delivery) {
	h.pending--
	h.bytes -= int64(len(d.body))
}

// Polled tells the hub that a client saw a job ended, so the after_poll knob lets its
// deliveries go.
func (h *Hub) Polled(jobID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ds, ok := h.polls[jobID]
	if !ok {
		return
	}
	delete(h.polls, jobID)
	h.release(ds)
}

// release makes held deliveries due now. Callers hold h.mu.
func (h *Hub) release(ds []*delivery) {
	now := clock.Nanos(h.o.Clock.Now())
	for _, d := range ds {
		d.held = false
		if d.entry.Queued() && d.entry.At > now {
			h.seq++
			d.entry.At, d.entry.Seq = now, h.seq
			h.queue.Fix(&d.entry)
		}
	}
	h.arm()
}

// arm keeps the hub's one clock callback at its earliest delivery due, and none when nothing
// is due or every slot is busy with something already due (an attempt that ends arms it
// again). Callers hold h.mu.
func (h *Hub) arm() {
	top := h.queue.Peek()
	full := h.inFlight() >= MaxInFlight && top != nil && top.At <= clock.Nanos(h.o.Clock.Now())
	if !h.active() || top == nil || full {
		if h.timer != nil {
			h.timer.Stop()
			h.timer = nil
		}
		return
	}
	if h.timer != nil {
		if h.timerAt == top.At {
			return
		}
		h.timer.Stop()
	}
	h.gen++
	gen := h.gen
	h.timerAt = top.At
	h.timer = h.o.Clock.AfterFunc(time.Unix(0, top.At), func() { h.fire(gen) })
}

func (h *Hub) inFlight() int { return len(h.flying) }

// fire starts every attempt due. On a real clock it starts as many as the slots allow and
// leaves them running. On a clock that moves only when told to (manual, skip) one sender makes
// them one at a time, in the order they fell due, each at its own instant, and fire waits for
// it while the clock's move lets it wait (Clock.Waits: its budget, its caller): a move sends
// what fell due within it and returns once that is answered, or once its budget is spent, and
// the sender goes on after it in the same order, so a receiver that never answers cannot hold
// the clock.
func (h *Hub) fire(gen uint64) {
	h.mu.Lock()
	if gen == h.gen {
		h.timer = nil
	}
	if !h.o.Clock.Manual() {
		var batch sync.WaitGroup
		h.startDue(&batch, MaxInFlight, time.Time{})
		h.arm()
		h.mu.Unlock()
		return
	}
	if !h.sending {
		// The instant the clock stands at: attempts due by it are made at it, as if the move
		// had waited for each, even when the sender makes them after the move returned.
		h.floor = h.o.Clock.Now()
	}
	idle := h.send()
	h.mu.Unlock()
	select {
	case <-idle:
	case <-h.o.Clock.Waits():
	}
}

// send starts the sender of a still clock unless it runs, and returns what is closed once it
// has nothing due left. Callers hold h.mu.
func (h *Hub) send() <-chan struct{} {
	if !h.sending {
		if !h.active() {
			h.arm()
			return closed
		}
		h.sending = true
		h.idle = make(chan struct{})
		h.wg.Add(1)
		go h.sender()
	}
	return h.idle
}

// closed is a channel that is closed: nothing to wait for.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// sender makes the attempts due on a still clock one at a time, each waited for, until none is
// due by the clock's time.
func (h *Hub) sender() {
	defer h.wg.Done()
	for {
		h.mu.Lock()
		var one sync.WaitGroup
		if !h.startDue(&one, 1, h.floor) {
			h.sending = false
			close(h.idle)
			h.arm()
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		one.Wait()
	}
}

// startDue starts an attempt of every delivery due, as far as the slots allow and at most
// most; batch counts them. On a still clock floor is the instant the move stood at when it
// started them, and each attempt is made at its due time or floor, whichever is later; on a
// real clock (floor zero) at now. Callers hold h.mu.
func (h *Hub) startDue(batch *sync.WaitGroup, most int, floor time.Time) bool {
	if !h.active() {
		return false
	}
	now := h.o.Clock.Now()
	started := false
	for top := h.queue.Peek(); top != nil && top.At <= clock.Nanos(now) && h.inFlight() < MaxInFlight && most > 0; top = h.queue.Peek() {
		most--
		d := h.queue.Pop().Value
		dueAt := time.Unix(0, d.entry.At).UTC()
		at := now
		if !floor.IsZero() {
			at = floor
			if dueAt.After(at) {
				at = dueAt
			}
		}
		d.held = false
		if _, ok := h.polls[d.job]; ok && d.kind == KindDelivery && d.event != Queued && d.event != Running {
			delete(h.polls, d.job)
		}
		if d.kind == KindDelivery && h.cfg.Audit && !h.audited {
			h.audited = true
			h.probe(d, KindSignature, at)
			h.probe(d, KindTimestamp, at)
		}
		h.flying[d] = dueAt
		batch.Add(1)
		h.wg.Add(1)
		go h.attempt(d, dueAt, at, h.cfg.URL, h.cfg.Secret, batch)
		started = true
	}
	return started
}

// probe queues one of the audit's deliveries beside d: its body, another id. Callers hold
// h.mu.
func (h *Hub) probe(d *delivery, kind string, now time.Time) {
	p := &delivery{id: "msg_" + strings.ReplaceAll(h.o.IDs.UUID("webhook-audit", kind, d.id), "-", ""), event: d.event, job: d.job, kind: kind, body: d.body}
	h.add(p, now)
}

// attempt sends one attempt of d, due at dueAt and made at at, and settles it.
func (h *Hub) attempt(d *delivery, dueAt, at time.Time, url string, secret Secret, batch *sync.WaitGroup) {
	defer h.wg.Done()
	defer batch.Done()
	ts := at.Unix()
	switch d.kind {
	case KindSignature:
		secret = Secret{key: wrongKey(secret.key)}
	case KindTimestamp:
		ts -= int64(StaleAge / time.Second)
	}
	ctx, cancel := context.WithTimeout(h.ctx, AttemptTimeout)
	res := h.o.Sender.Send(ctx, Attempt{URL: url, ID: d.id, Timestamp: ts, Signature: Sign(secret, d.id, ts, d.body), Body: d.body})
	cancel()
	if h.ctx.Err() != nil && !res.OK() {
		res = Result{Err: ErrCanceled, Latency: res.Latency}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.settle(d, dueAt, at, res)
	h.arm()
}

// wrongKey is a key that is not the secret: every byte flipped.
func wrongKey(key []byte) []byte {
	out := make([]byte, len(key))
	for i, b := range key {
		out[i] = ^b
	}
	return out
}

// settle counts an attempt of d made at at, tells it, and decides what follows: done, another
// attempt on the schedule, or given up. Callers hold h.mu.
func (h *Hub) settle(d *delivery, dueAt, at time.Time, res Result) {
	delete(h.flying, d)
	d.attempts++
	h.sum.Attempts++
	if !res.OK() {
		h.sum.Failures++
	}
	entry := api.WebhookAttempt{ID: d.id, Event: string(d.event), Job: d.job, Attempt: d.attempts, Kind: d.kind,
		At: at.UTC().Format(time.RFC3339Nano), Status: res.Status, LatencyMS: math.Round(float64(res.Latency)/1e4) / 100, Error: res.Err}
	if res.Err == ErrCanceled || h.closed {
		h.forget(d)
		return
	}
	switch {
	case d.kind != KindDelivery:
		entry.Outcome = OutcomeRefused
		if res.OK() {
			entry.Outcome = OutcomeAccepted
		}
		h.forget(d)
	case res.OK():
		entry.Outcome = OutcomeDelivered
		h.sum.Delivered++
		h.forget(d)
		if p := h.cfgChaos().Duplicate; p > 0 && h.o.IDs.Float64("webhook-duplicate", d.id) < p {
			h.add(&delivery{id: d.id, event: d.event, job: d.job, kind: KindDuplicate, body: d.body}, at)
		}
	default:
		if d.attempts < len(Schedule) && h.cfg != nil { // none: the webhook was deleted meanwhile
			next := dueAt.Add(Schedule[d.attempts])
			entry.Outcome, entry.Next = OutcomeRetrying, next.UTC().Format(time.RFC3339Nano)
			h.push(d, next)
		} else {
			entry.Outcome = OutcomeGaveUp
			h.sum.GaveUp++
			h.forget(d)
		}
	}
	if d.kind == KindDelivery && len(h.held) > 0 {
		held := h.held
		h.held = nil
		h.release(held)
	}
	if h.o.OnAttempt != nil {
		h.o.OnAttempt(at, entry, h.cfg != nil && h.cfg.Audit)
	}
}

func (h *Hub) cfgChaos() Chaos {
	if h.cfg == nil {
		return Chaos{}
	}
	return h.cfg.Chaos
}

// Summary counts the deliveries and attempts.
func (h *Hub) Summary() api.WebhookSummary {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sum
	s.InFlight = h.inFlight()
	s.Pending = h.pending - s.InFlight
	return s
}

// Close stops the hub: no attempt starts again, and those under way are canceled and waited
// for.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	h.wanted.Store(0)
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}

// Export is the hub for a snapshot, or nil when it has neither a configuration nor deliveries
// due: the configuration without its secret, and every delivery due, one under way included
// (due again at its attempt's time, so a restored hub makes that attempt again).
func (h *Hub) Export() *api.SnapshotWebhooks {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cfg == nil && h.pending == 0 {
		return nil
	}
	out := &api.SnapshotWebhooks{Pending: []api.SnapshotDelivery{}}
	if h.cfg != nil {
		wire := h.cfg.Wire()
		out.Config = &wire
	}
	type due struct {
		d  *delivery
		at time.Time
	}
	var all []due
	for d, at := range h.flying {
		all = append(all, due{d, at})
	}
	for e := range h.queue.All() {
		all = append(all, due{e.Value, time.Unix(0, e.At)})
	}
	slices.SortFunc(all, func(a, b due) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.d.id+a.d.kind, b.d.id+b.d.kind)
	})
	for _, x := range all {
		d := x.d
		out.Pending = append(out.Pending, api.SnapshotDelivery{ID: d.id, Event: string(d.event), Job: d.job, Kind: d.kind,
			Attempts: d.attempts, Due: x.at.UTC().Format(time.RFC3339Nano), Body: d.body})
	}
	return out
}

// Import restores a snapshot's webhook into a new hub: the configuration, which holds no
// secret and so sends nothing until one is PUT, and the deliveries due, which go out once it
// does. A delivery's body is rendered again from its job as job finds it (the restored jobs),
// never taken from the document: whoever may restore a snapshot must not get the run's secret
// to sign a body of their choosing. Each problem is reported with a JSON Pointer relative to
// the document's webhooks.
func (h *Hub) Import(in *api.SnapshotWebhooks, job func(id string) (jobs.View, bool), report func(ptr, msg string)) {
	if in == nil {
		return
	}
	var cfg *Config
	if in.Config != nil {
		if in.Config.Secret != "" {
			report("/config/secret", "a snapshot carries no secret; PUT /_emulator/webhooks sets one after the restore")
		}
		c, err := Parse(api.WebhookConfig{URL: in.Config.URL, Events: in.Config.Events, Audit: in.Config.Audit, Chaos: in.Config.Chaos}, false)
		if p := problem.As(err); p != nil {
			for _, fe := range p.Errors {
				report("/config"+fe.Pointer, fe.Message)
			}
		} else {
			c.Source = "snapshot"
			cfg = c
		}
	}
	h.Configure(cfg)
	if len(in.Pending) > MaxPending {
		report("/pending", "holds "+strconv.Itoa(len(in.Pending))+" deliveries; at most "+strconv.Itoa(MaxPending))
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, sd := range in.Pending {
		at := "/pending/" + strconv.Itoa(i)
		due, err := time.Parse(time.RFC3339Nano, sd.Due)
		v, found := job(sd.Job)
		var body []byte
		var happenedAt time.Time
		var renderErr error
		if found {
			if happenedAt = happened(v, Event(sd.Event)); !happenedAt.IsZero() {
				body, renderErr = h.body(v, Event(sd.Event), happenedAt)
			}
		}
		switch {
		case sd.ID == "" || len(sd.ID) > 100:
			report(at+"/id", "1 to 100 characters")
		case !slices.Contains(Events, Event(sd.Event)):
			report(at+"/event", "not an event")
		case sd.Kind != KindDelivery && sd.Kind != KindDuplicate && sd.Kind != KindSignature && sd.Kind != KindTimestamp:
			report(at+"/kind", "delivery, duplicate, audit_signature or audit_timestamp")
		case sd.Attempts < 0 || sd.Attempts >= len(Schedule):
			report(at+"/attempts", "0 to "+strconv.Itoa(len(Schedule)-1))
		case err != nil || due.After(clock.Latest):
			report(at+"/due", "an RFC 3339 time")
		case !found:
			report(at+"/job", "names job "+strconv.Quote(sd.Job)+", which the document does not hold")
		case happenedAt.IsZero():
			report(at+"/event", "job "+sd.Job+" is "+string(v.Status)+"; it has not reached "+sd.Event)
		case renderErr != nil:
			report(at+"/job", "job "+sd.Job+" cannot be rendered: "+renderErr.Error())
		case h.bytes+int64(len(body)) > MaxPendingBytes:
			report(at+"/body", "past the "+strconv.Itoa(MaxPendingBytes)+" bytes deliveries due may hold")
		default:
			d := &delivery{id: sd.ID, event: Event(sd.Event), job: sd.Job, kind: sd.Kind, attempts: sd.Attempts, body: body}
			h.pending++
			h.bytes += int64(len(d.body))
			h.push(d, due)
		}
	}
	h.arm()
}

// Bytes is what the hub holds, as counted against the memory budget: the bodies of the
// deliveries due.
func (h *Hub) Bytes() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bytes
}
