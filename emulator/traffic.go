package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/download"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// isAPI reports whether a path is part of the emulated service (journaled, rate limited and
// open to faults), as opposed to the control API.
func isAPI(path string) bool { return strings.HasPrefix(path, "/v1/") || path == "/v1" }

// traffic wraps the router: it injects the faults in force, and records /v1 requests in the
// journal once they are answered.
func (s *Server) traffic(router *mux.Router, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		onAPI := isAPI(r.URL.Path)
		if !onAPI && !strings.HasPrefix(r.URL.Path, "/files/") {
			next.ServeHTTP(w, r)
			return
		}
		world := worldOf(r)
		rec := infoOf(r).rec // traffic runs only inside the frame (see routes)
		if onAPI {
			rec.keepBody = true
			rec.peeked = s.peekModel(rec, r, world)
			// The entry is recorded as the answer starts (see recorder.sending); an answer that
			// never starts (a reset) is recorded last.
			rec.journaled = true
			rec.method, rec.path, rec.rawQuery = r.Method, r.URL.Path, r.URL.RawQuery
			rec.idemKey = r.Header.Get("Idempotency-Key")
			rec.header = r.Header
			defer rec.sending()
		} else {
			defer s.noteDownload(rec, r)
		}
		if f, id, ok := world.PickFault(r.Method, r.URL.Path, rec.peeked); ok {
			rec.fault, rec.faultKind = id, string(f.Action)
			if k, known := s.catalog.Key(infoOf(r).token); known && onAPI {
				// Answered before the key is checked: the report still holds the wait, or the
				// attempt, against the account whose key was sent.
				rec.account = k.Account
			}
			world.Coverage().Fault(f.Action)
			if onAPI && (f.Action == api.FaultError || f.Action == api.FaultGateway) {
				rec.route = routeName(router, r, nil) // the request is answered before routing
			}
			if onAPI && rec.sent == nil && r.Body != nil {
				// No handler reads the body of a request a fault answers: read it for the journal,
				// where the report compares a retry with the attempt the fault answered. A delayed
				// request gets it back for its handler; read first, a hang-up during the delay ends
				// the request's context, which an unread body would hide.
				rec.sent, _ = io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1))
				if f.Action == api.FaultDelay {
					r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(rec.sent), r.Body))
				} else if r.Method == http.MethodPost && r.URL.Path == "/v1/generate" {
					aboutSent(r, rec.sent)
				}
			}
			if s.injectFault(rec, r, f) {
				return
			}
			if f.Action == api.FaultDownload {
				s.delayAnswer(r, world)
				shaped := download.New(rec, r, *f.Download, s.sleep)
				next.ServeHTTP(shaped, r)
				shaped.Finish()
				return
			}
		}
		s.delayAnswer(r, world)
		next.ServeHTTP(rec, r)
	})
}

// aboutSent notes the model, quote and input digest of a generation a fault answers, which
// no handler reads: the report then knows a retry of it for the same generation.
func aboutSent(r *http.Request, sent []byte) {
	var g struct {
		Model   string         `json:"model"`
		QuoteID string         `json:"quote_id"`
		Input   map[string]any `json:"input"`
	}
	d := json.NewDecoder(bytes.NewReader(sent))
	d.UseNumber()
	if d.Decode(&g) != nil || g.Input == nil {
		return
	}
	about(r, facts{model: g.Model, quoteID: g.QuoteID, inputDigest: evidence.Digest(jsonvalue.Canonical(g.Input))})
}

// noteDownload records a download of an output file in the tenant's log, once it is over: what
// it was answered, which bytes of the file the answer held and how many reached the client.
// HEAD fetches nothing; an answer that names no file of the tenant (404) or refuses the request
// itself (a bad range) is not the client's use of a job.
func (s *Server) noteDownload(rec *recorder, r *http.Request) {
	world := rec.info.world
	switch {
	case rec.status == http.StatusPartialContent:
		world.Coverage().Hit(evidence.RangedDownload)
	case rec.code == string(problem.OutputExpired):
		world.Coverage().Hit(evidence.ExpiredDownload)
	}
	job := infoOf(r).vars["job"]
	// A refused link is the client's use of a job too: one it stored, or sent its key with.
	refused := (rec.status == http.StatusForbidden || rec.status == http.StatusBadRequest) && rec.code == ""
	if r.Method != http.MethodGet || job == "" || rec.status == 0 || (rec.status >= 400 && rec.status != http.StatusGone && !refused) {
		return
	}
	n := evidence.Note{Kind: evidence.Download, Time: rec.received, Job: job, File: r.URL.Path, Status: rec.status,
		Ranged: r.Header.Get("Range") != "", Sent: int64(rec.bytes), Authorized: r.Header.Get("Authorization") != "",
		LinkExpires: rec.link.Expires, LinkExpired: rec.link.Expired}
	h := rec.Header()
	switch rec.status {
	case http.StatusOK:
		n.Size, _ = strconv.ParseInt(h.Get("Content-Length"), 10, 64)
		n.Size = max(n.Size, 1) // a length not sent: the file counts as whole when any byte went
	case http.StatusPartialContent:
		// bytes FIRST-LAST/SIZE: a multipart answer has no Content-Range and counts as part.
		var last int64
		if _, err := fmt.Sscanf(h.Get("Content-Range"), "bytes %d-%d/%d", &n.Start, &last, &n.Size); err != nil {
			n.Start, n.Size = 0, 1<<62
		}
		n.Sent = min(n.Sent, last-n.Start+1)
	}
	if rec.writeErr || (rec.ctx != nil && rec.ctx.Err() != nil) {
		n.Sent = min(n.Sent, max(n.Size-1, 0)) // the client did not get the end
	}
	world.Journal().AddNote(n, rec.arrival)
}

// delayAnswer waits the delay the scenario's latency rules draw for the request, if any.
func (s *Server) delayAnswer(r *http.Request, world *sim.World) {
	if d := world.AnswerDelay(r.Method, r.URL.Path, infoOf(r).rec.peeked); d > 0 {
		s.sleep(r.Context(), d)
	}
}

// sleep waits d in real time, or less when the request ends or the server closes; it reports
// whether the whole wait happened.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.closing:
	}
	return false
}

// peekModel finds the model a request is about, when a rule in force matches on models: from
// the path for model details, from the body's "model" field for quotes and generations. The
// body is put back for the handler, and kept for the journal in case no handler reads it.
func (s *Server) peekModel(rec *recorder, r *http.Request, world *sim.World) *catalog.Model {
	if !world.NeedsModel() {
		return nil
	}
	if id, ok := strings.CutPrefix(r.URL.Path, "/v1/models/"); ok {
		m, _ := s.catalog.Model(id)
		return m
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	rec.sent = body
	if err != nil {
		return nil
	}
	var probe struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &probe) != nil {
		return nil
	}
	m, _ := s.catalog.Model(probe.Model)
	return m
}

// injectFault carries out a fault; it reports whether the request has been answered.
func (s *Server) injectFault(w http.ResponseWriter, r *http.Request, f api.FaultRule) bool {
	if f.Delay > 0 {
		s.sleep(r.Context(), time.Duration(f.Delay))
	}
	switch f.Action {
	case api.FaultError:
		code := problem.Code(f.Code)
		if code == "" {
			code = defaultFaultCode(f.Status)
		}
		s.writeError(w, r, &problem.Error{Code: code, Status: f.Status, RetryAfter: f.RetryAfter,
			RetryAfterDate: f.RetryAfterFormat == api.RetryAfterDate,
			Detail:         "injected fault: this request was answered with " + strconv.Itoa(f.Status) + " on purpose"})
		return true
	case api.FaultGateway:
		// What a proxy in front of the service sends when the service does not answer: its own
		// HTML page, none of the service's headers, no problem body.
		body := gatewayPage(f.Status)
		h := w.Header()
		h.Del("X-Request-Id")
		h.Set("Content-Type", "text/html")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("Server", "nginx")
		if f.RetryAfter > 0 {
			now := time.Now()
			if f.RetryAfterFormat == api.RetryAfterDate {
				now = worldOf(r).Now()
			}
			setRetryAfter(h, f.RetryAfter, f.RetryAfterFormat == api.RetryAfterDate, now)
		}
		w.WriteHeader(f.Status)
		_, _ = w.Write(body)
		return true
	case api.FaultReset:
		resetConnection(w)
		return true
	case api.FaultMalformed:
		h := w.Header()
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"data":[{"id":"` + "\x00" + `,`))
		return true
	case api.FaultTruncated:
		body := []byte(`{"data":[{"id":"truncated","name":"this body stops short of what Content-Length promised"`)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(body)*4))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		rc := http.NewResponseController(w)
		if rc.Flush() == nil {
			// Close without a reset: the client reads the short body, then an early EOF.
			if conn, _, err := rc.Hijack(); err == nil {
				_ = conn.Close()
			}
		}
		return true
	case api.FaultDelay, api.FaultDownload:
		// Answered normally: after the delay above, or with the body shaped by the caller.
	}
	return false
}

// gatewayPage is the page a proxy answers status with, as nginx writes it.
func gatewayPage(status int) []byte {
	title := strconv.Itoa(status) + " " + http.StatusText(status)
	return []byte("<html>\r\n<head><title>" + title + "</title></head>\r\n<body>\r\n<center><h1>" + title +
		"</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
}

// defaultFaultCode names the problem code of an injected status.
func defaultFaultCode(status int) problem.Code {
	switch status {
	case http.StatusTooManyRequests:
		return problem.RateLimited
	case http.StatusServiceUnavailable:
		return problem.ServiceUnavailable
	case http.StatusInternalServerError:
		return problem.Internal
	}
	return problem.FaultInjected
}

// resetConnection drops the client's connection with a TCP reset, the way a crashing proxy
// does. Without access to the connection it aborts the response instead.
func resetConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}
