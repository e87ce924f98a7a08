package parity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
)

// Defaults and bounds of a run.
const (
	// DefaultRate is how many requests a second go to the live service unless --rate says
	// otherwise: slow enough that a run never looks like load (about half a minute in all).
	DefaultRate = 2.0
	// DefaultTimeout bounds a whole run.
	DefaultTimeout = 5 * time.Minute
	// requestTimeout bounds one request, its answer included.
	requestTimeout = 30 * time.Second
	// maxRetryWait is the longest Retry-After a run waits out when the live service answers
	// 429 or 503 to a request meant for another case; longer, and the case is reported as
	// answered by an outage, at once.
	maxRetryWait = 30 * time.Second
	// retryBudget is the most a whole run waits on Retry-After, all waits together: a service
	// in outage asks every request to wait, and honouring each would keep a run for many
	// minutes. A wait that does not fit in what is left is not started: the case is reported
	// as answered by the outage, so a run against one ends within a minute at the default rate.
	retryBudget = 30 * time.Second
	// maxTries bounds the tries of one live request.
	maxTries = 3
	// unreadyProbes bounds the live detail requests spent looking for a model that is not
	// ready there either.
	unreadyProbes = 3
)

// Options configure a run.
type Options struct {
	// From is the live service's base URL; Key its API key, sent to it only.
	From, Key string
	// ReadOnlyKey and GenerateOnlyKey, when set, are live keys that lack generate and
	// models:read: with them the permission_denied cases are provoked.
	ReadOnlyKey, GenerateOnlyKey string
	// Catalog is the catalog the emulator serves, named CatalogName in results.
	Catalog     *catalog.Catalog
	CatalogName string
	// Emulator is the emulator the live service is compared with, serving Catalog.
	Emulator http.Handler
	// Rate is the live requests a second (DefaultRate when 0).
	Rate float64
	// Known accepts differences; nil accepts none.
	Known *Known
	// Record, when set, is the folder each live answer is written to.
	Record string
	// Progress receives a line per case as it is compared; nil discards them.
	Progress io.Writer
	// Fresh makes ids no service issued (Fresh when nil).
	Fresh func() string
	// sleep waits between live requests (a timer when nil); tests replace it.
	sleep func(context.Context, time.Duration) error
	// now is the clock the pacing reads (time.Now when nil).
	now func() time.Time
}

// service is one side of the comparison: where requests go, and with which key.
type service struct {
	base   string
	keyOf  func(*Request) string
	client *http.Client
	pace   *pacer // nil: no pacing
	// budget is what is left of retryBudget for the Retry-After waits of the live service.
	budget time.Duration
}

// Run provokes every provokable error case on the live service and on the emulator, compares
// the answers, and returns the result. An error means the run could not finish (the live
// service unreachable, the time bound passed); differences are in the result.
func Run(ctx context.Context, o Options) (*Result, error) {
	base, err := checkBase(o.From)
	if err != nil {
		return nil, err
	}
	if o.Fresh == nil {
		o.Fresh = Fresh
	}
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.sleep == nil {
		o.sleep = importer.SleepContext
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	ref, err := importer.ServeLoopback(o.Emulator)
	if err != nil {
		return nil, err
	}
	defer ref.Close()
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	lacking := map[catalog.Permission]string{catalog.PermGenerate: o.ReadOnlyKey, catalog.PermModelsRead: o.GenerateOnlyKey}
	live := &service{base: base,
		keyOf: func(r *Request) string {
			if r.Lacking {
				return lacking[r.Permission]
			}
			return o.Key
		},
		client: &http.Client{Timeout: requestTimeout, CheckRedirect: noRedirect},
		pace:   &pacer{every: time.Duration(float64(time.Second) / o.Rate), sleep: o.sleep, now: o.now},
		budget: retryBudget}
	emu := &service{base: ref.URL, keyOf: func(r *Request) string { return r.EmulatorKey(o.Catalog) }, client: &http.Client{Timeout: requestTimeout, CheckRedirect: noRedirect}}

	models, err := chooseModels(ctx, live, o.Catalog)
	if err != nil {
		return nil, err
	}
	res := &Result{From: redactURL(base), Catalog: o.CatalogName, StartedAt: o.now().UTC().Format(time.RFC3339)}
	keys := []string{o.Key, o.ReadOnlyKey, o.GenerateOnlyKey}
	for _, p := range Plan(models, Lacking{ReadOnly: o.ReadOnlyKey != "", GenerateOnly: o.GenerateOnlyKey != ""}, o.Fresh) {
		cr := CaseResult{Case: p.Case}
		if p.Request == nil {
			cr.Result, cr.Reason = NotProvokable, p.Reason
			res.add(cr)
			continue
		}
		cr.Request = p.Request.Target()
		if len(cr.Request) > 120 {
			cr.Request = cr.Request[:120] + "…"
		}
		if p.Request.Auth && emu.keyOf(p.Request) == "" {
			what := "with"
			if p.Request.Lacking {
				what = "without"
			}
			cr.Result, cr.Reason = NotProvokable, fmt.Sprintf("the catalog has no key %s the %s permission for the emulator", what, p.Request.Permission)
			res.add(cr)
			continue
		}
		la, outage, err := live.answer(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("%s live: %s", p.Case, importer.Redact(err.Error(), keys...))
		}
		if outage != "" {
			// The live service did not answer the case: comparing its outage with the
			// emulator's answer would report differences of neither, and recording it would
			// keep the outage as the case's answer.
			cr.Result, cr.Reason = Unavailable, outage
			fmt.Fprintf(o.Progress, "parity: %s: %s\n", p.Case, cr.Result)
			res.add(cr)
			continue
		}
		la.Body = importer.Redact(la.Body, keys...)
		ea, _, err := emu.answer(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("%s on the emulator: %w", p.Case, err)
		}
		if got := codeOf(ea); ea.Status != p.Status || got != p.Code {
			// The catalog in use changes what a request provokes (a model whose example it
			// refuses, say): the comparison stands, but the case was not what was compared.
			cr.Note = fmt.Sprintf("the emulator answered %d %s, not this case", ea.Status, got)
		}
		cr.Differences = Compare(la, ea)
		cr.Result = Same
		if len(cr.Differences) > 0 {
			cr.Result = Differs
		}
		o.Known.mark(p.Case, cr.Differences)
		if o.Record != "" {
			if err := record(o.Record, Recording{Case: p.Case, RecordedAt: res.StartedAt, From: res.From, Catalog: o.CatalogName, Request: *p.Request, Live: recorded(la)}); err != nil {
				return nil, err
			}
		}
		fmt.Fprintf(o.Progress, "parity: %s: %s\n", p.Case, cr.Result)
		res.add(cr)
	}
	res.StaleKnown = o.Known.unused()
	return res, nil
}

// answer sends a case's request. On the live service, a 429 or 503 the case does not expect
// is waited out and the request tried again, up to maxTries, while its Retry-After is at most
// maxRetryWait and fits in what is left of the run's budget; otherwise outage says why the
// answer is the service's unavailability rather than its answer to the case.
func (s *service) answer(ctx context.Context, p Planned) (Answer, string, error) {
	waited := time.Duration(0)
	for try := 1; ; try++ {
		a, err := s.send(ctx, p.Request)
		if err != nil || s.pace == nil || a.Status == p.Status || !unavailable(a.Status) {
			return a, "", err
		}
		d, told := importer.RetryAfter(a.Header["Retry-After"], s.pace.now())
		var why string
		switch {
		case !told:
			why = "without a Retry-After"
		case d > maxRetryWait:
			why = fmt.Sprintf("asking to wait %v, longer than a run waits at once (%v)", d.Round(time.Second), maxRetryWait)
		case d > s.budget:
			why = fmt.Sprintf("asking to wait %v, past the %v a run waits in all", d.Round(time.Second), retryBudget)
		case try >= maxTries:
			why = fmt.Sprintf("%d times", try)
		}
		if why != "" {
			answered := strconv.Itoa(a.Status)
			if code := codeOf(a); code != "" {
				answered += " " + code
			}
			if waited > 0 {
				why += fmt.Sprintf(" (after %v of waiting for this case)", waited.Round(time.Second))
			}
			return a, fmt.Sprintf("the live service answered %s %s: an outage, not compared", answered, why), nil
		}
		s.budget -= d
		waited += d
		if err := s.pace.sleep(ctx, d); err != nil {
			return a, "", err
		}
	}
}

// unavailable reports whether a status says the service is not answering now (rate limited or
// unavailable) rather than answering the request.
func unavailable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// send sends one request and reads its answer, at most MaxBody of its body.
func (s *service) send(ctx context.Context, r *Request) (Answer, error) {
	if s.pace != nil {
		if err := s.pace.wait(ctx); err != nil {
			return Answer{}, err
		}
	}
	req, err := r.NewHTTP(ctx, s.base, s.keyOf(r))
	if err != nil {
		return Answer{}, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return Answer{}, fmt.Errorf("%s: %w", r.Target(), importer.Scrub(err))
	}
	defer resp.Body.Close()
	a, err := ReadAnswer(resp)
	if err != nil {
		return Answer{}, fmt.Errorf("%s: reading the answer: %w", r.Target(), importer.Scrub(err))
	}
	return a, nil
}

// NewHTTP is the request, to send to the service at base with key.
func (r *Request) NewHTTP(ctx context.Context, base, key string) (*http.Request, error) {
	var body io.Reader
	if b := r.body(); b != nil {
		body = bytes.NewReader(b)
	}
	target := base + r.Path
	if r.Query != "" {
		target += "?" + r.Query
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, target, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Method, importer.Scrub(err))
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "mediagen-emulator-parity")
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	if r.Auth {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req, nil
}

// ReadAnswer reads what parity compares of an answer: its status, the compared headers, and at
// most MaxBody of its body.
func ReadAnswer(resp *http.Response) (Answer, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Status: resp.StatusCode, Header: map[string]string{}}
	for _, h := range Headers {
		if vs := resp.Header.Values(h); len(vs) > 0 {
			a.Header[h] = strings.Join(vs, ", ")
		}
	}
	if len(data) > MaxBody {
		a.Cut, data = true, data[:MaxBody]
	}
	a.Body = string(data)
	return a, nil
}

// codeOf is the problem code of an answer, or "".
func codeOf(a Answer) string {
	doc, _ := document(a)
	code, _ := doc["code"].(string)
	return code
}

// pacer spaces requests at least every apart.
type pacer struct {
	every time.Duration
	next  time.Time
	sleep func(context.Context, time.Duration) error
	now   func() time.Time
}

// wait returns when the next request may go.
func (p *pacer) wait(ctx context.Context) error {
	now := p.now()
	if d := p.next.Sub(now); d > 0 {
		if err := p.sleep(ctx, d); err != nil {
			return err
		}
		now = p.next
	}
	p.next = now.Add(p.every)
	return nil
}

// chooseModels picks the models the requests name: the catalog's first ready model with an
// example that the live listing shows too, and its first model that is not ready, with an
// example, that the live service has and does not call ready either. The live listing costs
// one request, and each candidate that is not ready one more (at most unreadyProbes).
func chooseModels(ctx context.Context, live *service, cat *catalog.Catalog) (Models, error) {
	var m Models
	listed, err := liveListing(ctx, live)
	if err != nil {
		return m, err
	}
	// A model whose input requires a member is preferred: an empty input is then invalid.
	for _, c := range cat.Models {
		if c.Status != catalog.StatusReady || len(c.Examples) == 0 || (listed != nil && !listed[c.ID]) {
			continue
		}
		if m.Ready == "" {
			m.Ready, m.ReadyExample = c.ID, c.Examples[0]
		}
		var s struct {
			Required []string `json:"required"`
		}
		if json.Unmarshal(c.SchemaJSON, &s) == nil && len(s.Required) > 0 {
			m.Ready, m.ReadyExample, m.Invalid = c.ID, c.Examples[0], true
			break
		}
	}
	if m.Ready == "" {
		m.NoReady = "no model of the catalog with an example input is ready live too"
	}
	m.NoUnready = "no model of the catalog with an example input is unavailable both there and live"
	probes := 0
	for _, c := range cat.Models {
		if c.Status == catalog.StatusReady || len(c.Examples) == 0 {
			continue
		}
		if probes++; probes > unreadyProbes {
			break
		}
		a, err := live.send(ctx, &Request{Method: http.MethodGet, Path: importer.ModelPath(c.ID), Auth: true})
		if err != nil {
			return m, fmt.Errorf("GET %s live: %w", importer.ModelPath(c.ID), err)
		}
		if unavailable(a.Status) {
			// An outage answers the probes too: the case it leaves unprovoked says so.
			m.NoUnready = fmt.Sprintf("the live service answered %d when asked for a model that is not ready (%s), an outage", a.Status, c.ID)
			break
		}
		doc, _ := document(a)
		if st, _ := doc["status"].(string); a.Status == http.StatusOK && st != "" && st != catalog.StatusReady {
			m.Unready, m.UnreadyExample, m.NoUnready = c.ID, c.Examples[0], ""
			break
		}
	}
	return m, nil
}

// liveListing reads the ids of the live service's first page of ready models (up to 500), or
// nil when the listing is refused: the catalog's models are then taken as they are.
func liveListing(ctx context.Context, live *service) (map[string]bool, error) {
	a, err := live.send(ctx, &Request{Method: http.MethodGet, Path: "/v1/models", Query: "limit=500", Auth: true})
	if err != nil {
		return nil, fmt.Errorf("GET /v1/models live: %w", err)
	}
	var doc struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if a.Status != http.StatusOK || a.Cut || json.Unmarshal([]byte(a.Body), &doc) != nil {
		return nil, nil
	}
	ids := map[string]bool{}
	for _, d := range doc.Data {
		ids[d.ID] = true
	}
	return ids, nil
}

// checkBase reads the live service's base URL: http or https, a host, no query, no user.
func checkBase(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("--from %q: want the service's base URL, such as https://api.example.com", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

func redactURL(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return u.Redacted()
}
