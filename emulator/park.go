package emulator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// parking is a wait=true generation whose connection the emulator took over, so that it waits
// without a goroutine, a stack or net/http's buffers: it costs a few kilobytes however long it
// waits. Its answer is written when the job ends, the wait runs out, its tenant is reset or
// dropped, or the emulator stops.
type parking struct {
	conn     net.Conn
	header   http.Header
	start    time.Time
	released chan struct{} // closed once the request's handlers have all returned
	answered bool          // guarded by Server.parkedMu
}

// park takes over the request's connection and parks the generation; it reports false, and
// changes nothing, where the connection cannot be taken over (HTTP/2, a test's recorder), and
// the caller then waits the ordinary way.
func (s *Server) park(w http.ResponseWriter, r *http.Request, world *sim.World, view jobs.View) bool {
	rec, ok := w.(*recorder)
	if !ok || r.ProtoMajor != 1 {
		return false
	}
	header := w.Header().Clone()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	// net/http's buffers go back to the garbage collector: nothing parked keeps the writer or
	// the body (both reach them). A request pipelined behind this one is not read; the answer
	// closes the connection.
	_ = brw
	rec.ResponseWriter = hijacked{}
	// The journal's copy of the body stays for the answer's entry, but not the body under it,
	// which has been read: that one reaches the connection's reader and, through a body guard's
	// response controller, its writer and the whole response, some 9 KB a waiter.
	if t, ok := r.Body.(*bodyTee); ok {
		t.ReadCloser = http.NoBody
	}
	r.Body = http.NoBody
	p := &parking{conn: conn, header: header, start: time.Now(), released: make(chan struct{})}
	rec.parked = p
	s.parkedWG.Add(1)
	tenant := infoOf(r).tenant.Name()
	id := requestID(r)
	wt := world.WaitThen(view, func(v jobs.View) {
		defer s.parkedWG.Done()
		s.parkedMu.Lock()
		p.answered = true
		delete(s.parked, p)
		s.parkedMu.Unlock()
		status := s.answerParked(rec, r, p, v)
		s.logRequest(r, tenant, status, p.start, id)
	})
	s.parkedMu.Lock()
	stopping := s.stopping
	if !p.answered && !stopping {
		s.parked[p] = wt
	}
	s.parkedMu.Unlock()
	if stopping {
		wt.End() // the emulator began stopping meanwhile: answer now
	}
	return true
}

// answerParked writes a parked generation's answer, as respondJob would have, and closes the
// connection. It returns the status sent.
func (s *Server) answerParked(rec *recorder, r *http.Request, p *parking, v jobs.View) int {
	<-p.released
	body, err := json.Marshal(s.jobBody(r, v))
	if err != nil {
		s.log.Error("cannot encode a job", "job", v.ID, "error", err)
		_ = p.conn.Close()
		return 0
	}
	body = append(body, '\n')
	status := http.StatusOK
	h := p.header
	if !v.Status.Terminal() {
		status = http.StatusAccepted
		h.Set("Location", "/v1/jobs/"+v.ID)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	rec.status, rec.body = status, body[:len(body)-1]
	rec.parked = nil
	rec.sending() // the journal entry, before the client can read the answer

	var out bytes.Buffer
	out.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	_ = h.Write(&out)
	out.WriteString("\r\n")
	out.Write(body)
	_ = p.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	bw := bufio.NewWriterSize(p.conn, out.Len())
	_, _ = bw.Write(out.Bytes())
	_ = bw.Flush()
	_ = p.conn.Close()
	return status
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
