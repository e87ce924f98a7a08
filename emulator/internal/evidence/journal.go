// The journal records the API requests the emulator answered, so a client's test can assert
// what its code actually sent. It keeps the most recent entries within two bounds, a number of
// entries and a number of bytes, and caps what one entry can hold, so no client can make the
// journal grow past them however long its paths, headers or bodies are.

package evidence

import (
	"cmp"
	"context"
	"github.com/mediagen/mediagen-emulator/emulator/api"

	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Entry is one answered request. RequestBody and ResponseBody are kept as the caller gives
// them (secrets such as Authorization already redacted): a body that is valid JSON and fits
// MaxBody as that JSON, any other as a JSON string of its text, cut at MaxBody with Truncated
// at the end. Tenant is left for the reader to fill: a journal belongs to one tenant.
type Entry = api.JournalEntry

// Bounds on what one entry and the whole journal hold.
const (
	// MaxString is the most bytes one text field of an entry keeps.
	MaxString = 2 << 10
	// MaxBody is the most bytes one recorded body keeps.
	MaxBody = 16 << 10
	// Truncated ends every text cut to fit, so a reader sees that it was cut.
	Truncated = "…(truncated)"
	// DefaultMaxEntries and DefaultMaxBytes are the bounds New uses.
	DefaultMaxEntries = 10_000
	DefaultMaxBytes   = 16 << 20
	// MaxHeaders is the most request headers one entry keeps.
	MaxHeaders = 32
	// Redacted stands for the value of a header that carries a secret.
	Redacted = "[redacted]"
	// entryOverhead approximates what an entry costs beyond its text: the struct itself and the
	// strings' and slices' headers.
	entryOverhead = 256
	// headerOverhead approximates what a header costs in its map beyond its text.
	headerOverhead = 40
)

// secretHeaders are the request headers whose values the journal never keeps.
var secretHeaders = map[string]bool{"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "X-Emulator-Admin-Token": true}

// Headers returns request headers as an entry shows them: one value per name, several joined
// with ", ", each cut to MaxString, secrets replaced by Redacted, and at most MaxHeaders of them
// (the first by name when there are more). Names are kept as given: the server has already put
// them in canonical form.
func Headers(h map[string][]string) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, min(len(h), MaxHeaders))
	if len(h) <= MaxHeaders {
		for k, vs := range h {
			out[Cut(k, MaxString)] = headerValue(k, vs)
		}
		return out
	}
	for _, k := range slices.Sorted(maps.Keys(h))[:MaxHeaders] {
		out[Cut(k, MaxString)] = headerValue(k, h[k])
	}
	return out
}

func headerValue(name string, vs []string) string {
	switch {
	case secretHeaders[name]:
		return Redacted
	case len(vs) == 1:
		return Cut(vs[0], MaxString)
	}
	return Cut(strings.Join(vs, ", "), MaxString)
}

// headerSize is what request headers held as sent count against the byte bound.
func headerSize(h map[string][]string) int64 {
	n := 0
	for k, vs := range h {
		n += len(k) + headerOverhead
		for _, v := range vs {
			n += len(v) + 16
		}
	}
	return int64(n)
}

// Journal is a tenant's bounded log of what happened: answered /v1 requests (its entries) and,
// beside them in the same ring and under the same bounds, notes of downloads, balance changes
// and webhook attempts. Requests and webhook attempts share one numbering (seq), which findings
// cite. Each event carries the order in which it arrived, so the report reads the log in the
// order the client acted, not in the order the answers went out. It is safe for concurrent use.
type Journal struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	// ring holds n events, in the order recorded from head, wrapping around. A slot never
	// changes once recorded, so readers copy the pointers under the lock and read the slots
	// after, without copying entries.
	ring     []*slot
	head, n  int
	bytes    int64 // the sizes of the events held
	seq      uint64
	arrivals atomic.Uint64 // the last arrival number handed out
	dropped  time.Time     // when the newest event dropped to make room arrived
	onChange func()        // told after every Add and Clear, outside the lock
	full     func() bool

	droppedAttempts int64 // the webhook attempts dropped to make room
}

// Arrive hands out the next arrival number: the frame takes one as a request comes in, so the
// log knows which request came first whatever the order of the answers.
func (j *Journal) Arrive() uint64 { return j.arrivals.Add(1) }

// GiveWay sets what tells the journal that memory shared with others is used up (the memory
// budget): while it reports so, each new entry replaces at least as many bytes of the oldest,
// so the journal stops growing. Set it before the journal is shared.
func (j *Journal) GiveWay(full func() bool) { j.full = full }

// OnChange sets a function told after every change, so watchers (the dashboard's event stream)
// learn of new entries without polling. Set it before the journal is shared.
func (j *Journal) OnChange(f func()) { j.onChange = f }

func (j *Journal) changed() {
	if j.onChange != nil {
		j.onChange()
	}
}

// slot is an event as held: a request's entry with the request headers it was given as sent
// (put in their entry form only when read, so recording a request costs no copy of them), or a
// note.
type slot struct {
	Entry
	header map[string][]string
	note   *Note
	// arrival is when the event came in among the others; answered is the last arrival number
	// handed out when its answer was written, so a request numbered higher came after it.
	arrival, answered uint64
	bytes             int64 // what the slot counts against the byte bound, set once
	// real is when a request arrived and its answer was written, in real time (zero for an
	// entry restored from a snapshot): the report judges by it what a client could have seen.
	real RealTimes
}

// RealTimes are when a request arrived and when its answer was written, in real time whatever
// the tenant's clock does.
type RealTimes struct{ Arrived, Answered time.Time }

// when is the instant an event arrived, on the tenant's clock.
func (s *slot) when() time.Time {
	switch {
	case s.note != nil:
		return s.note.Time
	case !s.ReceivedAt.IsZero():
		return s.ReceivedAt
	}
	return s.Time
}

// NewBounded returns a journal keeping at most maxEntries entries whose sizes add up to at most
// maxBytes, dropping the oldest first. One entry always fits: it is capped at MaxString per text
// field and MaxBody per body.
func NewBounded(maxEntries int, maxBytes int64) *Journal {
	return &Journal{maxEntries: max(1, maxEntries), maxBytes: max(1, maxBytes)}
}

// Add records an entry that arrives now, cutting its long fields, and drops the oldest events
// until both bounds hold again.
func (j *Journal) Add(e Entry) { j.AddRequest(e, nil, j.Arrive()) }

// AddRequest records an entry with the request's headers as sent, which the journal keeps
// unchanged (nobody may change them afterwards) and shows as Headers makes them, and the
// arrival number the request took (Arrive).
func (j *Journal) AddRequest(e Entry, header map[string][]string, arrival uint64) {
	s := &slot{Entry: capped(e), header: header, arrival: arrival, answered: j.arrivals.Load()}
	s.real.Answered = time.Now()
	s.real.Arrived = e.Wall // its real arrival while the clock skips, else the answer less its time
	if s.real.Arrived.IsZero() {
		s.real.Arrived = s.real.Answered.Add(-time.Duration(e.DurationMS * float64(time.Millisecond)))
	}
	s.bytes = Size(s.Entry) + headerSize(header)
	j.put(s, true)
}

// AddNote records a download, a balance change or a webhook attempt beside the requests, with
// the arrival number its request took (0: one is taken now). A webhook attempt takes the next
// entry number, in its Webhook.Seq.
func (j *Journal) AddNote(n Note, arrival uint64) {
	if arrival == 0 {
		arrival = j.Arrive()
	}
	n.Job, n.File, n.Account = clip(n.Job), clip(n.File), clip(n.Account)
	if n.Webhook != nil {
		a := *n.Webhook // the journal's own, numbered below
		n.Webhook = &a
	}
	j.put(&slot{note: &n, arrival: arrival, answered: j.arrivals.Load(), bytes: noteBytes}, false)
}

// put adds an event, dropping the oldest until both bounds hold again; a request or a webhook
// attempt takes the next entry number.
func (j *Journal) put(s *slot, request bool) {
	giveWay := j.full != nil && j.full()
	defer j.changed()
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case request:
		j.seq++
		s.Seq = j.seq
	case s.note.Webhook != nil:
		j.seq++
		s.note.Webhook.Seq = j.seq
	}
	j.insert(s, giveWay)
}

// insert adds an event, dropping the oldest until both bounds hold again and, giving way, until
// at least its size is freed. The newest event stays even alone over maxBytes: it is already
// capped. Callers hold j.mu.
func (j *Journal) insert(s *slot, giveWay bool) {
	var freed int64
	for j.n > 0 && (j.n >= j.maxEntries || j.bytes+s.bytes > j.maxBytes || (giveWay && freed < s.bytes)) {
		freed += j.dropOldest()
	}
	if j.n == len(j.ring) {
		j.grow()
	}
	j.ring[(j.head+j.n)%len(j.ring)] = s
	j.n++
	j.bytes += s.bytes
}

// grow makes room for more entries, up to maxEntries: the ring doubles, so a quiet journal
// stays small and a busy one stops copying once it is full.
func (j *Journal) grow() {
	ring := make([]*slot, min(max(16, 2*len(j.ring)), j.maxEntries))
	for i := range j.n {
		ring[i] = j.ring[(j.head+i)%len(j.ring)]
	}
	j.ring, j.head = ring, 0
}

// dropOldest forgets the oldest entry and returns its size. Callers hold j.mu and know there
// is one.
func (j *Journal) dropOldest() int64 {
	if t := j.ring[j.head].when(); t.After(j.dropped) {
		j.dropped = t
	}
	if n := j.ring[j.head].note; n != nil && n.Webhook != nil {
		j.droppedAttempts++
	}
	size := j.ring[j.head].bytes
	j.bytes -= size
	j.ring[j.head] = nil
	j.head = (j.head + 1) % len(j.ring)
	j.n--
	return size
}

// at returns the i-th entry held, oldest first. Callers hold j.mu.
func (j *Journal) at(i int) *slot { return j.ring[(j.head+i)%len(j.ring)] }

// slots returns the slots held, in the order recorded: the requests only, or every event.
func (j *Journal) slots(requests bool) []*slot {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]*slot, 0, j.n)
	for i := range j.n {
		if s := j.at(i); !requests || s.note == nil {
			out = append(out, s)
		}
	}
	return out
}

// Size is what an entry counts against the journal's byte bound.
func Size(e Entry) int64 {
	n := entryOverhead + len(e.Method) + len(e.Path) + len(e.Query) + len(e.Code) + len(e.Account) +
		len(e.Model) + len(e.JobID) + len(e.RequestID) + len(e.IdempotencyKey) + len(e.Fault) +
		len(e.QuoteID) + len(e.JobStatus) + len(e.InputDigest) + len(e.FaultKind) + len(e.Conn) +
		len(e.RequestBody) + len(e.ResponseBody)
	for k, v := range e.RequestHeaders {
		n += len(k) + len(v) + headerOverhead
	}
	return int64(n)
}

// capped returns the entry with every text field cut to MaxString and every body to at most
// MaxBody+1 bytes as sent. A body that fits is kept as it came, without a copy (the caller hands
// over bytes nobody changes); of a longer one only those first bytes are copied, so the journal
// does not hold the rest. Bodies are put in their journal form (see Body) only when read:
// recording a request then costs no JSON work on the request's path.
//
// Every text field is copied, all of them into one allocation: a field handed in may be part of
// a longer string (net/http's method, path and query are pieces of the whole request line), and
// keeping the piece would keep the whole line, which the byte bound does not count.
func capped(e Entry) Entry {
	fields := [...]*string{&e.Method, &e.Path, &e.Query, &e.Code, &e.Account, &e.Model, &e.JobID, &e.RequestID, &e.IdempotencyKey, &e.Fault,
		&e.QuoteID, &e.JobStatus, &e.InputDigest, &e.FaultKind, &e.Conn}
	n := 0
	for _, s := range fields {
		*s = Cut(*s, MaxString)
		n += len(*s)
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range fields {
		b.WriteString(*s)
	}
	all := b.String()
	for _, s := range fields {
		*s, all = all[:len(*s)], all[len(*s):]
	}
	e.RequestBody, e.ResponseBody = cappedBody(e.RequestBody), cappedBody(e.ResponseBody)
	return e
}

func cappedBody(b json.RawMessage) json.RawMessage {
	if len(b) > MaxBody+1 {
		return bytes.Clone(b[:MaxBody+1])
	}
	if cap(b) > len(b)+len(b)/8+64 {
		// A read buffer grown by doubling: keeping the body would keep the room after it too.
		return bytes.Clone(b)
	}
	return b[:len(b):len(b)]
}

// Cut returns s when it fits in limit bytes, or else its longest prefix that leaves room for
// Truncated, followed by Truncated.
func Cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return cutTo(s, limit)
}

// cutTo keeps at most limit bytes of s, Truncated included, cutting at a rune boundary.
func cutTo(s string, limit int) string {
	keep := min(len(s), max(0, limit-len(Truncated)))
	for keep > 0 && keep < len(s) && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return strings.ToValidUTF8(s[:keep], "") + Truncated
}

// Body returns how a recorded body is kept: nil when empty, the compact JSON when it is valid
// JSON of at most MaxBody bytes, or else a JSON string of its text cut to fit MaxBody.
func Body(b []byte) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if len(b) <= MaxBody && json.Valid(b) {
		var out bytes.Buffer
		if json.Compact(&out, b) == nil {
			return out.Bytes()
		}
	}
	text := strings.ToValidUTF8(string(b[:min(len(b), MaxBody)]), "\uFFFD")
	cut := len(b) > MaxBody
	limit := MaxBody
	// Quoting can grow the text (a control byte becomes \u00XX): cut more until it fits. Each
	// round takes away at least the overflow, so the loop ends.
	for {
		t := text
		if cut || len(t) > limit {
			t = cutTo(text, limit)
		}
		quoted, _ := json.Marshal(t)
		if len(quoted) <= MaxBody {
			return quoted
		}
		cut = true
		limit -= len(quoted) - MaxBody
	}
}

// List returns the entries a pattern matches (nil: every entry), oldest first: the window
// [offset, offset+limit) in their listed form, and the number of all matches. It stops early,
// with ctx's error, once ctx is done.
func (j *Journal) List(ctx context.Context, p *Pattern, offset, limit int) ([]Entry, int, error) {
	var out []Entry
	total := 0
	for i, s := range j.slots(true) {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		if p != nil && !p.Matches(&s.Entry, s.header) {
			continue
		}
		if total >= offset && len(out) < limit {
			out = append(out, s.listed())
		}
		total++
	}
	return out, total, nil
}

// listed is the entry of a request's slot as the journal's listing shows it.
func (s *slot) listed() Entry {
	e := s.Entry
	e.RequestBody, e.ResponseBody = Body(e.RequestBody), Body(e.ResponseBody)
	if s.header != nil {
		e.RequestHeaders = Headers(s.header)
	}
	return e
}

// Event is one event of the log: a request (its entry, bodies as recorded rather than in their
// journal form, shared with the journal: do not change them) or a note.
type Event struct {
	Request *Entry
	Note    *Note
	// Arrival orders the events as they came in; Answered is the last arrival number handed out
	// when the event's answer was written: a request numbered higher came after that answer.
	Arrival, Answered uint64
	// Real is when a request arrived and its answer was written in real time, nil when not
	// known (an entry restored from a snapshot); shared with the journal like Request.
	Real *RealTimes
	// header is a request's headers as sent, for the expected patterns that match on them.
	header map[string][]string
}

// Log returns every event held in the order they arrived, and the time up to which some may be
// missing (zero when none was ever dropped).
func (j *Journal) Log() ([]Event, time.Time) {
	j.mu.Lock()
	out := make([]Event, j.n)
	for i := range j.n {
		s := j.at(i)
		out[i] = Event{Note: s.note, Arrival: s.arrival, Answered: s.answered}
		if s.note == nil {
			out[i].Request = &s.Entry // never changed once recorded: shared, not copied
			out[i].header = s.header
			if !s.real.Answered.IsZero() {
				out[i].Real = &s.real
			}
		}
	}
	dropped := j.dropped
	j.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Event) int { return cmp.Compare(a.Arrival, b.Arrival) })
	return out, dropped
}

// Bytes reports the size of the entries held, as counted against the byte bound.
func (j *Journal) Bytes() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.bytes
}

// Clear forgets every request; the notes (downloads, balance changes, webhook attempts) stay for
// the report.
func (j *Journal) Clear() {
	defer j.changed()
	j.mu.Lock()
	defer j.mu.Unlock()
	var keep []*slot
	for i := range j.n {
		if s := j.at(i); s.note != nil {
			keep = append(keep, s)
		}
	}
	j.ring, j.head, j.n, j.bytes = keep, 0, len(keep), int64(len(keep))*noteBytes
}

// Export lists the entries held, oldest first, and the last number given.
func (j *Journal) Export() api.SnapshotJournal {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := api.SnapshotJournal{Seq: j.seq, Entries: make([]Entry, 0, j.n)}
	for i := range j.n {
		s := j.at(i)
		if s.note != nil {
			continue
		}
		out.Entries = append(out.Entries, s.listed())
	}
	return out
}

// Restore replaces the log with a snapshot's: its entries, when it has them, and its notes,
// interleaved by time (at one instant, a request before a note), keeping the entries' numbers.
// The log's bounds apply, so the oldest may go. Each problem of a note is reported with a JSON
// Pointer relative to the notes, and that note is left out.
func (j *Journal) Restore(journal *api.SnapshotJournal, notes api.SnapshotNotes, report func(ptr, msg string)) {
	var events []*slot
	var seq uint64
	if journal != nil {
		seq = journal.Seq
		for _, e := range journal.Entries {
			// Imported headers are kept in their listed form, in the entry itself.
			e = capped(e)
			events = append(events, &slot{Entry: e, bytes: Size(e)})
		}
	}
	ns, dropped := importNotes(notes, j.maxEntries, report)
	for i := range ns {
		events = append(events, &slot{note: &ns[i], bytes: noteBytes})
	}
	slices.SortStableFunc(events, func(a, b *slot) int { return a.when().Compare(b.when()) })
	j.mu.Lock()
	j.ring, j.head, j.n, j.bytes, j.dropped, j.droppedAttempts = nil, 0, 0, 0, dropped, 0
	j.arrivals.Store(0)
	for _, s := range events {
		if s.note != nil && s.note.Webhook != nil {
			seq = max(seq, s.note.Webhook.Seq) // a snapshot without its journal still numbers on
		}
		s.arrival = j.arrivals.Add(1)
		s.answered = s.arrival
		j.insert(s, false)
	}
	j.seq = seq
	j.mu.Unlock()
	j.changed()
}

// WebhookAttempts lists the webhook attempts held, oldest first, and how many the journal's
// bounds let go.
func (j *Journal) WebhookAttempts() ([]api.WebhookAttempt, int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := []api.WebhookAttempt{}
	for i := range j.n {
		if n := j.at(i).note; n != nil && n.Webhook != nil {
			out = append(out, *n.Webhook)
		}
	}
	return out, j.droppedAttempts
}

// ExportNotes lists the notes held, oldest first, for a snapshot.
func (j *Journal) ExportNotes() api.SnapshotNotes {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := api.SnapshotNotes{Entries: []api.SnapshotNote{}}
	if !j.dropped.IsZero() {
		out.Dropped = stamp(j.dropped)
	}
	for i := range j.n {
		if n := j.at(i).note; n != nil {
			out.Entries = append(out.Entries, n.export())
		}
	}
	return out
}
