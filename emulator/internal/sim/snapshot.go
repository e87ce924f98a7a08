package sim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// maxSnapshotProblems bounds the problems one refused snapshot reports.
const maxSnapshotProblems = 100

// CatalogDigest names a catalog by its models and accounts, so a snapshot says which catalog
// it was taken under.
func CatalogDigest(c *catalog.Catalog) string {
	h := sha256.New()
	for _, m := range c.Models {
		h.Write([]byte("model\x00" + m.ID + "\x00" + m.Status + "\x00"))
	}
	for _, a := range c.Accounts {
		h.Write([]byte("account\x00" + a.ID + "\x00" + strconv.FormatInt(a.Credits, 10) + "\x00"))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Snapshot returns the world as one document, taken while nothing in it moves: no request
// changes it and no job moves on until every store has been read. The journal is included
// when asked for.
func (w *World) Snapshot(withJournal bool) api.Snapshot {
	w.gate.Lock()
	defer w.gate.Unlock()
	release := w.clock.Hold()
	defer release()
	mode := w.clock.Mode().String()
	st := w.ids.State()
	doc := api.Snapshot{
		Format:  api.SnapshotFormat,
		Catalog: CatalogDigest(w.cfg.Catalog),
		Clock:   api.SnapshotClock{Mode: mode, Now: Timestamp(w.clock.Now())},
		Random:  api.SnapshotRandom{Seeded: st.Seeded, Namespace: st.Namespace, Requests: st.Requests, Quotes: map[string]uint64{}},
	}
	if st.Seeded {
		doc.Random.Seed = strconv.FormatInt(st.Seed, 10)
	}
	w.mu.Lock()
	for a, n := range w.quoteSeq {
		doc.Random.Quotes[a] = n
	}
	sc := w.scenario.Load()
	if w.latencyOf == w.inForce() && slices.ContainsFunc(w.latencySeq, func(n uint64) bool { return n > 0 }) {
		doc.Random.Latency = slices.Clone(w.latencySeq)
	}
	w.mu.Unlock()
	doc.Scenario.Name = sc.Name
	if !w.knownScenario(sc) {
		doc.Scenario.Document = string(sc.Document)
	}
	doc.Accounts = w.ledger.Balances()
	doc.Quotes = w.quotes.Export()
	doc.Jobs = w.jobs.Export()
	for i := range doc.Jobs {
		// Outputs that the job's model, input and seeded source make again are left out: they
		// are most of a job's size in the document. An unseeded source draws anew each time, and
		// [] is as short as it gets. A job known to be made again already has none listed.
		if !st.Seeded || len(doc.Jobs[i].Outputs) == 0 {
			continue
		}
		if again, err := w.outputsOf(&doc.Jobs[i]); err == nil && slices.Equal(again, doc.Jobs[i].Outputs) {
			doc.Jobs[i].Outputs = nil
		}
	}
	doc.IdempotencyKeys = w.idem.Export()
	doc.Faults = w.faults.Export()
	doc.RateLimits = w.limiter.Export()
	doc.ExpectedErrors = []api.RequestPattern{}
	for _, p := range w.Expected() {
		doc.ExpectedErrors = append(doc.ExpectedErrors, p.Source())
	}
	doc.Coverage = w.coverage.Seen()
	doc.Notes = w.journal.ExportNotes()
	doc.Webhooks = w.hooks.Export()
	doc.Uploads, doc.UploadsMade = w.exportUploads(), w.uploads.made()
	if withJournal {
		j := w.journal.Export()
		doc.Journal = &j
	}
	return doc
}

// knownScenario reports whether the emulator knows the scenario by its name, so a snapshot
// need not carry its document.
func (w *World) knownScenario(sc *scenario.Scenario) bool {
	return w.cfg.Scenarios[sc.Name] == sc || w.cfg.Scenario == sc
}

// scenarioNamed finds a scenario the emulator knows by name.
func (w *World) scenarioNamed(name string) (*scenario.Scenario, bool) {
	if sc, ok := w.cfg.Scenarios[name]; ok {
		return sc, true
	}
	if w.cfg.Scenario.Name == name {
		return w.cfg.Scenario, true
	}
	return nil, false
}

// problems gathers what is wrong with a snapshot, each with its JSON Pointer.
type problems struct {
	list   []problem.FieldError
	more   int
	models []string
}

func (p *problems) add(ptr, msg string) {
	if len(p.list) >= maxSnapshotProblems {
		p.more++
		return
	}
	p.list = append(p.list, problem.FieldError{Pointer: ptr, Message: msg})
}

// under reports problems of a part of the document, whose pointers are relative to it.
func (p *problems) under(prefix string) func(ptr, msg string) {
	return func(ptr, msg string) { p.add(prefix+ptr, msg) }
}

func (p *problems) model(ptr, id string) {
	if !slices.Contains(p.models, id) {
		p.models = append(p.models, id)
	}
	p.add(ptr, "the catalog has no model "+strconv.Quote(id))
}

// err is the problem to answer, or nil when the document holds.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	detail := strconv.Itoa(len(p.list)+p.more) + " problems in the snapshot; see errors"
	if len(p.list) == 1 {
		detail = "the snapshot does not hold at " + p.list[0].Pointer + ": " + p.list[0].Message
	}
	if p.more > 0 {
		detail += " (the first " + strconv.Itoa(len(p.list)) + " are listed)"
	}
	detail += "; nothing was changed"
	e := &problem.Error{Code: problem.InvalidSnapshot, Detail: detail, Errors: p.list}
	if len(p.models) > 0 {
		e.Extra = map[string]any{"models": p.models}
	}
	return e
}

// Restore replaces the tenant's world with one built from a snapshot, at once: requests see
// the old world or the new one, never a mix. A document that does not hold changes nothing and
// answers invalid_snapshot with a JSON Pointer for each problem. Requests under way in the old
// world finish there, as after a reset.
func (t *Tenant) Restore(doc *api.Snapshot) (*World, error) {
	w, err := t.buildFrom(doc)
	if err != nil {
		return nil, err
	}
	if err := w.admit(w.footprint()); err != nil {
		w.retire()
		return nil, err
	}
	t.resetMu.Lock()
	defer t.resetMu.Unlock()
	if t.ended {
		w.retire()
		return nil, problem.New(problem.TenantNotFound, "tenant %q was dropped while the snapshot was restored", t.name)
	}
	t.current.Swap(w).retire()
	t.count(true)
	w.Changed(PartAll)
	return w, nil
}

// buildFrom makes a world from a snapshot without showing it to anyone, or says every way the
// document does not hold.
func (t *Tenant) buildFrom(doc *api.Snapshot) (*World, error) {
	p := &problems{}
	cur := t.World()
	cfg := cur.cfg
	if doc.Format != api.SnapshotFormat {
		if doc.Format > api.SnapshotFormat {
			p.add("/format", "format "+strconv.Itoa(doc.Format)+" is newer than this emulator reads ("+strconv.Itoa(api.SnapshotFormat)+"); use the emulator version that wrote it, "+strconv.Quote(doc.Emulator)+", or newer")
		} else {
			p.add("/format", "format must be "+strconv.Itoa(api.SnapshotFormat))
		}
		return nil, p.err()
	}
	now, err := time.Parse(time.RFC3339Nano, doc.Clock.Now)
	if err != nil || now.After(clock.Latest) {
		p.add("/clock/now", "not an RFC 3339 time before "+clock.Latest.Format(time.RFC3339))
	}
	mode, ok := clock.ParseMode(doc.Clock.Mode)
	if !ok {
		p.add("/clock/mode", "real, manual or skip")
	}
	st := ids.State{Seeded: doc.Random.Seeded, Namespace: doc.Random.Namespace, Requests: doc.Random.Requests}
	if st.Seeded {
		if st.Seed, err = strconv.ParseInt(doc.Random.Seed, 10, 64); err != nil {
			p.add("/random/seed", "a 64-bit number as text")
		}
	}
	g, err := ids.Restore(st)
	if err != nil {
		p.add("/random/namespace", "not a UUID")
	}
	var sc *scenario.Scenario
	if doc.Scenario.Document != "" {
		if sc, err = scenario.Parse("snapshot scenario", []byte(doc.Scenario.Document)); err != nil {
			p.add("/scenario/document", err.Error())
		}
	} else if sc, _ = cur.scenarioNamed(doc.Scenario.Name); sc == nil {
		p.add("/scenario/name", "this emulator has no scenario "+strconv.Quote(doc.Scenario.Name)+"; a snapshot carries the document of a scenario sent inline, and names the others")
	}
	if sc != nil && len(doc.Random.Latency) > 0 {
		// The counts are the tuned scenario's: a plan's latency knob adds a rule of its own.
		rules := len(sc.Latency)
		if slices.ContainsFunc(doc.Faults.Rules, func(r api.SnapshotFault) bool { return r.Rule.Set != nil && r.Rule.Set.Latency > 0 }) {
			rules++
		}
		if len(doc.Random.Latency) != rules {
			p.add("/random/latency", "counts "+strconv.Itoa(len(doc.Random.Latency))+" latency rules; the scenario, with the plan's knobs, has "+strconv.Itoa(rules))
		}
	}
	// Accounts: the catalog's, as the document has them; one it leaves out starts afresh.
	known := map[string]int64{}
	for _, a := range cfg.Catalog.Accounts {
		known[a.ID] = a.Credits
	}
	balances := map[string]ledger.Balance{}
	for i, b := range doc.Accounts {
		at := "/accounts/" + strconv.Itoa(i)
		switch _, ok := known[b.Account]; {
		case !ok:
			p.add(at+"/account", "the catalog has no account "+strconv.Quote(b.Account))
		case balances[b.Account].Account != "":
			p.add(at+"/account", "account "+b.Account+" appears twice")
		case b.Available < 0 || b.Held < 0 || b.Charged < 0 || b.Refunded < 0:
			p.add(at, "credits cannot be negative")
		default:
			balances[b.Account] = b
		}
	}
	for id, credits := range known {
		if _, ok := balances[id]; !ok {
			balances[id] = ledger.Balance{Account: id, Available: credits}
		}
	}
	// References between the parts: every job and quote belongs to an account the catalog has
	// and is for a model it has; a job and the quote that paid for it, when the document holds
	// both, name each other; an account holds exactly what its live jobs hold. A job's quote may
	// be missing, live job or not: an account keeps a bounded number of markers of spent quotes
	// (quotes.Limits.Markers), and past it forgets the oldest while their jobs go on.
	held := map[string]int64{}
	quoteAt := map[string]int{}
	for i, q := range doc.Quotes {
		at := "/quotes/" + strconv.Itoa(i)
		quoteAt[q.Account+"\x00"+q.ID] = i
		if _, ok := cfg.Catalog.Model(q.Model); !ok {
			p.model(at+"/model", q.Model)
		}
		if _, ok := known[q.Account]; !ok {
			p.add(at+"/account", "the catalog has no account "+strconv.Quote(q.Account))
		}
	}
	jobAt := map[string]int{}
	for i, j := range doc.Jobs {
		at := "/jobs/" + strconv.Itoa(i)
		jobAt[j.ID] = i
		if _, ok := cfg.Catalog.Model(j.Model); !ok {
			p.model(at+"/model", j.Model)
		}
		if _, ok := known[j.Account]; !ok {
			p.add(at+"/account", "the catalog has no account "+strconv.Quote(j.Account))
		}
		live := j.Status == string(jobs.Queued) || j.Status == string(jobs.Running)
		if live {
			held[j.Account] += j.Credits
		}
		if qi, ok := quoteAt[j.Account+"\x00"+j.QuoteID]; ok && doc.Quotes[qi].UsedBy != j.ID {
			p.add(at+"/quote_id", "quote "+j.QuoteID+" paid for "+strconv.Quote(doc.Quotes[qi].UsedBy)+", not for this job")
		}
	}
	for i, q := range doc.Quotes {
		if ji, ok := jobAt[q.UsedBy]; q.UsedBy != "" && ok && doc.Jobs[ji].QuoteID != q.ID {
			p.add("/quotes/"+strconv.Itoa(i)+"/used_by", "job "+q.UsedBy+" was paid for by quote "+doc.Jobs[ji].QuoteID)
		}
	}
	for i, b := range doc.Accounts {
		if _, ok := known[b.Account]; ok && b.Held != held[b.Account] {
			p.add("/accounts/"+strconv.Itoa(i)+"/held", "holds "+strconv.FormatInt(b.Held, 10)+" credits, but its live jobs hold "+strconv.FormatInt(held[b.Account], 10))
		}
	}
	for i := range doc.Jobs {
		t.checkOutputs(doc.Jobs[i].Outputs, p.under("/jobs/"+strconv.Itoa(i)+"/outputs"))
	}
	for i, k := range doc.IdempotencyKeys {
		if _, ok := known[k.Account]; !ok {
			p.add("/idempotency_keys/"+strconv.Itoa(i)+"/account", "the catalog has no account "+strconv.Quote(k.Account))
		}
	}
	if len(p.list) > 0 {
		return nil, p.err()
	}

	c := clock.NewAt(mode, now)
	l := ledger.Restore(slices.Collect(func(yield func(ledger.Balance) bool) {
		for _, b := range balances {
			if !yield(b) {
				return
			}
		}
	}))
	w := t.build(c, g, l)
	w.scenario.Store(sc)
	// The deliveries due are rendered again below, their output URLs on the address this
	// tenant's clients reach the emulator by, as the world replaced last saw it.
	if old := t.current.Load(); old != nil {
		if b, _ := old.base.Load().(string); b != "" {
			w.base.Store(b)
		}
	}
	for a, n := range doc.Random.Quotes {
		w.quoteSeq[a] = n
	}
	w.faults.Import(doc.Faults, p.under("/faults"))
	w.retune() // the plan's knobs tune the restored scenario, as they did the saved one
	if len(doc.Random.Latency) > 0 {
		w.latencySeq, w.latencyOf = slices.Clone(doc.Random.Latency), w.inForce()
	}
	w.quotes.Import(doc.Quotes, p.under("/quotes"))
	if ptr, msg := w.restoreUploads(doc.Uploads, doc.UploadsMade); ptr != "" {
		p.add(ptr, msg)
	}
	// Outputs left out are made again here, straight into the engine's form.
	remade := make([][]jobs.Output, len(doc.Jobs))
	for i := range doc.Jobs {
		if doc.Jobs[i].Outputs == nil {
			outs, err := w.remakeOutputs(&doc.Jobs[i])
			if err != nil {
				p.add("/jobs/"+strconv.Itoa(i)+"/outputs", "left out, and the job's model and input do not make them again: "+err.Error())
				continue
			}
			remade[i] = outs
		}
	}
	w.jobs.Import(doc.Jobs, remade, w.path, p.under("/jobs"))
	w.idem.Import(doc.IdempotencyKeys, p.under("/idempotency_keys"))
	w.limiter.Import(doc.RateLimits, len(sc.RateLimits), p.under("/rate_limits"))
	w.journal.Restore(doc.Journal, doc.Notes, p.under("/notes"))
	w.expected = expectedFrom(doc.ExpectedErrors, p.under("/expected_errors"))
	w.coverage.Restore(doc.Coverage, p.under("/coverage"))
	// The deliveries due are rendered again from the jobs just restored; their views are taken
	// first, since the engine tells the hub of a job's change under its own lock.
	views := map[string]jobs.View{}
	if doc.Webhooks != nil {
		for _, d := range doc.Webhooks.Pending {
			if i, ok := jobAt[d.Job]; ok {
				if v, ok := w.jobs.Get(doc.Jobs[i].Account, d.Job); ok {
					views[d.Job] = v
				}
			}
		}
	}
	w.hooks.Import(doc.Webhooks, func(id string) (jobs.View, bool) { v, ok := views[id]; return v, ok }, p.under("/webhooks"))
	if c := w.hooks.Config(); c != nil && !c.Secret.Set() && w.cfg.WebhookSecret.Set() {
		// A snapshot holds no secret; a run started with --webhook-secret signs with its own,
		// as it signs a scenario's webhook.
		signed := *c
		signed.Secret = w.cfg.WebhookSecret
		w.hooks.Configure(&signed)
	}
	if err := p.err(); err != nil {
		w.retire()
		return nil, err
	}
	return w, nil
}

// checkOutputs reports the listed outputs that no download could serve: a size or length past
// what the media writers make (the bounds are theirs, asked through Maker.Size), or a size in
// bytes other than the file's.
func (t *Tenant) checkOutputs(outs []api.SnapshotOutput, report func(ptr, msg string)) {
	maker := t.World().cfg.maker
	for k, o := range outs {
		at := "/" + strconv.Itoa(k)
		if !(o.Duration >= 0 && o.Duration <= maxSeconds) {
			report(at+"/duration_seconds", "not a length any output has")
			continue
		}
		seed, _ := strconv.ParseUint(o.Seed, 10, 64) // a bad seed is reported where jobs are read
		opening, err := base64.StdEncoding.DecodeString(o.Opening)
		if err != nil {
			report(at+"/opening", "not base64")
			continue
		}
		size, err := maker.Size(mediaSpec(jobs.Output{Output: api.Output{Width: o.Width, Height: o.Height, Duration: o.Duration},
			Format: o.Format, Seed: seed, Label: o.Label, Opening: string(opening)}))
		switch msg := strings.TrimPrefix(fmt.Sprint(err), media.ErrInvalidSpec.Error()+": "); {
		case o.Opening != "" && o.Format != "mp4":
			report(at+"/opening", "only a video opens on a frame")
		case err == nil && size != o.SizeBytes:
			report(at+"/size_bytes", "is "+strconv.FormatInt(o.SizeBytes, 10)+"; the file this output describes has "+strconv.FormatInt(size, 10)+" bytes")
		case err == nil:
		case strings.Contains(msg, "duration") || strings.Contains(msg, "sample rate"):
			report(at+"/duration_seconds", msg)
		case strings.Contains(msg, "opening frame"):
			report(at+"/opening", msg)
		case strings.Contains(msg, "format"):
			report(at+"/format", msg)
		case o.Height < 1 || o.Height > media.MaxImageSide:
			report(at+"/height", msg)
		default:
			report(at+"/width", msg)
		}
	}
}

// maxSeconds is the longest length, in seconds, that a time.Duration holds.
const maxSeconds = float64(math.MaxInt64 / int64(time.Second))

// expectedFrom checks a snapshot's expected-error patterns as POST /_emulator/expected-errors
// checks a new one, reporting each problem with a JSON Pointer relative to the list.
func expectedFrom(in []api.RequestPattern, report func(ptr, msg string)) []*evidence.Pattern {
	if len(in) > MaxExpected {
		report("", "holds "+strconv.Itoa(len(in))+" patterns, more than the bound of "+strconv.Itoa(MaxExpected))
		return nil
	}
	out := make([]*evidence.Pattern, 0, len(in))
	for i, rp := range in {
		at := "/" + strconv.Itoa(i)
		// The pattern goes back through the parser a request's goes through, which wants the
		// object as decoded from JSON, numbers exact.
		raw, err := json.Marshal(rp)
		var obj map[string]any
		if err == nil {
			err = jsonvalue.Decode(raw, &obj)
		}
		if err != nil {
			report(at, "not a request pattern")
			continue
		}
		pat, errs := evidence.Parse(obj)
		for _, e := range errs {
			report(at+e.Pointer, e.Message)
		}
		if pat != nil {
			out = append(out, pat)
		}
	}
	return out
}

// remade reports whether a new job's outputs are what its model and input, as the job holds
// it, make again from the world's seeded source. Deciding it once here spares every snapshot
// of the world making each job's outputs again to see whether it may leave them out.
func (w *World) remade(m *catalog.Model, input json.RawMessage, jobID string, outs []jobs.Output) bool {
	if !w.ids.Seeded() || len(outs) == 0 {
		return false
	}
	again, err := w.outputsOf(&api.SnapshotJob{ID: jobID, Model: m.ID, Input: input})
	return err == nil && slices.Equal(again, jobs.SnapshotOutputs(outs))
}

// outputsOf describes a job's outputs as its model, input and the world's source make them
// again, in the form a snapshot lists them.
func (w *World) outputsOf(sj *api.SnapshotJob) ([]api.SnapshotOutput, error) {
	outs, err := w.remakeOutputs(sj)
	if err != nil {
		return nil, err
	}
	return jobs.SnapshotOutputs(outs), nil
}

// remakeOutputs makes a job's outputs again from its model, input and the world's source.
func (w *World) remakeOutputs(sj *api.SnapshotJob) ([]jobs.Output, error) {
	m, ok := w.cfg.Catalog.Model(sj.Model)
	if !ok {
		return nil, errors.New("the catalog has no model " + strconv.Quote(sj.Model))
	}
	// Numbers are read as float64, not as generate reads them: any reading made the same way on
	// both sides will do, since a job's outputs are left out only when they come out the same.
	var input map[string]any
	if err := jsonv2.Unmarshal(sj.Input, &input); err != nil {
		return nil, errors.New("the input is not a JSON object")
	}
	return w.describeOutputs(m, input, sj.ID)
}
