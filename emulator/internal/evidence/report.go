// The report judges how a client behaves from what the emulator saw of it: a tenant's
// journal of /v1 requests, the downloads and balance changes noted beside it, and the tenant's
// clock. Each finding names a rule, says in one line what happened, and lists the journal
// entries that show it. The rules catch what works against an emulator and costs money, time
// or data against the real service: a retry that would charge twice, a client that ignores
// Retry-After, polls that hammer, quotes used wrongly, outputs lost.
//
// The report knows no HTTP: Judge takes entries and notes and returns findings, so it is
// tested on journals written by hand.

package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
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
	DownloadAfterExpiry    = "download-after-expiry"
	OutputsNeverDownloaded = "outputs-never-downloaded"
)

// Polling: a job polled again sooner than PollFloor after its last poll, on the tenant's clock,
// is a fast poll; FastPolls of them for one job make a finding. One quick look (right after a
// generation, say) is not a habit; three are.
const (
	PollFloor = time.Second
	FastPolls = 3
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
	{ID: DownloadAfterExpiry, Severity: api.SeverityWarning, Title: "An output downloaded after it expired"},
	{ID: OutputsNeverDownloaded, Severity: api.SeverityInfo, Title: "A succeeded job whose outputs expired without being downloaded"},
}

// severity is each rule's severity, by id.
var severity = func() map[string]string {
	m := make(map[string]string, len(Rules))
	for _, r := range Rules {
		m[r.ID] = r.Severity
	}
	return m
}()

// hopeless are the problem codes a request answered with cannot succeed unchanged.
var hopeless = map[string]bool{"invalid_input": true, "insufficient_credits": true, "permission_denied": true, "quote_mismatch": true}

// Input is what Judge looks at.
type Input struct {
	// Entries are the tenant's journal, oldest first, bodies as recorded (journal.Entries).
	Entries []api.JournalEntry
	// Notes are the downloads and balance changes beside the journal, oldest first; notes up to
	// NotesMissing may have been dropped (zero: none were).
	Notes        []Note
	NotesMissing time.Time
	// OutputsExpireAt says when a succeeded job's outputs stop being served, if the emulator
	// still knows the job.
	OutputsExpireAt func(jobID string) (time.Time, bool)
	// Now is the tenant's clock.
	Now time.Time
}

// Judge returns the findings the input shows, in the order they were made.
func Judge(in Input) []api.Finding {
	j := judge{in: in, quotes: map[string]quoteSeen{}, quoteUsed: map[string]uint64{}, attempts: map[uint64]attempt{}, seed: maphash.MakeSeed(),
		jobs: map[string]*jobSeen{}, waits: map[string]wait{}, failed: map[string]*failure{}, downloads: map[string][]Note{},
		explained: map[uint64]bool{}}
	for _, n := range in.Notes {
		if n.Kind == Download {
			j.downloads[n.Job] = append(j.downloads[n.Job], n)
		}
	}
	for i := range in.Entries {
		j.entry(&in.Entries[i])
	}
	j.finish()
	return j.out
}

// judge is one pass over a journal.
type judge struct {
	in  Input
	out []api.Finding

	quotes    map[string]quoteSeen // by quote id, from POST /v1/quotes answers
	quoteUsed map[string]uint64    // quote id -> the generation that made a job with it
	seed      maphash.Seed
	attempts  map[uint64]attempt // canonical body's hash -> its latest generation
	explained map[uint64]bool    // generations a new-key-on-retry finding already names
	jobs      map[string]*jobSeen
	jobOrder  []string
	waits     map[string]wait     // account, method and path -> the Retry-After in force
	failed    map[string]*failure // a request that cannot succeed unchanged -> its failure
	downloads map[string][]Note   // by job
	later     []func()            // reasons written once their counts are final
}

type quoteSeen struct {
	seq     uint64
	expires time.Time
}

type attempt struct {
	seq        uint64
	key, jobID string
	status     int
	fault      string
}

type wait struct {
	seq   uint64
	until time.Time
	after int
	code  string
}

type failure struct {
	seq     uint64
	retries int
	code    string
	time    time.Time
	finding int // index in out, or -1 before the first retry
}

type jobSeen struct {
	lastSeen        uint64 // the latest entry that showed the job
	lastPoll        time.Time
	polled          bool
	fast            int
	fastest         time.Duration
	fastSeqs        []uint64
	fastFinding     int // index in out, or -1
	terminalSeq     uint64
	terminalStatus  string
	afterTerminal   int
	afterFinding    int
	succeededSeq    uint64
	succeededAt     time.Time
	referencedAfter uint64 // the latest poll or cancel of the job
}

func (j *judge) job(id string) *jobSeen {
	js, ok := j.jobs[id]
	if !ok {
		js = &jobSeen{fastFinding: -1, afterFinding: -1}
		j.jobs[id] = js
		j.jobOrder = append(j.jobOrder, id)
	}
	return js
}

func (j *judge) add(rule, reason string, seqs ...uint64) int {
	var entries []uint64
	for _, s := range seqs {
		if s != 0 {
			entries = append(entries, s)
		}
	}
	if entries == nil {
		entries = []uint64{}
	}
	j.out = append(j.out, api.Finding{Rule: rule, Severity: severity[rule], Reason: reason, Entries: entries})
	return len(j.out) - 1
}

// addSeq lists one more entry in a finding, up to maxSeqs.
func (j *judge) addSeq(i int, seq uint64) {
	if len(j.out[i].Entries) < maxSeqs {
		j.out[i].Entries = append(j.out[i].Entries, seq)
	}
}

// route is what the judge needs of a request's path.
type route int

const (
	otherRoute route = iota
	quoteRoute
	generateRoute
	jobRoute
	cancelRoute
)

func routeOf(e *api.JournalEntry) (route, string) {
	switch {
	case e.Method == "POST" && e.Path == "/v1/quotes":
		return quoteRoute, ""
	case e.Method == "POST" && e.Path == "/v1/generate":
		return generateRoute, ""
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

// entry judges one journal entry against what came before it.
func (j *judge) entry(e *api.JournalEntry) {
	j.retryAfter(e)
	j.unchanged(e)
	r, id := routeOf(e)
	switch r {
	case quoteRoute:
		if e.Status == 200 && e.Fault == "" {
			qid := stringField(e.ResponseBody, "quote_id")
			if t, err := time.Parse(time.RFC3339Nano, stringField(e.ResponseBody, "expires_at")); err == nil && qid != "" {
				j.quotes[qid] = quoteSeen{seq: e.Seq, expires: t}
			}
		}
	case generateRoute:
		j.generation(e)
	case jobRoute:
		j.poll(e, id)
	case cancelRoute:
		js := j.job(id)
		js.referencedAfter = e.Seq
		j.sawJob(e, id)
	}
}

// retryAfter judges retry-after-ignored: after a 429 or 503 with Retry-After, the same method
// and path sent again before the wait is over.
func (j *judge) retryAfter(e *api.JournalEntry) {
	limited := (e.Status == 429 || e.Status == 503) && e.RetryAfter > 0
	if len(j.waits) == 0 && !limited {
		return
	}
	// Not by account: an injected fault answers before the key is read, so its entry has none.
	k := e.Method + " " + e.Path
	if w, ok := j.waits[k]; ok {
		delete(j.waits, k)
		if e.Time.Before(w.until) {
			j.add(RetryAfterIgnored, fmt.Sprintf("%s %s was sent again %s after a %s that asked to wait %ds (Retry-After)",
				e.Method, e.Path, e.Time.Sub(w.until.Add(-time.Duration(w.after)*time.Second)).Round(time.Millisecond), w.code, w.after), w.seq, e.Seq)
		}
	}
	if limited {
		code := fmt.Sprint(e.Status)
		if e.Code != "" {
			code += " " + e.Code
		}
		j.waits[k] = wait{seq: e.Seq, until: e.Time.Add(time.Duration(e.RetryAfter) * time.Second), after: e.RetryAfter, code: code}
	}
}

// unchanged judges retry-unchanged: a request answered invalid_input, insufficient_credits,
// permission_denied or quote_mismatch, sent again byte for byte (after whitespace) by the same
// account and answered the same. For insufficient_credits a balance set through the control API
// between the two counts as a change.
func (j *judge) unchanged(e *api.JournalEntry) {
	fail := e.Fault == "" && hopeless[e.Code]
	if len(j.failed) == 0 && !fail {
		return // nothing to compare with: skip the body
	}
	k := e.Method + " " + e.Path + "?" + e.Query + "\x00" + e.Account + "\x00" + string(canonical(e.RequestBody))
	if f, ok := j.failed[k]; ok {
		if e.Fault == "" && e.Code == f.code && !(f.code == "insufficient_credits" && j.creditsSet(e.Account, f.time, e.Time)) {
			if f.finding < 0 {
				f.finding = j.add(RetryUnchanged, "", f.seq)
				j.later = append(j.later, func() {
					fd := &j.out[f.finding]
					fd.Reason = fmt.Sprintf("%s %s was answered %s and sent again unchanged %d time(s), answered the same each time", e.Method, e.Path, f.code, f.retries)
				})
			}
			f.retries++
			j.addSeq(f.finding, e.Seq)
			f.time = e.Time
			return
		}
		delete(j.failed, k)
	}
	if fail {
		j.failed[k] = &failure{seq: e.Seq, code: e.Code, time: e.Time, finding: -1}
	}
}

// creditsSet reports whether account's balance was set through the control API from one time to
// another, both included (on the manual clock they are often the same instant).
func (j *judge) creditsSet(account string, from, to time.Time) bool {
	for _, n := range j.in.Notes {
		if n.Kind == CreditsSet && n.Account == account && !n.Time.Before(from) && !n.Time.After(to) {
			return true
		}
	}
	return false
}

// generation judges new-key-on-retry, expired-quote and quote-reused.
func (j *judge) generation(e *api.JournalEntry) {
	body := canonical(e.RequestBody)
	quoteID := memberString(body, "quote_id")

	// The body names the quote, which is the account's own: no need to key by account, which an
	// injected fault's entry lacks (it answers before the key is read).
	if e.IdempotencyKey != "" && len(body) > 0 && e.Status != 401 && e.Status != 403 {
		k := maphash.Bytes(j.seed, body) // the bodies themselves would make a large key
		if prev, ok := j.attempts[k]; ok && prev.key != e.IdempotencyKey {
			if why := j.ambiguous(prev, e); why != "" {
				j.add(NewKeyOnRetry, fmt.Sprintf("the same generation was sent again with Idempotency-Key %q after %s with key %q: in production that can charge twice", clipText(e.IdempotencyKey), why, clipText(prev.key)), prev.seq, e.Seq)
				j.explained[e.Seq] = true
			}
		}
		j.attempts[k] = attempt{seq: e.Seq, key: e.IdempotencyKey, jobID: e.JobID, status: e.Status, fault: e.Fault}
	}

	if e.Fault == "" {
		switch e.Code {
		case "quote_expired":
			q, known := j.quotes[quoteID]
			reason := fmt.Sprintf("generation with quote %s, which had expired", clipText(quoteID))
			if known {
				reason = fmt.Sprintf("generation with quote %s, %s after it expired at %s", clipText(quoteID), e.Time.Sub(q.expires).Round(time.Millisecond), q.expires.UTC().Format(time.RFC3339))
			}
			j.add(ExpiredQuote, reason+": quote again when the quote is near its expires_at", q.seq, e.Seq)
		case "quote_already_used":
			if !j.explained[e.Seq] {
				j.add(QuoteReused, fmt.Sprintf("generation with quote %s, which an earlier job already used: a quote buys one generation", clipText(quoteID)), j.quoteUsed[quoteID], e.Seq)
			}
		}
	}
	if e.Status/100 == 2 && quoteID != "" {
		if _, ok := j.quoteUsed[quoteID]; !ok {
			j.quoteUsed[quoteID] = e.Seq
		}
	}
	if e.JobID != "" && e.Status/100 == 2 {
		j.sawJob(e, e.JobID)
	}
}

// ambiguous says why the client could not know whether prev made a job, or "" when it could.
func (j *judge) ambiguous(prev attempt, e *api.JournalEntry) string {
	switch {
	case prev.status == 0:
		return "an attempt whose connection was dropped"
	case prev.status >= 500:
		return fmt.Sprintf("an attempt answered %d", prev.status)
	case prev.fault != "" && prev.status < 400:
		return "an attempt whose answer an injected fault disturbed"
	case prev.status/100 == 2 && prev.jobID != "":
		if js := j.jobs[prev.jobID]; js != nil && js.referencedAfter > prev.seq {
			return "" // the client used the job it was given: it had the answer
		}
		for _, d := range j.downloads[prev.jobID] {
			if !d.Time.After(e.Time) {
				return ""
			}
		}
		return fmt.Sprintf("an attempt whose answer (job %s) the client never used, as when it hangs up or times out", clipText(prev.jobID))
	}
	return ""
}

// poll judges poll-too-fast and poll-after-terminal.
func (j *judge) poll(e *api.JournalEntry, id string) {
	js := j.job(id)
	js.referencedAfter = e.Seq
	if js.terminalSeq != 0 {
		js.afterTerminal++
		if js.afterFinding < 0 {
			js.afterFinding = j.add(PollAfterTerminal, "", js.terminalSeq)
			j.later = append(j.later, func() {
				j.out[js.afterFinding].Reason = fmt.Sprintf("job %s was polled %d time(s) after an answer showed it %s: stop polling once a job is succeeded, failed, canceled or expired", clipText(id), js.afterTerminal, js.terminalStatus)
			})
		}
		j.addSeq(js.afterFinding, e.Seq)
	}
	if js.polled {
		if gap := e.Time.Sub(js.lastPoll); gap < PollFloor {
			js.fast++
			if js.fast == 1 || gap < js.fastest {
				js.fastest = gap
			}
			if len(js.fastSeqs) < maxSeqs {
				js.fastSeqs = append(js.fastSeqs, e.Seq)
			}
			if js.fast >= FastPolls {
				if js.fastFinding < 0 {
					js.fastFinding = j.add(PollTooFast, "")
					j.later = append(j.later, func() {
						fd := &j.out[js.fastFinding]
						fd.Entries = js.fastSeqs
						fd.Reason = fmt.Sprintf("job %s was polled %d times less than %s after the poll before (the shortest gap %s): wait at least %s between polls", clipText(id), js.fast, PollFloor, js.fastest.Round(time.Millisecond), PollFloor)
					})
				}
			}
		}
	}
	js.lastPoll, js.polled = e.Time, true
	if e.Status == 200 && e.Fault == "" {
		j.sawJob(e, id)
	}
}

// sawJob notes what an answer showed of a job: finished, succeeded.
func (j *judge) sawJob(e *api.JournalEntry, id string) {
	js := j.job(id)
	js.lastSeen = e.Seq
	status := stringField(e.ResponseBody, "status")
	switch status {
	case "succeeded", "failed", "canceled", "expired":
		if js.terminalSeq == 0 {
			js.terminalSeq, js.terminalStatus = e.Seq, status
		}
	}
	if status == "succeeded" && js.succeededSeq == 0 {
		js.succeededSeq, js.succeededAt = e.Seq, e.Time
	}
}

// finish judges what needs the whole journal: downloads after expiry, and outputs never
// downloaded.
func (j *judge) finish() {
	for _, f := range j.later {
		f()
	}
	late := map[string]bool{}
	for _, n := range j.in.Notes {
		if n.Kind != Download || n.Status != 410 || late[n.Job] {
			continue
		}
		late[n.Job] = true
		var seen uint64
		if js := j.jobs[n.Job]; js != nil {
			seen = js.lastSeen
		}
		reason := fmt.Sprintf("%s was downloaded at %s, after the job's outputs had expired (410)", clipText(n.File), n.Time.UTC().Format(time.RFC3339))
		if exp, ok := j.expiry(n.Job); ok {
			reason = fmt.Sprintf("%s was downloaded %s after the job's outputs expired at %s (410): download outputs as soon as the job succeeds", clipText(n.File), n.Time.Sub(exp).Round(time.Millisecond), exp.UTC().Format(time.RFC3339))
		}
		j.add(DownloadAfterExpiry, reason, seen)
	}
	for _, id := range j.jobOrder {
		js := j.jobs[id]
		if js.succeededSeq == 0 || late[id] {
			continue // a late download is the finding already made about this job
		}
		exp, ok := j.expiry(id)
		if !ok || j.in.Now.Before(exp) {
			continue // not expired yet: the client may still download
		}
		if !j.in.NotesMissing.IsZero() && !js.succeededAt.After(j.in.NotesMissing) {
			continue // its downloads may be among the notes dropped
		}
		fetched := false
		for _, d := range j.downloads[id] {
			if d.Time.Before(exp) && (d.Status/100 == 2 || d.Status == 304) {
				fetched = true
				break
			}
		}
		if !fetched {
			j.add(OutputsNeverDownloaded, fmt.Sprintf("job %s succeeded but none of its outputs was downloaded before they expired at %s", clipText(id), exp.UTC().Format(time.RFC3339)), js.succeededSeq)
		}
	}
}

func (j *judge) expiry(id string) (time.Time, bool) {
	if j.in.OutputsExpireAt == nil {
		return time.Time{}, false
	}
	return j.in.OutputsExpireAt(id)
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

// stringField finds the first member name with a string value in a compact JSON object the
// emulator wrote, and returns the value. The emulator writes ids and statuses first and escapes
// every quote inside a string, so the first match is the object's own member; values with
// escapes are not needed here and come back empty.
func stringField(body []byte, name string) string {
	key := `"` + name + `":"`
	i := bytes.Index(body, []byte(key))
	if i < 0 {
		return ""
	}
	rest := body[i+len(key):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return ""
	}
	return string(rest[:end])
}

// memberString finds a member with a string value in a compact JSON object a client sent: the
// first at the object's own level. A body that does not parse, or a value with escapes, gives "".
func memberString(body []byte, name string) string {
	depth, in, esc, start := 0, false, false, -1
	for i, c := range body {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			if !in {
				start = i + 1
			} else if depth == 1 && i+1 < len(body) && body[i+1] == ':' && string(body[start:i]) == name {
				rest := body[i+2:]
				if len(rest) == 0 || rest[0] != '"' {
					return ""
				}
				end := bytes.IndexByte(rest[1:], '"')
				if end < 0 || bytes.IndexByte(rest[1:end+1], '\\') >= 0 {
					return ""
				}
				return string(rest[1 : end+1])
			}
			in = !in
		case in:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return ""
}

// clipText keeps a value quoted in a reason short.
func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
