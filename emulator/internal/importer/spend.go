package importer

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// Reference builds the emulator that drift --spend compares the live service with, from the
// catalog file being checked (its name and bytes). It must run on a manual clock, which the run
// advances through the control API instead of waiting. stop releases it.
type Reference func(name string, data []byte) (handler http.Handler, stop func(), err error)

// outputTypes are the kinds of output drift --spend generates one of each, in this order.
var outputTypes = []string{catalog.OutputImage, catalog.OutputVideo, catalog.OutputAudio}

// Bounds of a --spend run.
const (
	firstPoll = time.Second      // the first wait before polling a job; it doubles from there
	maxPoll   = 10 * time.Second // the longest wait between polls the run chooses itself
	// timingSlack widens the catalog's range by as much either way: timestamps may be whole
	// seconds, and a real service is rarely exact.
	timingSlack = time.Second
)

// candidate is an example input of a model that is ready both in the file and live, with its
// live price.
type candidate struct {
	model   *catalog.Model
	example int
	input   *node
	credits int64
}

// cheapest keeps, per output type, the cheapest example quoted (the first of equals).
type cheapest map[string]*candidate

func (ch cheapest) offer(m *catalog.Model, i int, input *node, credits int64) {
	if ch == nil || m.Status != catalog.StatusReady {
		return
	}
	if cur := ch[m.OutputType]; cur == nil || credits < cur.credits {
		ch[m.OutputType] = &candidate{model: m, example: i, input: input, credits: credits}
	}
}

// side is one of the two services a --spend run talks to, and what it answered.
type side struct {
	name   string // "live" or "on the emulator"
	c      *client
	files  *http.Client
	wait   func(context.Context, time.Duration) error // between polls
	shapes map[string]Shape                           // "job", "error": fields of every document seen
	heads  map[string]seenHeaders                     // answer label → headers seen
	status map[string]int                             // the provoked error's status
}

// seenHeaders is what one kind of answer carried: header names, and the media type.
type seenHeaders struct {
	group string // job, file or error
	names map[string]bool
	ctype string
}

func newSide(name string, c *client, wait func(context.Context, time.Duration) error) *side {
	files := &http.Client{Timeout: c.http.Timeout, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return fmt.Errorf("more than %d redirects", maxRedirects)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("redirected to a %s: URL", req.URL.Scheme)
		}
		return nil
	}}
	return &side{name: name, c: c, files: files, wait: wait,
		shapes: map[string]Shape{}, heads: map[string]seenHeaders{}, status: map[string]int{}}
}

// answered records an answer's headers under its label, and its body under group.
func (s *side) answered(group, label string, a *answer) {
	label = fmt.Sprintf("%s (%d)", label, a.status)
	h := s.heads[label]
	if h.names == nil {
		h = seenHeaders{group: group, names: map[string]bool{}}
	}
	for k := range a.header {
		if k = http.CanonicalHeaderKey(k); !ignoredHeader(group, k) {
			h.names[k] = true
		}
	}
	if mt, _, err := mime.ParseMediaType(a.header.Get("Content-Type")); err == nil {
		h.ctype = mt
	}
	s.heads[label] = h
	if a.doc != nil && group != "file" {
		if s.shapes[group] == nil {
			s.shapes[group] = Shape{}
		}
		s.shapes[group].Add(a.doc.value())
	}
}

// ignoredHeader reports headers that say how an answer travelled, not what it is: the ones
// every server, proxy and CDN adds its own way, the emulator's own X-Emulator-*, and on JSON
// answers the framing (a proxy may send any of them chunked).
func ignoredHeader(group, k string) bool {
	switch k {
	case "Date", "Server", "Connection", "Keep-Alive", "Transfer-Encoding", "Vary", "Via", "Alt-Svc",
		"Strict-Transport-Security", "Set-Cookie", "Age", "Expires", "Pragma", "Nel", "Report-To",
		"X-Cache", "X-Served-By", "X-Timer":
		return true
	case "Content-Length":
		return group != "file"
	}
	for _, p := range []string{"Access-Control-", "Cf-", "X-Emulator-", "X-Amz-", "X-Envoy-", "X-Goog-"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// generation runs one generation on a side: quote, generate (and replay the request, which
// the Idempotency-Key makes free), poll to the end, and fetch the first output's headers.
// allow decides, with the quote in hand, whether to go on; it returns the finished job, or
// nil when allow said no.
func (s *side) generation(ctx context.Context, cand *candidate, key string, allow func(credits int64) bool) (*node, error) {
	m := cand.model
	a, err := s.c.send(ctx, http.MethodPost, "/v1/quotes", nil, obj("model", m.ID, "input", cand.input).marshal(), nil)
	if err != nil {
		return nil, err
	}
	credits, err := creditsOf(a.doc)
	if err != nil {
		return nil, err
	}
	if !allow(credits) {
		return nil, nil
	}
	body := obj("model", m.ID, "input", cand.input, "quote_id", a.doc.str("quote_id")).marshal()
	header := http.Header{"Idempotency-Key": {key}}
	a, err = s.c.send(ctx, http.MethodPost, "/v1/generate", nil, body, header)
	if err != nil {
		return nil, err
	}
	s.answered("job", "POST /v1/generate", a)
	job := a.doc
	id := job.str("id")
	if id == "" {
		return nil, errors.New("POST /v1/generate: the answer has no job id")
	}
	replay, err := s.c.send(ctx, http.MethodPost, "/v1/generate", nil, body, header)
	if err != nil {
		return nil, fmt.Errorf("replaying the generation with its Idempotency-Key: %w", err)
	}
	s.answered("job", "POST /v1/generate replayed", replay)
	if replay.doc.str("id") != id {
		return nil, fmt.Errorf("replaying the generation with its Idempotency-Key started another job (%s, not %s): stopping", replay.doc.str("id"), id)
	}
	pause := firstPoll
	for !jobs.Status(job.str("status")).Terminal() {
		// The service's Retry-After when it gives one, but never more often than once a second.
		d := retryAfter(a.header.Get("Retry-After"), time.Now())
		if d > 0 {
			d = min(max(d, firstPoll), maxRetryWait)
		} else {
			d = pause
			pause = min(2*pause, maxPoll)
		}
		if err := s.wait(ctx, d); err != nil {
			return nil, err
		}
		if a, err = s.c.send(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id), nil, nil, nil); err != nil {
			return nil, err
		}
		job = a.doc
		if jobs.Status(job.str("status")).Terminal() {
			s.answered("job", "GET /v1/jobs/{id} finished", a)
		} else {
			s.answered("job", "GET /v1/jobs/{id} unfinished", a)
		}
	}
	if outs := job.get("outputs"); outs != nil && outs.kind == kArray && len(outs.vals) > 0 {
		if err := s.fetchFile(ctx, outs.vals[0].str("url")); err != nil {
			return nil, err
		}
	}
	return job, nil
}

// fetchFile reads the headers of an output file, whole and ranged, without its bytes and
// without the key (files are served without one, and may live on another host).
func (s *side) fetchFile(ctx context.Context, raw string) error {
	u, err := s.c.base.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("an output's url %q is not an http or https URL", raw)
	}
	for _, ranged := range []bool{false, true} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return err
		}
		label := "GET output file"
		if ranged {
			req.Header.Set("Range", "bytes=0-0")
			label += " with Range: bytes=0-0"
		}
		resp, err := s.files.Do(req)
		if err != nil {
			return fmt.Errorf("%s: %w", label, Scrub(err))
		}
		resp.Body.Close()
		s.answered("file", label, &answer{status: resp.StatusCode, header: resp.Header})
	}
	return nil
}

// provoke sends a quote whose input is not an object, which every model refuses (quotes are
// free), and records the error answer.
func (s *side) provoke(ctx context.Context, model string) error {
	a, err := s.c.send(ctx, http.MethodPost, "/v1/quotes", nil, obj("model", model, "input", "not an object").marshal(), nil)
	if err == nil {
		return fmt.Errorf("POST /v1/quotes with an input that is not an object was accepted (%d)", a.status)
	}
	if a = answerOf(err); a == nil {
		return err
	}
	s.answered("error", "POST /v1/quotes with an invalid input", a)
	s.status["error"] = a.status
	return nil
}

// newIdempotencyKey is a fresh random key, so no earlier run's job can be replayed instead.
func newIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "drift-" + hex.EncodeToString(b)
}

// spend runs one cheapest generation per output type on the live service and on the reference
// emulator, within o.Spend credits, and lists where their answers differ in shape, and where
// the live jobs' timing falls outside the catalog's.
func spend(ctx context.Context, live *client, o *Options, name string, data []byte, cat *catalog.Catalog, picks cheapest) ([]Difference, error) {
	if o.Reference == nil {
		return nil, errors.New("--spend: no emulator to compare with")
	}
	handler, stop, err := o.Reference(name, data)
	if err != nil {
		return nil, err
	}
	defer stop()
	ref, err := ServeLoopback(handler)
	if err != nil {
		return nil, err
	}
	defer ref.Close()
	key, err := referenceKey(ctx, ref, cat)
	if err != nil {
		return nil, err
	}
	rc, err := (&Options{From: ref.URL, Key: key}).client()
	if err != nil {
		return nil, err
	}
	refSide := newSide("on the emulator", rc, func(ctx context.Context, d time.Duration) error {
		return control(ctx, ref.URL, http.MethodPost, "/_emulator/clock", fmt.Sprintf(`{"advance":%q}`, d.String()))
	})
	liveSide := newSide("live", live, live.sleep)

	var diffs []Difference
	left := o.Spend
	ran := 0
	for _, typ := range outputTypes {
		cand := picks[typ]
		if cand == nil {
			o.logf("spend: no %s model is ready in the file and live with an example to quote; no %s generated", typ, typ)
			continue
		}
		label := fmt.Sprintf("%s example %d (%s)", cand.model.ID, cand.example, typ)
		refused := false
		job, err := liveSide.generation(ctx, cand, newIdempotencyKey(), func(price int64) bool {
			if price > left {
				o.logf("spend: not generating %s: quoted %s, more than the %s left of --spend %d", label, credits(price), credits(left), o.Spend)
				refused = true
				return false
			}
			left -= price
			o.logf("spend: generating %s for %s; %s left of --spend %d", label, credits(price), credits(left), o.Spend)
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("spend: %s live: %w", label, err)
		}
		if refused {
			continue
		}
		ran++
		if _, err := refSide.generation(ctx, cand, newIdempotencyKey(), func(int64) bool { return true }); err != nil {
			return nil, fmt.Errorf("spend: %s on the emulator: %w", label, err)
		}
		if st := job.str("status"); st != "succeeded" {
			e := job.get("error")
			o.logf("spend: %s ended %s live (%s); its timing and outputs are not compared", label, st, e.str("code"))
			continue
		}
		diffs = append(diffs, timingDiffs(cand, job)...)
	}
	if ran == 0 {
		o.logf("spend: nothing generated, so no job shapes compared")
	}
	var first string
	for _, typ := range outputTypes {
		if picks[typ] != nil {
			first = picks[typ].model.ID
			break
		}
	}
	if first != "" {
		if err := liveSide.provoke(ctx, first); err != nil {
			return nil, fmt.Errorf("spend: live: %w", err)
		}
		if err := refSide.provoke(ctx, first); err != nil {
			return nil, fmt.Errorf("spend: on the emulator: %w", err)
		}
	}
	o.logf("spend: %s spent of --spend %d on %s", credits(o.Spend-left), o.Spend, plural(ran, "generation"))
	return append(diffs, compareSides(liveSide, refSide)...), nil
}

// Loopback is a handler served on a loopback port, so that its answers cross the same wire as
// the live service's: the emulator that drift --spend and parity compare with.
type Loopback struct {
	URL string
	srv *http.Server
}

// ServeLoopback serves h on a port of 127.0.0.1 the system chooses, until Close.
func ServeLoopback(h http.Handler) (*Loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the emulator to compare with: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	return &Loopback{URL: "http://" + ln.Addr().String(), srv: srv}, nil
}

// Close stops the listener and its connections.
func (l *Loopback) Close() { _ = l.srv.Close() }

// referenceKey is a key of the catalog that may generate; its account gets enough credits
// that the reference never refuses what the live service ran.
func referenceKey(ctx context.Context, ref *Loopback, cat *catalog.Catalog) (string, error) {
	for i := range cat.Keys {
		k := &cat.Keys[i]
		if k.Can(catalog.PermGenerate) {
			err := control(ctx, ref.URL, http.MethodPut, "/_emulator/accounts/"+url.PathEscape(k.Account), fmt.Sprintf(`{"credits":%d}`, int64(catalog.MaxAccountCredits)))
			return k.Key, err
		}
	}
	return "", errors.New("--spend: the catalog has no key with the generate permission, so the emulator cannot generate")
}

// control calls the reference emulator's control API.
func control(ctx context.Context, base, method, path, body string) error {
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the emulator to compare with: %s %s: %w", method, path, Scrub(err))
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the emulator to compare with: %s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}

// timingDiffs compares a finished live job's queue and run times with the catalog's timing for
// its input: outside half to twice the catalog's value (and a second's slack) is reported.
// A job without the timestamps is skipped: its shape differs, and that is reported.
func timingDiffs(cand *candidate, job *node) []Difference {
	m := cand.model
	if job.str("created_at") == "" || job.str("started_at") == "" || job.str("finished_at") == "" {
		return nil // a missing field is a difference of shape, reported as such
	}
	created, err1 := time.Parse(time.RFC3339Nano, job.str("created_at"))
	started, err2 := time.Parse(time.RFC3339Nano, job.str("started_at"))
	finished, err3 := time.Parse(time.RFC3339Nano, job.str("finished_at"))
	if err := errors.Join(err1, err2, err3); err != nil {
		return []Difference{{Kind: "timing", Model: m.ID, Detail: "the live job's created_at, started_at or finished_at is not an RFC 3339 time"}}
	}
	run := m.Timing.Run
	if u := m.Timing.RunPerUnit; u != nil {
		v, _ := cand.input.value().(map[string]any)
		x, ok := v[u.Field]
		if !ok {
			x = m.Properties[u.Field].Default
		}
		if n, ok := catalog.NumberOf(x); ok && n > 0 {
			run += time.Duration(n * float64(u.Each))
		}
	}
	var out []Difference
	for _, t := range []struct {
		what         string
		live, inFile time.Duration
	}{
		{"queued", started.Sub(created), m.Timing.Queue},
		{"ran", finished.Sub(started), run},
	} {
		lo, hi := max(t.inFile/2-timingSlack, 0), 2*t.inFile+timingSlack
		if t.live < lo || t.live > hi {
			out = append(out, Difference{Kind: "timing", Model: m.ID, Detail: fmt.Sprintf("%s %v live; the catalog says %v (%v to %v)", t.what, t.live, t.inFile, lo, hi)})
		}
	}
	return out
}

// compareSides lists where the two sides' answers differ in shape: fields and JSON types of
// the job and error documents (null matches any type: a field not set yet), header names per
// kind of answer, media types, and the status of the provoked error.
func compareSides(live, ref *side) []Difference {
	var out []Difference
	add := func(kind, group, format string, args ...any) {
		out = append(out, Difference{Kind: kind, Model: group, Detail: fmt.Sprintf(format, args...)})
	}
	if l, r := live.status["error"], ref.status["error"]; l != r && l != 0 && r != 0 {
		add("status", "error", "POST /v1/quotes with an invalid input: %d live, %d on the emulator", l, r)
	}
	for _, group := range []string{"job", "error"} {
		ls, rs := live.shapes[group], ref.shapes[group]
		if ls == nil || rs == nil {
			continue
		}
		for _, p := range ShapePaths(ls, rs) {
			lt, rt := ls.Types(p, false), rs.Types(p, false)
			switch {
			case rs[p] == nil:
				add("shape", group, "%s live, not on the emulator (%s)", p, ls.Types(p, true))
			case ls[p] == nil:
				add("shape", group, "%s on the emulator, not live (%s)", p, rs.Types(p, true))
			case lt != rt && lt != "" && rt != "":
				add("shape", group, "%s is %s live, %s on the emulator", p, lt, rt)
			}
		}
	}
	// Header names, per kind of answer both sides gave, then gathered by header.
	type finding struct{ group, name, where string }
	labels := map[finding][]string{}
	var order []finding
	note := func(f finding, label string) {
		if labels[f] == nil {
			order = append(order, f)
		}
		labels[f] = append(labels[f], label)
	}
	for _, label := range slices.Sorted(maps.Keys(live.heads)) {
		lh := live.heads[label]
		rh, ok := ref.heads[label]
		if !ok {
			continue
		}
		for _, n := range slices.Sorted(maps.Keys(lh.names)) {
			if !rh.names[n] {
				note(finding{lh.group, n, "live, not by the emulator"}, label)
			}
		}
		for _, n := range slices.Sorted(maps.Keys(rh.names)) {
			if !lh.names[n] {
				note(finding{lh.group, n, "by the emulator, not live"}, label)
			}
		}
		if lh.ctype != rh.ctype {
			add("header", lh.group, "Content-Type %s live, %s on the emulator (%s)", orNone(lh.ctype), orNone(rh.ctype), label)
		}
	}
	for _, f := range order {
		add("header", f.group, "%s sent %s (%s)", f.name, f.where, strings.Join(labels[f], "; "))
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
