package emulator

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// parking is a wait=true generation whose connection the emulator took over, so that it waits
// without a goroutine, a stack or net/http's buffers. It keeps only what its answer, its log
// line and its journal entry need, not the request: that reaches the request's context, its
// routing copies and their values, which would stay for as long as it waits. Its answer is
// written when the job ends, the wait runs out, its tenant is reset or dropped, or the
// emulator stops.
type parking struct {
	s    *Server
	rec  *recorder // what the journal entry is made from, once the status is known
	conn net.Conn
	// head is the answer's header lines as the handler left them, less those the answer sets:
	// a few hundred bytes where a cloned http.Header costs twice that.
	head []byte
	// header is what the reply adds to the answer's header (a deprecation, a rate limit), set
	// before released is closed.
	header http.Header
	start  time.Time
	// What the answer's body (the outputs' base URL) and its log line need of the request.
	method, path, host, id string
	tls                    *tls.ConnectionState
	// tenant counts the parked generation as a request in progress until its answer, so the
	// tenant is not dropped as idle under a wait.
	tenant  *sim.Tenant
	entered bool // whether the tenant counted it (it does unless it was already dropped)

	released chan struct{} // closed once the request's handlers have all returned
	answered bool          // guarded by Server.parkedMu
	unwatch  func()        // ends the watch for a hang-up; guarded by Server.parkedMu
}

// answerSet names the headers a parked answer sets itself.
var answerSet = map[string]bool{"Location": true, "Content-Type": true, "Content-Length": true, "Connection": true}

// park takes over the request's connection and parks the generation; it reports false, and
// changes nothing, where the connection cannot be taken over (HTTP/2, a test's recorder), and
// the caller then waits the ordinary way.
func (s *Server) park(w http.ResponseWriter, r *http.Request, world *sim.World, view jobs.View) bool {
	rec, ok := w.(*recorder)
	if !ok || r.ProtoMajor != 1 {
		return false
	}
	// Once the emulator is stopping nothing new parks: the caller's ordinary wait answers at
	// once. Counting the answer to come under the same lock as the check keeps endParked's Wait
	// from racing an Add.
	s.parkedMu.Lock()
	if s.stopping {
		s.parkedMu.Unlock()
		return false
	}
	s.parkedWG.Add(1)
	s.parkedMu.Unlock()
	var head bytes.Buffer
	_ = w.Header().WriteSubset(&head, answerSet)
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.parkedWG.Done()
		return false
	}
	// net/http's buffers go back to the garbage collector: nothing parked keeps the writer or
	// the body (both reach them). A request pipelined behind this one is not read; the answer
	// closes the connection.
	_ = brw
	r.Body = http.NoBody
	p := &parking{s: s, rec: rec, conn: conn, head: bytes.Clone(head.Bytes()), start: time.Now(),
		method: r.Method, path: r.URL.Path, host: r.Host, tenant: infoOf(r).tenant, id: requestID(r),
		tls: r.TLS, released: make(chan struct{})}
	// The request holds its tenant, so only a DELETE of it can have dropped it meanwhile;
	// then there is no idle time to hold off.
	p.entered = p.tenant.Enter()
	rec.takeOver(p)
	wt := world.WaitThen(view, p.answer)
	s.parkedMu.Lock()
	stopping := s.stopping
	if !p.answered && !stopping {
		s.parked[p] = wt
		// A client that hangs up is answered at once, so its socket goes (the job goes on).
		p.unwatch = s.hangups.Watch(conn, func() {
			rec.hungUp() // the report learns the client gave up on the wait
			wt.End()
		})
	}
	s.parkedMu.Unlock()
	if stopping {
		// The emulator began stopping meanwhile: answer now, but not on this goroutine, since
		// the answer waits for this handler to return (p.released).
		go wt.End()
	}
	return true
}

// answer sends the parked generation's answer with the job as it stands, logs it, and lets
// the emulator stop once no answer is left.
func (p *parking) answer(v jobs.View) {
	s := p.s
	defer s.parkedWG.Done()
	s.parkedMu.Lock()
	p.answered = true
	delete(s.parked, p)
	unwatch := p.unwatch
	s.parkedMu.Unlock()
	if unwatch != nil {
		unwatch() // before the connection closes, which takes its descriptor out of the watch
	}
	// Only what the answer's body and its log line read of a request.
	r := &http.Request{Method: p.method, URL: &url.URL{Path: p.path}, Host: p.host, TLS: p.tls}
	// The answer is decided: the tenant may idle from here, before the client can read it.
	if p.entered {
		p.tenant.Leave()
	}
	s.answerParked(r, p, v)
}

// answerParked writes a parked generation's answer, as respondJob would have, and closes the
// connection. Its journal entry and its log line are written first, as an ordinary answer's
// are before net/http sends it, so a client that has read the answer finds both.
func (s *Server) answerParked(r *http.Request, p *parking, v jobs.View) {
	<-p.released
	rec := p.rec
	body, err := json.Marshal(rec.info.world.PresentJob(v, baseURL(r), sim.ToClient))
	if err != nil {
		s.log.Error("cannot encode a job", "job", v.ID, "error", err)
		s.logRequest(r, p.tenant.Name(), 0, p.start, p.id)
		_ = p.conn.Close()
		return
	}
	body = evolved(rec.info.world, p.path, append(body, '\n'))
	status := http.StatusOK
	h := http.Header{}
	if !v.Status.Terminal() {
		status = http.StatusAccepted
		h.Set("Location", "/v1/jobs/"+v.ID)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	rec.parkedAnswer(status, body[:len(body)-1], string(v.Status))
	s.logRequest(r, p.tenant.Name(), status, p.start, p.id)

	var out bytes.Buffer
	out.Grow(64 + len(p.head) + 128 + len(body))
	out.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	out.Write(p.head)
	_ = p.header.WriteSubset(&out, answerSet)
	_ = h.Write(&out)
	out.WriteString("\r\n")
	out.Write(body)
	_ = p.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, _ = p.conn.Write(out.Bytes())
	_ = p.conn.Close()
}

// endParked answers every parked generation now, with its job as it stands, and waits until
// every answer has gone out; the emulator stops with no request left unanswered.
func (s *Server) endParked() {
	s.parkedMu.Lock()
	s.stopping = true
	all := make([]*sim.Waiter, 0, len(s.parked))
	for _, wt := range s.parked {
		all = append(all, wt)
	}
	s.parkedMu.Unlock()
	for _, wt := range all {
		wt.End()
	}
	s.parkedWG.Wait()
}

// hijacked stands for a writer whose connection the emulator took over: nothing may be written
// through it any more.
type hijacked struct{}

// Header is a fresh, unused header.
func (hijacked) Header() http.Header { return http.Header{} }

// Write refuses: the connection is taken over.
func (hijacked) Write([]byte) (int, error) { return 0, http.ErrHijacked }

// WriteHeader does nothing.
func (hijacked) WriteHeader(int) {}
