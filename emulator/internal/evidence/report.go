// The report judges how a client behaves from what the emulator saw of it: a tenant's log of
// /v1 requests, downloads, balance changes and webhook attempts, read in the order they arrived, the facts the
// emulator recorded as it answered (account, model, input digest, quote, job status, key,
// fault, download range), and the tenant's clock. It never reads the emulator's own answers
// back. Each finding names a rule, says in one line what happened, and lists the journal
// entries that show it. The rules catch what works against an emulator and costs money, time
// or data against the real service: a retry that would charge twice, a client that ignores
// Retry-After, polls that hammer, quotes used wrongly, outputs lost.
//
// The report knows no HTTP: Judge takes a log and returns findings, so it is tested on logs
// written by hand.

package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
)

// The rule ids, as findings and the README name them.
const (
	NewKeyOnRetry          = "new-key-on-retry"
	RetryAfterIgnored      = "retry-after-ignored"
	PollTooFast            = "poll-too-fast"
	PollAfterTerminal      = "poll-after-terminal"
	RetryUnchanged         = "retry-unchanged"
	ExpiredQuote           = "expired-quote"
	QuoteReused            = "quote-reused"
	QuoteMismatch          = "quote-mismatch"
	DownloadAfterExpiry    = "download-after-expiry"
	OutputsNeverDownloaded = "outputs-never-downloaded"
	DeprecatedModelUsed    = "deprecated-model-used"
	DownloadWithAPIKey     = "download-with-api-key"
	StaleLinkRefetched     = "stale-link-refetched"
)

// Polling: a job polled again sooner than PollFloor after its last poll, on the tenant's clock
// (in real time while it skips), is a fast poll; FastPolls of them for one job make a finding.
// One quick look (right after a generation, say) is not a habit; three are. Arrival stamps
// jitter by a few milliseconds (the client's timer, the scheduler, the connection), so a gap
// within PollTolerance of the floor counts as the floor: a client that polls every second
// exactly is seen 991–998 ms apart.
const (
	PollFloor     = time.Second
	PollTolerance = 50 * time.Millisecond
	FastPolls     = 3
)

// maxSeqs bounds the journal seqs one finding lists; its reason counts them all.
const maxSeqs = 20

// Rules are every rule the report judges by, in the order the README lists them.
var Rules = []api.Rule{
	{ID: NewKeyOnRetry, Severity: api.SeverityError, Title: "A generation retried after an ambiguous failure with a different Idempotency-Key"},
	{ID: RetryAfterIgnored, Severity: api.SeverityWarning, Title: "A request sent again before the Retry-After of a 429 or 503 had passed"},
	{ID: PollTooFast, Severity: api.SeverityWarning, Title: "A job polled more often than once a second"},
	{ID: PollAfterTerminal, Severity: api.SeverityWarning, Title: "A job polled again after it was seen finished"},
	{ID: RetryUnchanged, Severity: api.SeverityWarning, Title: "A request that cannot succeed sent again unchanged"},
	{ID: ExpiredQuote, Severity: api.SeverityError, Title: "A generation with a quote past its expires_at"},
	{ID: QuoteReused, Severity: api.SeverityError, Title: "A generation with a quote an earlier job already used"},
	{ID: QuoteMismatch, Severity: api.SeverityError, Title: "A generation with a quote made for another model or input"},
	{ID: DownloadAfterExpiry, Severity: api.SeverityWarning, Title: "An output downloaded after it expired"},
	{ID: OutputsNeverDownloaded, Severity: api.SeverityInfo, Title: "A succeeded job whose outputs expired without being downloaded"},
	{ID: DeprecatedModelUsed, Severity: api.SeverityWarning, Title: "A deprecated model used again after an answer announced its deprecation"},
	{ID: DownloadWithAPIKey, Severity: api.SeverityWarning, Title: "A signed output link fetched with the API key in an Authorization header"},
	{ID: StaleLinkRefetched, Severity: api.SeverityWarning, Title: "An output link answered 403 expired fetched again instead of reading the job for a fresh one"},
	{ID: WebhookSignatureUnchecked, Severity: api.SeverityError, Title: "A webhook receiver accepted a delivery with a wrong signature"},
	{ID: WebhookTimestampUnchecked, Severity: api.SeverityError, Title: "A webhook receiver accepted a delivery whose timestamp is older than 5 minutes"},
	{ID: WebhookSlowAck, Severity: api.SeverityWarning, Title: "A webhook receiver took longer than 2 s to answer a delivery"},
	{ID: WebhookValidRefused, Severity: api.SeverityWarning, Title: "A webhook receiver answered a valid delivery with a status other than 2xx"},
	{ID: UnreachableInputURL, Severity: api.SeverityError, Title: "A media input a hosted service cannot reach: loopback, private, a local name or http:"},
	{ID: OversizedInlineInput, Severity: api.SeverityError, Title: "A data: URI input over the service's inline limit"},
	{ID: InputExpiredBeforeStart, Severity: api.SeverityWarning, Title: "A job failed as it started because an upload or output URL it reads had expired in the queue"},
	{ID: UploadNotReused, Severity: api.SeverityInfo, Title: "The same file uploaded again and again while an earlier upload of it was live"},
}

// severity is each rule's severity, by id.
var severity = func() map[string]string {
	m := make(map[string]string, len(Rules))
	for _, r := range Rules {
		m[r.ID] = r.Severity
	}
	return m
}()

// hopeless are the problem codes a request answered with cannot succeed unchanged: the request
// itself is wrong (its JSON, envelope, parameters, key, media type or size), or what it asks
// for is refused whatever quote or key it carries.
var hopeless = map[string]bool{"invalid_input": true, "insufficient_credits": true, "permission_denied": true, "quote_mismatch": true,
	"content_policy_violation": true, "model_retired": true, "invalid_request": true, "idempotency_key_reused": true,
	"invalid_json": true, "invalid_parameter": true, "missing_idempotency_key": true, "unsupported_media_type": true,
	"payload_too_large": true}

// generationWide are the codes a generation is refused with whatever quote and key it carries:
// for these the same generation (account, model, canonical input) sent again through a fresh
// quote or under a new key is unchanged. Credits are a price of the input, so a fresh quote of
// the same input costs the same.
var generationWide = map[string]bool{"insufficient_credits": true, "content_policy_violation": true, "model_retired": true,
	"permission_denied": true, "invalid_input": true}

// JobNow is what the emulator knows of a job as the report is made.
type JobNow struct {
	Status          string
	OutputsExpireAt time.Time // once succeeded: when its outputs stop being served
}

// Input is what Judge looks at.
type Input struct {
	// Log is the tenant's log in the order the events arrived (Journal.Log); request bodies as
	// recorded.
	Log []Event
	// Dropped: events that arrived up to this time may have been dropped (zero: none were).
	Dropped time.Time
	// Job says what the emulator knows of a job now, if it still knows the job.
	Job func(id string) (JobNow, bool)
	// Now is the tenant's clock; Still says it moves only when told (the manual clock), so a
	// gap of zero means the clock was not moved, not that no time passed.
	Now   time.Time
	Still bool
	// Skips says the still clock is the skipping one, which moves only when a request waits on
	// a job, so the reasons name it rightly.
	Skips bool
	// DeprecatedAt says when the scenario in force deprecates a model, if it does.
	DeprecatedAt func(model string) (time.Time, bool)
	// Expected are the error answers the test declared it expects (POST
	// /_emulator/expected-errors): a finding about error answers that all match one of them is
	// what the test set out to provoke, and is not reported.
	Expected []*Pattern
}

// Judge returns the findings the input shows, in the order they were made.
func Judge(in Input) []api.Finding {
	j := judge{in: in, quotes: map[string]quoteSeen{}, quoteUsed: map[string]uint64{}, attempts: map[string]attempt{}, seed: maphash.MakeSeed(),
		jobs: map[string]*jobSeen{}, waits: map[string]wait{}, failed: map[string]*failure{}, downloads: map[string][]*Note{},
		explained: map[uint64]bool{}, expiredLinks: map[string]*expiredLink{}, keyed: map[string]int{}, receiver: map[string]*receiverFinding{},
		lists: map[string]*jobSeen{}, made: map[string]bool{}, mismatch: map[string]bool{}}
	for i := range in.Log {
		ev := &in.Log[i]
		if ev.Note != nil && ev.Note.Webhook != nil {
			j.webhook(ev.Note)
			continue
		}
		if ev.Note != nil {
			j.staleLink(ev)
			j.note(ev.Note)
			continue
		}
		j.entry(ev)
	}
	j.finish()
	return j.unexpected()
}

// judge is one pass over a log.
type judge struct {
	in  Input
	out []api.Finding

	quotes    map[string]quoteSeen // by quote id, from POST /v1/quotes answers
	quoteUsed map[string]uint64    // quote id -> the generation that made a job with it
	seed      maphash.Seed
	attempts  map[string]attempt // account, model and input -> its latest generation
	explained map[uint64]bool    // generations a new-key-on-retry finding already names
	jobs      map[string]*jobSeen
	jobOrder  []string
	lists     map[string]*jobSeen      // account and query -> reads of the job list, judged as polls
	made      map[string]bool          // jobs a generation made, so a generation answering one again is a replay
	mismatch  map[string]bool          // quotes already found used for another input
	waits     map[string]wait          // account, method and path -> the Retry-After in force
	failed    map[string]*failure      // a request that cannot succeed unchanged -> its failure
	downloads map[string][]*Note       // by job
	later     []func()                 // reasons written once their counts are final
	announced map[string]*announcement // account and deprecated model -> what was seen

	expiredLinks map[string]*expiredLink // file path -> the link last refused as expired
	keyed        map[string]int          // job -> its downloads that carried an Authorization header
	keyedOrder   []string
	receiver     map[string]*receiverFinding // webhook rule -> its finding
	media        mediaSeen                   // media inputs and uploads (inputs_report.go)

	// subjects are, by finding, the error answers a finding is about (the quote_expired
	// answer of an expired-quote), which an expected error can explain; a finding about what
	// the client did after an answer (a retry-unchanged: it sent a refused request again) has
	// none, since a test that provokes a refusal on purpose does not ask for it to be repeated.
	subjects map[int][]uint64
}

// expiredLink is a signed link answered 403 expired, and what became of it.
type expiredLink struct {
	expires  time.Time
	answered uint64 // the arrival number handed out last when the refusal was written
	job      string
	again    int
	finding  int // index in out, or -1 before the first fetch again
}

type quoteSeen struct {
	seq     uint64
	expires time.Time
}

type attempt struct {
	seq               uint64
	key, jobID, fault string
	status            int
	jobStatus         string
	left              bool
}

type wait struct {
	seq      uint64
	answered uint64    // the arrival number handed out last when the answer was written
	at       time.Time // when the answer was written
	until    time.Time
	after    int
	date     bool
	code     string
	conn     string // the connection the answer went out on, when known
	// same names the refused request itself (its query and canonical body): the very same
	// request sent again is a retry, whatever connection it comes on.
	same string
	// realAt is when the answer was written in real time, and graceFrom when the first answer
	// of a burst was (requests in flight or within the grace of one answer that are refused in
	// turn do not push the grace on); both zero when not known.
	realAt, graceFrom time.Time
}

// RetryAfterGrace is how long after a 429 or 503 was written, in real time, a request on
// another connection may arrive without having seen it: a parallel worker's request sent as
// the answer was on its way. A request on the same connection came after its client read the
// answer, and gets no grace.
const RetryAfterGrace = 50 * time.Millisecond

type failure struct {
	seq     uint64
	retries int
	code    string
	account string
	finding int // index in out, or -1 before the first retry
}

type jobSeen struct {
	firstSeq       uint64    // the first entry that named the job
	firstAt        time.Time // when it arrived
	lastSeen       uint64    // the latest entry that showed the job
	lastPoll       time.Time
	lastPollWall   bool      // lastPoll is in real time (see api.JournalEntry.Wall)
	lastPollReal   time.Time // the real arrival of the last poll, when known
	polled         bool
	fast           int
	fastest        time.Duration
	fastSeqs       []uint64
	terminalSeq    uint64
	terminalStatus string
	// rereads are the reads after terminalSeq but those a download followed (a read that
	// fetches the links for a download is part of the download); pending says no download has
	// followed the last yet.
	rereads         []uint64
	pending         bool
	succeededSeq    uint64
	referencedAfter uint64 // the latest poll or cancel of the job
}

func (j *judge) job(id string, e *Entry) *jobSeen {
	js, ok := j.jobs[id]
	if !ok {
		js = &jobSeen{firstSeq: e.Seq, firstAt: arrived(e)}
		j.jobs[id] = js
		j.jobOrder = append(j.jobOrder, id)
	}
	return js
}

func (j *judge) add(rule, reason string, seqs ...uint64) int {
	entries := []uint64{}
	for _, s := range seqs {
		if s != 0 && len(entries) < maxSeqs {
			entries = append(entries, s)
		}
	}
	j.out = append(j.out, api.Finding{Rule: rule, Severity: severity[rule], Reason: reason, Entries: entries})
	return len(j.out) - 1
}

// subject notes an error answer a finding is about (see judge.subjects).
func (j *judge) subject(i int, seq uint64) {
	if j.subjects == nil {
		j.subjects = map[int][]uint64{}
	}
	j.subjects[i] = append(j.subjects[i], seq)
}

// unexpected is the findings but those whose error answers the test declared it expects, every
// one of them: a test that provokes an expired quote on purpose and says so has no
// expired-quote finding, while the same answer undeclared, or a second one, is still found.
func (j *judge) unexpected() []api.Finding {
	if len(j.in.Expected) == 0 || len(j.subjects) == 0 {
		return j.out
	}
	bySeq := make(map[uint64]*Event, len(j.in.Log))
	for i := range j.in.Log {
		if ev := &j.in.Log[i]; ev.Request != nil {
			bySeq[ev.Request.Seq] = ev
		}
	}
	expected := func(seq uint64) bool {
		ev := bySeq[seq]
		if ev == nil {
			return false
		}
		sub := &subject{e: ev.Request, header: ev.header}
		return slices.ContainsFunc(j.in.Expected, func(p *Pattern) bool { return p.matches(sub) })
	}
	out := j.out[:0:0]
	for i, f := range j.out {
		if seqs := j.subjects[i]; len(seqs) > 0 && !slices.ContainsFunc(seqs, func(s uint64) bool { return !expected(s) }) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// addSeq lists one more entry in a finding, up to maxSeqs.
func (j *judge) addSeq(i int, seq uint64) {
	if len(j.out[i].Entries) < maxSeqs {
		j.out[i].Entries = append(j.out[i].Entries, seq)
	}
}

// arrived is when a request arrived: an entry from before arrival times were kept has only
// the time of its answer.
func arrived(e *Entry) time.Time {
	if e.ReceivedAt.IsZero() {
		return e.Time
	}
	return e.ReceivedAt
}

// Garbled reports whether an injected fault answered a request in the emulator's place, so
// its client read nothing of what the service made of it (see garbled).
func Garbled(e *Entry) bool { return garbled(e) }

// garbled reports whether an injected fault answered in the emulator's place (an error page,
// a reset, a malformed or truncated body), so the answer says nothing of the request itself. A
// delay or a shaped download leaves the answer as the emulator made it, and so does a
// perturbation that strikes with no fault action at all (a plan's advance of the clock alone,
// or an outcome it forces on the job the request makes).
func garbled(e *Entry) bool {
	return e.Fault != "" && e.FaultKind != "" && e.FaultKind != "delay" && e.FaultKind != "download"
}

// stillClock names a clock that moves only when told.
func (j *judge) stillClock() string {
	if j.in.Skips {
		return "it skips, moving only when a request waits on a job"
	}
	return "it is manual"
}

// span says how far apart two instants are on the tenant's clock, in words: on a clock that
// moves only when told, no gap means the clock was not moved.
func (j *judge) span(d time.Duration) string {
	if d == 0 && j.in.Still {
		return "without the emulator's clock moving (" + j.stillClock() + ": move it to model the time a client waits)"
	}
	return d.Round(time.Millisecond).String() + " later"
}

// route is what the judge needs of a request's path.
type route int

const (
	otherRoute route = iota
	quoteRoute
	generateRoute
	jobRoute
	cancelRoute
	listRoute
)

func routeOf(e *Entry) (route, string) {
	switch {
	case e.Method == "POST" && e.Path == "/v1/quotes":
		return quoteRoute, ""
	case e.Method == "POST" && e.Path == "/v1/generate":
		return generateRoute, ""
	case (e.Method == "GET" || e.Method == "HEAD") && e.Path == "/v1/jobs":
		return listRoute, ""
	}
	rest, ok := strings.CutPrefix(e.Path, "/v1/jobs/")
	if !ok || rest == "" {
		return otherRoute, ""
	}
	if id, ok := strings.CutSuffix(rest, "/cancel"); ok && e.Method == "POST" && id != "" && !strings.Contains(id, "/") {
		return cancelRoute, id
	}
	if (e.Method == "GET" || e.Method == "HEAD") && !strings.Contains(rest, "/") {
		return jobRoute, rest
	}
	return otherRoute, ""
}

// note judges what a download or a balance change changes: a balance set is a change to every
// insufficient_credits failure of its account; a download shows the client used a job.
func (j *judge) note(n *Note) {
	switch n.Kind {
	case CreditsSet:
		j.creditsChanged(n.Account)
	case Download:
		// Output URLs need no key, and a plain one carrying it is harmless (the contract serves
		// it without auth): only a signed link, which storage refuses with a key, is judged.
		if n.Authorized && !n.LinkExpires.IsZero() {
			if j.keyed[n.Job] == 0 {
				j.keyedOrder = append(j.keyedOrder, n.Job)
			}
			j.keyed[n.Job]++
		}
		j.downloads[n.Job] = append(j.downloads[n.Job], n)
		if js := j.jobs[n.Job]; js != nil && js.pending {
			js.rereads, js.pending = js.rereads[:len(js.rereads)-1], false
		}
	}
}

// staleLink judges stale-link-refetched: a signed link answered 403 expired, fetched again —
// the same file at the same expiry — instead of the fresh link a read of the job gives. A fetch
// that arrived before the refusal was written was in flight already (a parallel download).
func (j *judge) staleLink(ev *Event) {
	n := ev.Note
	if n.Kind != Download || n.LinkExpires.IsZero() {
		return
	}
	if prev, ok := j.expiredLinks[n.File]; ok && prev.expires.Equal(n.LinkExpires) && ev.Arrival > prev.answered {
		prev.again++
		if prev.finding < 0 {
			prev.finding = j.add(StaleLinkRefetched, "", j.lastSeen(prev.job))
			j.later = append(j.later, func() {
				j.out[prev.finding].Reason = fmt.Sprintf("%s was fetched %d more time(s) at a link answered 403 (expired at %s): read the job again (GET /v1/jobs/{id}) for a fresh link instead of reusing a stored one",
					clipText(n.File), prev.again, prev.expires.UTC().Format(time.RFC3339))
			})
		}
		return
	}
	if n.LinkExpired {
		j.expiredLinks[n.File] = &expiredLink{expires: n.LinkExpires, answered: ev.Answered, job: n.Job, finding: -1}
	}
}

// lastSeen is the latest entry that showed a job, or 0 when none did.
func (j *judge) lastSeen(id string) uint64 {
	if js := j.jobs[id]; js != nil {
		return js.lastSeen
	}
	return 0
}

// entry judges one request against what came before it.
func (j *judge) entry(ev *Event) {
	e := ev.Request
	j.retryAfter(ev)
	j.unchanged(e)
	r, id := routeOf(e)
	j.deprecatedUse(e, r)
	switch r {
	case quoteRoute:
		if e.Status == 200 && !garbled(e) && e.QuoteID != "" {
			j.quotes[e.QuoteID] = quoteSeen{seq: e.Seq, expires: e.QuoteExpiresAt}
		}
	case generateRoute:
		j.generation(ev)
		j.inputExpired(e)
	case jobRoute:
		j.poll(ev, id)
		j.inputExpired(e)
	case listRoute:
		k := e.Account + "\x00" + e.Query
		js := j.lists[k]
		if js == nil {
			js = &jobSeen{}
			j.lists[k] = js
		}
		what := "the job list (GET /v1/jobs"
		if e.Query != "" {
			what += "?" + clipText(e.Query)
		}
		j.pollGap(ev, js, what+")", "read")
	case cancelRoute:
		j.job(id, e).referencedAfter = e.Seq
		j.sawJob(e, id)
	case otherRoute:
		if e.Method == "POST" && e.Path == "/v1/uploads" {
			j.upload(e)
		}
	}
}

// retryAfter judges retry-after-ignored: after a 429 or 503 with Retry-After, the same account
// sending the same method and path again (HEAD counts as GET) before the wait is over. What
// the client could not have seen is not held against it: a request that arrived before the
// answer was written was already in flight (a parallel worker), and one on another connection
// that arrived within RetryAfterGrace of it may have been sent as the answer was on its way.
// The wait is over once the tenant's clock reached the instant Retry-After names, or once as
// much real time passed since the answer (a client that sleeps in real time while the clock
// stands still or skips).
func (j *judge) retryAfter(ev *Event) {
	e := ev.Request
	limited := (e.Status == 429 || e.Status == 503) && e.RetryAfter > 0
	if len(j.waits) == 0 && !limited {
		return
	}
	method := e.Method
	if method == "HEAD" {
		method = "GET" // a HEAD of the same path asks the same of the same endpoint
	}
	k := e.Account + "\x00" + method + " " + e.Path
	var graceFrom time.Time
	if ev.Real != nil {
		graceFrom = ev.Real.Answered
	}
	if w, ok := j.waits[k]; ok {
		switch {
		case ev.Arrival <= w.answered, j.unseen(w, ev):
			graceFrom = w.graceFrom // could not have seen the answer: the wait stays in force
		default:
			delete(j.waits, k)
			if at := arrived(e); at.Before(w.until) && !j.sleptReal(w, ev) {
				form := fmt.Sprintf("%ds", w.after)
				if w.date {
					form = "until " + w.until.UTC().Format(time.RFC1123)
				}
				j.add(RetryAfterIgnored, fmt.Sprintf("%s %s was sent again %s after a %s that asked to wait %s (Retry-After)",
					e.Method, e.Path, j.retrySpan(w, ev), w.code, form), w.seq, e.Seq)
			}
		}
	}
	if limited {
		code := fmt.Sprint(e.Status)
		if e.Code != "" {
			code += " " + e.Code
		}
		w := wait{seq: e.Seq, answered: ev.Answered, at: e.Time, until: e.Time.Add(time.Duration(e.RetryAfter) * time.Second), after: e.RetryAfter, code: code,
			conn: e.Conn, same: sameAs(e), graceFrom: graceFrom}
		if ev.Real != nil {
			w.realAt = ev.Real.Answered
		}
		if !e.RetryAt.IsZero() {
			w.until, w.date = e.RetryAt, true
		}
		j.waits[k] = w
	}
}

// unseen reports whether a request came on another connection within RetryAfterGrace of the
// burst of answers w belongs to, in real time, so its client may not have seen w yet. The very
// body that was refused, sent again, is no parallel worker's (workers send their own quotes and
// generations; they may well read the same list): a client that opens a connection for each
// request retries on a new one.
func (j *judge) unseen(w wait, ev *Event) bool {
	if w.graceFrom.IsZero() || ev.Real == nil || (w.conn != "" && w.conn == ev.Request.Conn) {
		return false
	}
	if ev.Real.Arrived.Sub(w.graceFrom) >= RetryAfterGrace {
		return false
	}
	return w.same == "" || sameAs(ev.Request) != w.same
}

// sameAs names a request with a body by its query and canonical body, so the same request sent
// again is known whatever key or connection it carries; "" for a request without one.
func sameAs(e *Entry) string {
	if len(e.RequestBody) == 0 {
		return ""
	}
	return e.Query + "\x00" + Digest(canonicalValue(e.RequestBody))
}

// sleptReal reports whether the real time between the answer and the request is at least the
// wait Retry-After asked for, on the tenant's clock, from the answer.
func (j *judge) sleptReal(w wait, ev *Event) bool {
	if w.realAt.IsZero() || ev.Real == nil {
		return false
	}
	return ev.Real.Arrived.Sub(w.realAt) >= w.until.Sub(w.at)
}

// retrySpan says how long after the answer a request came, in words: in real time when the
// tenant's clock stood still or skipped meanwhile and real time is known.
func (j *judge) retrySpan(w wait, ev *Event) string {
	d := arrived(ev.Request).Sub(w.at)
	if j.in.Still && !w.realAt.IsZero() && ev.Real != nil {
		real := max(ev.Real.Arrived.Sub(w.realAt), 0).Round(time.Millisecond)
		switch {
		case real == 0:
			return j.span(d)
		case d == 0:
			return real.String() + " later in real time, " + j.span(0)
		}
		return real.String() + " later in real time"
	}
	return j.span(d)
}

// unchanged judges retry-unchanged: a request answered with a code it cannot succeed with
// unchanged (hopeless), sent again unchanged by the same account and answered the same.
// Unchanged is the same method, path, query and canonical body (key order, number spelling and
// whitespace aside); for a generation refused whatever quote and key it carries
// (generationWide), the same generation through a fresh quote or a new key too; for a key
// already used with another body, the same key. For insufficient_credits a balance set through
// the control API, or a refund the client saw (a job of the account failed, canceled or
// expired), between the two (in the log's order, whatever the clock says) counts as a change.
func (j *judge) unchanged(e *Entry) {
	fail := !garbled(e) && hopeless[e.Code]
	if len(j.failed) == 0 && !fail {
		return // nothing to compare with: skip the body
	}
	keys := j.failureKeys(e)
	for _, k := range keys {
		f, ok := j.failed[k]
		if !ok {
			continue
		}
		if !garbled(e) && e.Code == f.code {
			if f.finding < 0 {
				f.finding = j.add(RetryUnchanged, "", f.seq)
				j.later = append(j.later, func() {
					fd := &j.out[f.finding]
					fd.Reason = fmt.Sprintf("%s %s was answered %s and sent again unchanged %d time(s), answered the same each time", e.Method, e.Path, f.code, f.retries)
				})
			}
			f.retries++
			j.addSeq(f.finding, e.Seq)
			return
		}
		delete(j.failed, k)
	}
	if fail {
		j.failed[keys[j.failureKind(e)]] = &failure{seq: e.Seq, code: e.Code, account: e.Account, finding: -1}
	}
}

// The kinds of sameness a failure is remembered by (failureKeys).
const (
	sameRequest    = iota // method, path, query, account and canonical body
	sameGeneration        // account, model and canonical input: any quote, any key
	sameKey               // account and Idempotency-Key
)

// failureKeys are the keys a request is known by for each kind of sameness; a request that is
// no generation has only the first.
func (j *judge) failureKeys(e *Entry) []string {
	keys := []string{"r\x00" + e.Method + " " + e.Path + "?" + e.Query + "\x00" + e.Account + "\x00" + string(canonicalValue(e.RequestBody))}
	if e.Method == "POST" && e.Path == "/v1/generate" {
		keys = append(keys, "g\x00"+j.identity(e), "k\x00"+e.Account+"\x00"+e.IdempotencyKey)
	}
	return keys
}

// failureKind is the sameness a failure of a request is remembered by.
func (j *judge) failureKind(e *Entry) int {
	switch {
	case e.Method != "POST" || e.Path != "/v1/generate":
		return sameRequest
	case generationWide[e.Code] && j.identity(e) != "":
		return sameGeneration
	case e.Code == "idempotency_key_reused" && e.IdempotencyKey != "":
		return sameKey
	}
	return sameRequest
}

// creditsChanged forgets an account's insufficient_credits failures: what it can spend changed.
func (j *judge) creditsChanged(account string) {
	for k, f := range j.failed {
		if f.account == account && f.code == "insufficient_credits" {
			delete(j.failed, k)
		}
	}
}

// identity is what makes two generations the same intended one: the account, the model and
// the canonical input, whatever quote or key they carry. A generation whose input the emulator
// could not read is known by its whole body.
func (j *judge) identity(e *Entry) string {
	if e.InputDigest != "" {
		return e.Account + "\x00" + e.Model + "\x00" + e.InputDigest
	}
	body := canonicalValue(e.RequestBody)
	if len(body) == 0 {
		return ""
	}
	return fmt.Sprintf("%s\x00body\x00%x", e.Account, maphash.Bytes(j.seed, body))
}

// generation judges new-key-on-retry, expired-quote, quote-reused and quote-mismatch; a
// generation answering a job an earlier one made (an idempotent replay, not a wait) is a poll
// of that job.
func (j *judge) generation(ev *Event) {
	e := ev.Request
	if e.JobID != "" && e.Status/100 == 2 && !garbled(e) {
		if j.made[e.JobID] && !strings.Contains("&"+e.Query+"&", "&wait=true&") {
			j.pollGap(ev, j.job(e.JobID, e), "job "+clipText(e.JobID), "asked for again (a replay of its generation)")
		}
		j.made[e.JobID] = true
	}
	if id := j.identity(e); e.IdempotencyKey != "" && id != "" && e.Status != 401 && e.Status != 403 {
		if prev, ok := j.attempts[id]; ok && prev.key != e.IdempotencyKey {
			if why := j.ambiguous(prev, e); why != "" {
				j.add(NewKeyOnRetry, fmt.Sprintf("the same generation (same model and input) was sent again with Idempotency-Key %q after %s with key %q: the first attempt may have made a job and been charged, and the new key makes a second one; retry with the same key and the same body",
					clipText(e.IdempotencyKey), why, clipText(prev.key)), prev.seq, e.Seq)
				j.explained[e.Seq] = true
			}
		}
		j.attempts[id] = attempt{seq: e.Seq, key: e.IdempotencyKey, jobID: e.JobID, status: e.Status, fault: e.FaultKind, jobStatus: e.JobStatus, left: e.ClientLeft}
	}

	// A quote found expired on an answer a perturbation struck is the perturbation's doing, not
	// the client's: a plan's advance moved the clock past the quote's expiry while the request
	// was in flight, or its delay held the request there. A quote used twice or for another
	// input is the client's doing whatever time passed, unless the answer is the fault's own.
	if !garbled(e) || e.Code == "quote_expired" {
		switch e.Code {
		case "quote_expired":
			if e.FaultKind != "" {
				break // an outcome moves no time: only a fault (an advance, a delay) excuses it
			}
			q, known := j.quotes[e.QuoteID]
			expires := e.QuoteExpiresAt
			if expires.IsZero() {
				expires = q.expires
			}
			reason := fmt.Sprintf("generation with quote %s, which had expired", clipText(e.QuoteID))
			if !expires.IsZero() {
				reason = fmt.Sprintf("generation with quote %s, %s after it expired at %s", clipText(e.QuoteID), arrived(e).Sub(expires).Round(time.Millisecond), expires.UTC().Format(time.RFC3339))
			}
			if !known {
				q.seq = 0
			}
			j.subject(j.add(ExpiredQuote, reason+": quote again when the quote is near its expires_at", q.seq, e.Seq), e.Seq)
		case "quote_mismatch":
			if !j.mismatch[e.QuoteID] {
				j.mismatch[e.QuoteID] = true
				j.subject(j.add(QuoteMismatch, fmt.Sprintf("generation with quote %s, which was made for another model or input: quote each input you generate, and send the input exactly as quoted",
					clipText(e.QuoteID)), j.quotes[e.QuoteID].seq, e.Seq), e.Seq)
			}
		case "input_url_refused", "input_too_large":
			j.inputRefused(e)
		case "quote_already_used":
			if !j.explained[e.Seq] {
				j.subject(j.add(QuoteReused, fmt.Sprintf("generation with quote %s, which an earlier job already used: a quote buys one generation", clipText(e.QuoteID)), j.quoteUsed[e.QuoteID], e.Seq), e.Seq)
			}
		}
	}
	if e.Status/100 == 2 && !garbled(e) && e.QuoteID != "" {
		if _, ok := j.quoteUsed[e.QuoteID]; !ok {
			j.quoteUsed[e.QuoteID] = e.Seq
		}
	}
	if e.JobID != "" && e.Status/100 == 2 {
		j.sawJob(e, e.JobID)
	}
}

// ambiguous says why the client could not know whether prev made a job, or "" when it could.
func (j *judge) ambiguous(prev attempt, e *Entry) string {
	switch {
	case prev.status == 0:
		return "an attempt whose connection was dropped"
	case prev.left:
		return fmt.Sprintf("an attempt it gave up on before the answer (%d) came, as on its own timeout", prev.status)
	case prev.status >= 500:
		return fmt.Sprintf("an attempt answered %d", prev.status)
	case prev.fault == "malformed" || prev.fault == "truncated" || prev.fault == "reset":
		return "an attempt whose answer an injected " + prev.fault + " fault garbled"
	case prev.status/100 == 2 && prev.jobID != "":
		if jobs.Status(prev.jobStatus).Terminal() {
			return "" // the answer itself said how the job ended
		}
		if js := j.jobs[prev.jobID]; js != nil && js.referencedAfter > prev.seq {
			return "" // the client used the job it was given: it had the answer
		}
		for _, d := range j.downloads[prev.jobID] {
			if !d.Time.After(arrived(e)) {
				return ""
			}
		}
		return fmt.Sprintf("an attempt whose answer (job %s) the client never used, as when it hangs up or times out", clipText(prev.jobID))
	}
	return ""
}

// poll judges poll-too-fast and poll-after-terminal.
func (j *judge) poll(ev *Event, id string) {
	e := ev.Request
	js := j.job(id, e)
	js.referencedAfter = e.Seq
	if js.terminalSeq != 0 {
		js.rereads, js.pending = append(js.rereads, e.Seq), true
	}
	j.pollGap(ev, js, "job "+clipText(id), "polled")
	if e.Status == 200 && !garbled(e) {
		j.sawJob(e, id)
	}
}

// pollGap judges poll-too-fast for one more look at what (a job, the job list): a gap shorter
// than the floor, less the tolerance, is a fast one. Gaps are measured between arrivals on the
// tenant's clock, or in real time where more real time passed (a client that sleeps while a
// manual clock stands still), and only in real time while the clock skips.
func (j *judge) pollGap(ev *Event, js *jobSeen, what, verb string) {
	e := ev.Request
	at, wall := arrived(e), !e.Wall.IsZero()
	if wall {
		at = e.Wall // a skipping clock jumps at each poll: space polls in real time
	}
	var real time.Time
	if ev.Real != nil {
		real = ev.Real.Arrived
	}
	if js.polled && wall == js.lastPollWall {
		gap := at.Sub(js.lastPoll)
		if !wall && !real.IsZero() && !js.lastPollReal.IsZero() {
			gap = max(gap, real.Sub(js.lastPollReal))
		}
		if gap < PollFloor-PollTolerance {
			js.fast++
			if js.fast == 1 || gap < js.fastest {
				js.fastest = gap
			}
			if len(js.fastSeqs) < maxSeqs {
				js.fastSeqs = append(js.fastSeqs, e.Seq)
			}
			if js.fast == FastPolls {
				i := j.add(PollTooFast, "")
				j.later = append(j.later, func() {
					fd := &j.out[i]
					fd.Entries = js.fastSeqs
					shortest := "the shortest gap " + js.fastest.Round(time.Millisecond).String()
					switch {
					case js.fastest.Round(time.Millisecond) > 0:
					case j.in.Still && !j.in.Skips:
						shortest = "some without the emulator's clock moving: " + j.stillClock() + ", move it to model the wait"
					default:
						shortest = "the shortest gap under 1ms"
					}
					fd.Reason = fmt.Sprintf("%s was %s %d times less than %s after the look before (%s): wait at least %s between polls, or use wait=true", what, verb, js.fast, PollFloor, shortest, PollFloor)
				})
			}
		}
	}
	js.lastPoll, js.lastPollWall, js.lastPollReal, js.polled = at, wall, real, true
}

// sawJob notes what an answer showed of a job: finished, succeeded.
func (j *judge) sawJob(e *Entry, id string) {
	js := j.job(id, e)
	js.lastSeen = e.Seq
	if jobs.Status(e.JobStatus).Terminal() && js.terminalSeq == 0 {
		js.terminalSeq, js.terminalStatus = e.Seq, e.JobStatus
		if e.JobStatus != "succeeded" && e.Account != "" {
			j.creditsChanged(e.Account) // its held credits came back
		}
	}
	if e.JobStatus == "succeeded" && js.succeededSeq == 0 {
		js.succeededSeq = e.Seq
	}
}

// finish judges what needs the whole log: reads after a job ended, downloads after expiry,
// and outputs never downloaded.
func (j *judge) finish() {
	for _, f := range j.later {
		f()
	}
	for _, id := range j.jobOrder {
		js := j.jobs[id]
		// One read after the end is a last look; more is polling.
		if polls := js.rereads; len(polls) >= 2 {
			j.add(PollAfterTerminal, fmt.Sprintf("job %s was read %d time(s) after an answer showed it %s: stop polling once a job is succeeded, failed, canceled or expired",
				clipText(id), len(polls), js.terminalStatus), append([]uint64{js.terminalSeq}, polls...)...)
		}
	}
	for _, id := range j.keyedOrder {
		j.add(DownloadWithAPIKey, fmt.Sprintf("signed links of job %s were fetched %d time(s) with an Authorization header: storage such as S3 refuses a signed link that also carries a key (400) while others log it; send the key to /v1 only",
			clipText(id), j.keyed[id]), j.lastSeen(id))
	}
	late := map[string]bool{}
	for _, id := range j.jobOrder {
		for _, n := range j.downloads[id] {
			if n.Status != 410 || late[id] {
				continue
			}
			late[id] = true
			reason := fmt.Sprintf("%s was downloaded at %s, after the job's outputs had expired (410)", clipText(n.File), n.Time.UTC().Format(time.RFC3339))
			if now, ok := j.jobNow(id); ok && !now.OutputsExpireAt.IsZero() {
				exp := now.OutputsExpireAt
				reason = fmt.Sprintf("%s was downloaded %s after the job's outputs expired at %s (410): download outputs as soon as the job succeeds", clipText(n.File), n.Time.Sub(exp).Round(time.Millisecond), exp.UTC().Format(time.RFC3339))
			}
			j.add(DownloadAfterExpiry, reason, j.jobs[id].lastSeen)
		}
	}
	for _, id := range j.jobOrder {
		js := j.jobs[id]
		if late[id] {
			continue // a late download is the finding already made about this job
		}
		now, ok := j.jobNow(id)
		if !ok || now.Status != "succeeded" || now.OutputsExpireAt.IsZero() || j.in.Now.Before(now.OutputsExpireAt) {
			continue // not succeeded, or not expired yet: the client may still download
		}
		if !j.in.Dropped.IsZero() && !js.firstAt.After(j.in.Dropped) {
			continue // its downloads may be among the events dropped
		}
		exp := now.OutputsExpireAt
		if j.fetched(id, exp) {
			continue
		}
		why := "none of its outputs was downloaded whole"
		switch {
		case js.succeededSeq == 0 && len(j.downloads[id]) == 0:
			why = "the client never saw it finish (no poll showed it succeeded) and downloaded none of its outputs"
		case len(j.downloads[id]) > 0:
			why = "its downloads were cut short, abandoned or asked only for part of a file, so no output arrived whole"
		}
		seq := js.succeededSeq
		if seq == 0 {
			seq = js.firstSeq
		}
		j.add(OutputsNeverDownloaded, fmt.Sprintf("job %s succeeded but %s before they expired at %s", clipText(id), why, exp.UTC().Format(time.RFC3339)), seq)
	}
}

// fetched reports whether some output of a job arrived whole before exp: a 304, a 200 whose
// bytes all reached the connection, or ranges that together cover the file.
func (j *judge) fetched(id string, exp time.Time) bool {
	type span struct{ from, to int64 }
	got := map[string][]span{}
	for _, d := range j.downloads[id] {
		if !d.Time.Before(exp) {
			continue
		}
		switch {
		case d.Status == 304, d.Status/100 == 2 && d.Size == 0:
			return true
		case d.Status/100 == 2 && d.Sent > 0:
			got[d.File] = append(got[d.File], span{d.Start, d.Start + d.Sent})
			size := d.Size
			covered := int64(0)
			for covered < size { // extend the covered prefix with any span that reaches it
				grew := false
				for _, s := range got[d.File] {
					if s.from <= covered && s.to > covered {
						covered, grew = s.to, true
					}
				}
				if !grew {
					break
				}
			}
			if covered >= size {
				return true
			}
		}
	}
	return false
}

func (j *judge) jobNow(id string) (JobNow, bool) {
	if j.in.Job == nil {
		return JobNow{}, false
	}
	return j.in.Job(id)
}

// canonical is a body without insignificant whitespace, so a body sent again compares equal
// however it was indented; a body that is not JSON stays as sent. Most bodies are compact
// already (a client's JSON encoder writes them so) and come back as they are, without a copy.
func canonical(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	if compact(b) {
		return b
	}
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// canonicalValue is a JSON body in its canonical form (jsonvalue.Canonical: members in key
// order, numbers in one spelling), so two bodies that say the same compare equal; a body that
// is not JSON is as canonical makes it.
func canonicalValue(b []byte) []byte {
	var v any
	if len(bytes.TrimSpace(b)) == 0 || jsonvalue.Decode(b, &v) != nil {
		return canonical(b)
	}
	return jsonvalue.Canonical(v)
}

// compact reports whether b has no whitespace outside its strings.
func compact(b []byte) bool {
	in, esc := false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\n' || c == '\t' || c == '\r'):
			return false
		}
	}
	return true
}

// clipText keeps a value quoted in a reason short.
func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Digest names a canonical JSON value (jsonvalue.Canonical) in a few bytes: the report tells
// two generations of the same input apart from others by it, without keeping the input.
func Digest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:12])
}
