package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ui"
)

// What the dashboard needs beyond the rest of the control API: an event stream of the tenant's
// changes, every account's jobs in one list, a job's plan, and the page itself.

// streamLimits pace and bound the event streams of one server.
type streamLimits struct {
	// minGap is the least time between two change events: changes in between are coalesced.
	minGap time.Duration
	// heartbeat is how often a quiet stream writes a comment, so proxies keep it and a client
	// that went away is noticed.
	heartbeat time.Duration
	// writeTimeout bounds each write: a client that stopped reading (or vanished) and let the
	// connection's buffers fill is dropped rather than holding its socket for ever.
	writeTimeout time.Duration
	// max is the most streams open at once in the process; more answer 429 too_many_streams.
	max int64
}

// defaultStreams are the limits the server's event streams run under.
var defaultStreams = streamLimits{minGap: 100 * time.Millisecond, heartbeat: 15 * time.Second, writeTimeout: 10 * time.Second, max: 256}

// events streams the tenant's changes as server-sent events: "hello" on connect, "change"
// whenever its world changed (coalesced), "reset" when the tenant was reset (the stream goes on
// with the new world), and "gone" when the tenant was dropped (the stream then ends). Each
// carries {"version", "now", "mode", "tenant", "changed", "next_due"}: changed lists the parts
// of the state that changed since the previous event, so readers fetch only those. It ends when
// the client leaves, stops reading, or the server shuts down.
func (s *Server) events(lim streamLimits) replyFunc {
	var open atomic.Int64 // streams open in this server, which a process has one of
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		if open.Add(1) > lim.max {
			open.Add(-1)
			return reply{}, &problem.Error{Code: problem.TooManyStreams, RetryAfter: 5,
				Detail: fmt.Sprintf("%d event streams are open, the most this emulator serves; close some dashboards", lim.max)}
		}
		tenant, world := infoOf(r).tenant, worldOf(r)
		return reply{header: eventHeader, stream: func(w http.ResponseWriter) {
			defer open.Add(-1)
			s.stream(w, r, lim, tenant, world)
		}}, nil
	}
}

// eventHeader is the header of an event stream.
var eventHeader = http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}, "X-Accel-Buffering": {"no"}}

// stream writes the events of a tenant's world, as events describes them.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, lim streamLimits, tenant *sim.Tenant, world *sim.World) {
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)

	write := func(b []byte) error {
		// Not every connection supports deadlines (a recorder in tests); the rest are bounded.
		_ = rc.SetWriteDeadline(time.Now().Add(lim.writeTimeout))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	send := func(event string, changed sim.Part) error {
		b, _ := json.Marshal(api.StreamEvent{Version: world.Version(), Tenant: tenant.Name(),
			Now: sim.Timestamp(world.Now()), Mode: world.ClockMode().String(), Changed: changed.Names(),
			NextDue: world.PresentClock().NextDue})
		var buf bytes.Buffer
		buf.WriteString("event: " + event + "\ndata: ")
		buf.Write(b)
		buf.WriteString("\n\n")
		return write(buf.Bytes())
	}
	seen, changed := world.Changes()
	if send("hello", sim.PartAll) != nil {
		return
	}
	beat := time.NewTicker(lim.heartbeat)
	defer beat.Stop()
	var lastSent time.Time
	for {
		select {
		case <-changed:
		case <-beat.C:
			if write([]byte(": keep-alive\n\n")) != nil {
				return
			}
			continue
		case <-world.Gone():
			cur, ok := s.tenants.Lookup(tenant.Name())
			if !ok || cur != tenant || cur.World() == world {
				if !s.isClosing() {
					_ = send("gone", 0)
				}
				return
			}
			world = cur.World()
			seen, changed = world.Changes()
			if send("reset", sim.PartAll) != nil {
				return
			}
			lastSent = time.Now()
			continue
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
		// Coalesce: a burst of changes becomes one event per minGap.
		if wait := lim.minGap - time.Since(lastSent); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			case <-s.closing:
				t.Stop()
				return
			}
		}
		var now sim.Marks
		now, changed = world.Changes()
		parts := now.Since(seen)
		if parts == 0 {
			continue
		}
		seen = now
		if send("change", parts) != nil {
			return
		}
		lastSent = time.Now()
	}
}

// isClosing reports whether the server is shutting down.
func (s *Server) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// listAllJobs lists the jobs of every account in the tenant, newest first, in the /v1 list
// envelope; status and model filter as on /v1/jobs.
func (s *Server) listAllJobs() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		p, err := parsePage(r)
		if err != nil {
			return reply{}, err
		}
		f, err := jobFilter(r, true)
		if err != nil {
			return reply{}, err
		}
		world, base := worldOf(r), baseURL(r)
		views, total := world.ListAllJobs(f, p.offset, p.limit)
		items, err := encodeEach(views, func(v jobs.View) any { return world.PresentControlJob(v, base) })
		if err != nil {
			return reply{}, err
		}
		return listReply(items, total, p), nil
	}
}

// touching marks the world's scenario changed once a control call that changes it has
// answered, for the state (fault rules) that has no change hook of its own.
func (s *Server) touching(next replyFunc) replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		defer worldOf(r).Changed(sim.PartScenario)
		return next(w, r)
	}
}

// dashboard serves the dashboard's static files. They hold no state, so they are served even
// when the control API is off or needs a token: the page then says how to turn it on, or asks
// for the token, instead of failing blankly.
func (s *Server) dashboard() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		name := strings.TrimPrefix(r.URL.Path, "/_emulator/ui/")
		if name == "" {
			name = "index.html"
		}
		f, ok := ui.File(name)
		if !ok {
			return reply{}, problem.New(problem.NotFound, "no endpoint at %s %s", r.Method, r.URL.Path)
		}
		data, etag := f.Data, f.ETag
		if name == "index.html" {
			// The page states up front whether the control API is open, needs the token, or is
			// off, so it can say what to do before it makes a single request.
			state := s.controlState()
			data = bytes.Replace(data, []byte(`data-control="on"`), []byte(`data-control="`+state+`"`), 1)
			etag = strings.TrimSuffix(etag, `"`) + "-" + state + `"`
		}
		return reply{header: http.Header{"Content-Type": {f.ContentType}, "Cache-Control": {"no-cache"}, "Etag": {etag},
			"X-Content-Type-Options": {"nosniff"}, "Referrer-Policy": {"no-referrer"}, "Content-Security-Policy": {ui.Policy}},
			stream: func(w http.ResponseWriter) { s.serveContent(w, r, time.Time{}, data) }}, nil
	}
}

// controlState is how the control API stands: "on", "token" (it needs the admin token) or
// "off" (disabled beyond loopback without a token).
func (s *Server) controlState() string {
	switch {
	case s.cfg.ControlDisabled:
		return "off"
	case s.cfg.AdminToken != "":
		return "token"
	}
	return "on"
}

// dashboardRedirect sends /_emulator/ui to the page's address with its slash, so the page's
// relative links resolve.
func (s *Server) dashboardRedirect() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		return reply{stream: func(w http.ResponseWriter) { http.Redirect(w, r, "/_emulator/ui/", http.StatusMovedPermanently) }}, nil
	}
}
