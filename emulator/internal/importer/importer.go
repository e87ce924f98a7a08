// Package importer reads a live Media Generation Service's catalog through its public API and
// writes it as a catalog file the emulator serves, and reports where a catalog file has drifted
// from the live service. It only reads and quotes (quotes are free), so it never spends credits,
// except in drift with an explicit Spend budget.
package importer

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/glob"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// Options say where the live service is and how to read it.
type Options struct {
	// From is the service's base URL (with or without a trailing /v1).
	From string
	// Key is the bearer key; it is sent only in the Authorization header.
	Key string
	// Models, when not empty, keeps only the models whose id matches one of these globs (package
	// glob: "*" within a segment, "**" across). An entry without wildcards names a model to
	// fetch even when the listing does not show it, as for models that are not ready.
	Models []string
	// Grouped reads product names, descriptions and modes from GET /v1/models?grouped=true.
	Grouped bool
	// ProbePrices quotes variations of each example input to learn how the price depends on it.
	ProbePrices bool
	// Progress receives progress lines and warnings; nil discards them.
	Progress io.Writer
	// HTTPClient sends the requests (default: one with a 60 s timeout).
	HTTPClient *http.Client
	// Sleep waits between retries (default: a timer); tests make it instant.
	Sleep func(context.Context, time.Duration) error
	// PageLimit is the listing page size (default 100).
	PageLimit int
	// Spend, when positive, lets drift spend up to this many credits on the live service: one
	// cheapest generation per output type, compared in shape with Reference (spend.go). Zero
	// never generates.
	Spend int64
	// Reference builds the emulator drift --spend compares the live service with.
	Reference Reference

	// attemptTimeout, notice, listingBytes and modelsBytes replace attemptTimeout,
	// waitNotice, maxListingBytes and maxModelsBytes in tests.
	attemptTimeout, notice    time.Duration
	listingBytes, modelsBytes int
}

func (o *Options) client() (*client, error) {
	u, err := url.Parse(strings.TrimSpace(o.From))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--from %q: want an http or https URL such as https://api.example.com", o.From)
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	u.RawPath = ""
	if o.Key == "" {
		return nil, errors.New("no key: pass --key or set MEDIAGEN_IMPORT_KEY")
	}
	hc := &http.Client{Timeout: cmp.Or(o.attemptTimeout, attemptTimeout)}
	if o.HTTPClient != nil {
		copied := *o.HTTPClient
		hc = &copied
	}
	if o.Progress != nil {
		// Slow requests report from a timer's goroutine.
		o.Progress = &lockedWriter{w: o.Progress}
	}
	c := &client{base: u, key: o.Key, http: hc, sleep: o.Sleep, logf: o.logf,
		pageLimit: cmp.Or(o.PageLimit, pageLimit), notice: cmp.Or(o.notice, waitNotice),
		listingBytes: cmp.Or(o.listingBytes, maxListingBytes)}
	if c.sleep == nil {
		c.sleep = SleepContext
	}
	hc.CheckRedirect = c.checkRedirect
	return c, nil
}

func (o *Options) logf(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// lockedWriter writes from one goroutine at a time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes p whole while no other goroutine writes.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Result is an imported catalog.
type Result struct {
	// YAML is the catalog file.
	YAML []byte
	// Warnings name what could not be carried exactly; they are also comments in the file.
	Warnings []string
	// Models counts the models written.
	Models int
	// Quotes counts the quotes asked for.
	Quotes int
}

// liveModel is one model as read from the service, on its way to the file.
type liveModel struct {
	id, name, description, category, product, mode, outputType, status string

	schema   *inputSchema
	examples []*node
	notes    []string // comments for the model
	model    *catalog.Model
	obs      []observation
	rule     *rule
	priceDoc []string // comments for the pricing block
	quotes   int      // quotes observed (obs is dropped once priced)
	output   *node    // the output block, or nil
}

// size is about what the model costs the file: its schema and the parts around it.
func (lm *liveModel) size() int {
	n := 256 + len(lm.id) + len(lm.name) + len(lm.description) + len(lm.category) + len(lm.product) + len(lm.mode)
	if lm.schema != nil {
		n += nodeSize(lm.schema.root)
		for _, e := range lm.schema.bodyExamples {
			n += nodeSize(e)
		}
	}
	for _, e := range lm.examples {
		n += nodeSize(e)
	}
	if lm.output != nil {
		n += nodeSize(lm.output)
	}
	for _, s := range lm.notes {
		n += len(s)
	}
	return n
}

// selected reports whether --models keeps a model: any of its globs matches the id, or there
// are none.
func (o *Options) selected(id string) bool {
	return len(o.Models) == 0 || slices.ContainsFunc(o.Models, func(p string) bool { return glob.Match(p, id) })
}

// literalModels are the --models entries without wildcards: ids to fetch even if unlisted.
func (o *Options) literalModels() []string {
	var out []string
	for _, p := range o.Models {
		if !glob.HasWildcard(p) {
			out = append(out, p)
		}
	}
	return out
}

// listing is what the live service lists: models in catalog order, categories, products.
type listing struct {
	items      []*node
	byID       map[string]*node
	categories map[string]string // category → output type
	products   []*node           // grouped entries, in order
	modeOf     map[string][2]string
	warnings   []string // listed entries skipped
}

func readListing(ctx context.Context, c *client, o *Options) (*listing, error) {
	l := &listing{byID: map[string]*node{}, categories: map[string]string{}, modeOf: map[string][2]string{}}
	items, err := c.listAll(ctx, nil, func(n, total int) {
		if total > c.pageLimit {
			o.logf("listing models: %d/%d", n, total)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		id := it.str("id")
		if !catalog.ValidModelID(id) {
			text := "none"
			if v := it.get("id"); v != nil {
				text = short(v)
			}
			l.warnings = append(l.warnings, fmt.Sprintf("a listed model's id (%s) is not a valid model id; skipped", text))
			continue
		}
		if l.byID[id] != nil {
			continue
		}
		l.byID[id] = it
		l.items = append(l.items, it)
	}
	cats, err := c.do(ctx, http.MethodGet, "/v1/models/categories", nil, nil)
	if err != nil {
		return nil, err
	}
	if data := cats.get("data"); data != nil && data.kind == kArray {
		for _, cat := range data.vals {
			l.categories[cat.str("id")] = cat.str("output_type")
		}
	}
	if o.Grouped {
		groups, err := c.listAll(ctx, url.Values{"grouped": {"true"}}, nil)
		if err != nil {
			return nil, err
		}
		l.products = groups
		for _, g := range groups {
			if modes := g.get("modes"); modes != nil && modes.kind == kArray {
				for _, m := range modes.vals {
					l.modeOf[m.str("model")] = [2]string{g.str("product"), m.str("mode")}
				}
			}
		}
	}
	return l, nil
}

// Import reads the live catalog and returns it as a catalog file.
func Import(ctx context.Context, o Options) (*Result, error) {
	c, err := o.client()
	if err != nil {
		return nil, err
	}
	l, err := readListing(ctx, c, &o)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, it := range l.items {
		if id := it.str("id"); o.selected(id) {
			ids = append(ids, id)
		}
	}
	for _, id := range o.literalModels() {
		if !catalog.ValidModelID(id) {
			return nil, fmt.Errorf("--models: %q is not a model id", id)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	o.logf("importing %s", plural(len(ids), "model"))
	res := &Result{Warnings: l.warnings}
	var models, unready []*liveModel
	held, bound := 0, cmp.Or(o.modelsBytes, maxModelsBytes)
	price := func(lm *liveModel) error {
		warn, err := priceModel(ctx, c, &o, lm, models)
		res.Warnings = append(res.Warnings, warn...)
		res.Quotes += lm.quotes
		// Only the file's parts stay: a compiled schema is many times its size.
		lm.model, lm.obs, lm.examples = nil, nil, nil
		return err
	}
	// A ready model is priced as soon as it is read; one that cannot be quoted waits for the
	// ready models it may borrow a rule from.
	for i, id := range ids {
		lm, warn, err := readModel(ctx, c, &o, l, id)
		if err != nil {
			return nil, err
		}
		res.Warnings = append(res.Warnings, warn...)
		if lm != nil {
			if held += lm.size(); held > bound {
				return nil, fmt.Errorf("the %d models read hold more than %d MiB, more than the importer writes into one catalog; import fewer with --models", len(models)+1, bound>>20)
			}
			models = append(models, lm)
			if lm.status != catalog.StatusReady {
				unready = append(unready, lm)
			} else if err := price(lm); err != nil {
				return nil, err
			}
		}
		if (i+1)%25 == 0 || i+1 == len(ids) {
			o.logf("read %d/%d models (%d requests, %d quotes)", i+1, len(ids), c.requests, res.Quotes)
		}
	}
	for _, lm := range unready {
		if err := price(lm); err != nil {
			return nil, err
		}
	}
	for _, w := range res.Warnings {
		o.logf("warning: %s", w)
	}
	if len(models) == 0 {
		return nil, errors.New("no models to import (check --models)")
	}
	res.YAML, err = render(models, l)
	if err != nil {
		return nil, err
	}
	// Each model's schema and examples were compiled and checked when it was read; the whole
	// file is checked for the rest without compiling every schema again at once.
	if _, err := catalog.ParseWith("imported catalog", res.YAML, catalog.Options{Trusted: true}); err != nil {
		return nil, fmt.Errorf("the imported catalog does not load; this is a bug in the importer:\n%v", err)
	}
	res.Models = len(models)
	return res, nil
}

// readModel reads one model's details and schema and checks that the catalog can hold it; it
// returns nil (and a warning) for a model it cannot carry.
func readModel(ctx context.Context, c *client, o *Options, l *listing, id string) (*liveModel, []string, error) {
	doc, err := c.do(ctx, http.MethodGet, ModelPath(id), nil, nil)
	if err != nil {
		if statusOf(err) == http.StatusNotFound {
			return nil, []string{fmt.Sprintf("model %q: not found on the service; skipped", id)}, nil
		}
		return nil, nil, err
	}
	item := l.byID[id]
	pick := func(k string) string {
		if v := doc.str(k); v != "" {
			return v
		}
		return item.str(k)
	}
	lm := &liveModel{id: id, name: pick("name"), description: pick("description"), category: pick("category"),
		product: pick("product"), mode: pick("mode"), outputType: pick("output_type"), status: pick("status")}
	if pm, ok := l.modeOf[id]; ok {
		if pm[0] != "" {
			lm.product = pm[0]
		}
		if pm[1] != "" {
			lm.mode = pm[1]
		}
	}
	var warns []string
	warn := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		lm.notes = append(lm.notes, msg)
		warns = append(warns, fmt.Sprintf("model %q: %s", id, msg))
	}
	if lm.outputType == "" {
		lm.outputType = l.categories[lm.category]
	}
	if lm.status == "" {
		lm.status = catalog.StatusReady
	}
	if lm.description == "" {
		lm.description = lm.name
		lm.notes = append(lm.notes, "the service gives no description; the name stands in")
	}
	if lm.mode == "" {
		lm.mode = lm.category
		lm.notes = append(lm.notes, "mode inferred from the category")
	}
	if lm.product == "" {
		lm.product = id
		lm.notes = append(lm.notes, "the service names no product; the model is its own")
	}
	schema, err := modelSchema(doc)
	if err != nil {
		return nil, []string{fmt.Sprintf("model %q: %v; skipped", id, err)}, nil
	}
	lm.schema = schema
	lm.notes = append(lm.notes, schema.notes...)
	if err := lm.settleExamples(doc, warn); err != nil {
		return nil, []string{fmt.Sprintf("model %q: %v; skipped", id, err)}, nil
	}
	m, problems := lm.load(nil, &rule{base: 1})
	if m == nil {
		return nil, []string{fmt.Sprintf("model %q: the catalog cannot hold it (%s); skipped", id, problems)}, nil
	}
	lm.model = m
	lm.output = inferOutput(lm.outputType, properties(lm.schema.root))
	if !lm.accepts(&rule{base: 1}) {
		lm.output = obj(lm.output.keys[0], lm.output.vals[0])
		warn("the outputs inferred from the schema do not fit the catalog's rules; only the format is kept")
	}
	return lm, warns, nil
}

// settleExamples makes sure the schema carries at least one valid example: its own, else the
// details' examples, else the OpenAPI document's, else one made from the schema.
func (lm *liveModel) settleExamples(doc *node, warn func(string, ...any)) error {
	root := lm.schema.root
	compiled, err := schema.Compile(root.marshal())
	if err != nil {
		return fmt.Errorf("its input schema does not compile: %v", err)
	}
	valid := func(list []*node) []*node {
		var out []*node
		for _, e := range list {
			if e.kind == kObject && compiled.Validate(e.value()) == nil {
				out = append(out, e)
			}
		}
		return out
	}
	var own []*node
	if exs := root.get("examples"); exs != nil && exs.kind == kArray {
		own = exs.vals
	}
	if good := valid(own); len(good) > 0 {
		if len(good) < len(own) {
			warn("%d of the schema's examples do not match the schema and were dropped", len(own)-len(good))
			root.set("examples", &node{kind: kArray, vals: good})
		}
		lm.examples = good
		return nil
	}
	var sources [][]*node
	if exs := doc.get("examples"); exs != nil && exs.kind == kArray {
		sources = append(sources, exs.vals)
	}
	sources = append(sources, lm.schema.bodyExamples, []*node{synthesizeExample(root)})
	for i, src := range sources {
		if good := valid(src); len(good) > 0 {
			lm.examples = good
			root.set("examples", &node{kind: kArray, vals: good})
			if i == len(sources)-1 {
				warn("the schema has no valid example; one was made from its required properties (inferred)")
			} else {
				lm.notes = append(lm.notes, "examples copied into the schema from the model's documentation")
			}
			return nil
		}
	}
	return errors.New("it has no valid example and none could be made")
}

// accepts reports whether the catalog takes the model priced by r (its fields present, its
// tables covering their enums).
func (lm *liveModel) accepts(r *rule) bool {
	m, _ := lm.load(lm.output, r)
	return m != nil
}

// load parses the model alone as a catalog, to check the catalog can hold it and to get the
// emulator's own view of it (properties and examples) for pricing.
func (lm *liveModel) load(output *node, r *rule) (*catalog.Model, string) {
	doc := obj("products", arr(obj("id", lm.product, "name", lm.product)), "models", arr(lm.modelNode(output, r)))
	data, err := encodeYAML(doc.toYAML())
	if err != nil {
		return nil, err.Error()
	}
	cat, err := catalog.ParseWith("model", data, catalog.Options{Workers: 1})
	if err != nil {
		var ps catalog.Problems
		if errors.As(err, &ps) {
			var msgs []string
			for _, p := range ps {
				msgs = append(msgs, p.Message)
			}
			return nil, strings.Join(msgs, "; ")
		}
		return nil, err.Error()
	}
	m, _ := cat.Model(lm.id)
	return m, ""
}

// priceModel quotes the model's examples (and, when probing, variations of the first) and fits
// a rule to what the service answered.
func priceModel(ctx context.Context, c *client, o *Options, lm *liveModel, all []*liveModel) ([]string, error) {
	var warns []string
	if lm.status == catalog.StatusReady {
		if err := observe(ctx, c, o, lm); err != nil {
			if statusOf(err) != http.StatusConflict {
				return nil, err
			}
			lm.obs = nil
			lm.notes = append(lm.notes, "listed as ready, but refused quotes as unavailable")
		}
	}
	if len(lm.obs) == 0 {
		for _, other := range all {
			if other != lm && other.product == lm.product && other.rule != nil && other.quotes > 0 && lm.accepts(other.rule) {
				lm.rule = other.rule.clone()
				lm.priceDoc = []string{fmt.Sprintf("not observed: the model is %s and cannot be quoted; copied from %s (inferred)", lm.status, other.id)}
				warns = append(warns, fmt.Sprintf("model %q: price not observed (%s); copied from %s", lm.id, lm.status, other.id))
				return warns, nil
			}
		}
		lm.rule = &rule{base: 1}
		lm.priceDoc = []string{fmt.Sprintf("not observed: the model is %s and cannot be quoted; a placeholder (inferred)", lm.status)}
		warns = append(warns, fmt.Sprintf("model %q: price not observed (%s); a placeholder of 1 credit", lm.id, lm.status))
		return warns, nil
	}
	probed := o.ProbePrices
	if differ := differingFields(lm.obs); !probed && len(differ) > 0 {
		// The examples disagree on the price: learn how just the fields they differ in drive
		// it, so the rule reproduces the examples at least.
		if err := probe(ctx, c, lm, differ); err != nil {
			return nil, err
		}
		probed = true
		lm.priceDoc = append(lm.priceDoc, "the examples are priced differently: the fields they differ in were probed")
	}
	relevant := relevantFields(lm)
	if probed && len(relevant) > 0 {
		if err := observeCombinations(ctx, c, lm, relevant); err != nil {
			return nil, err
		}
	}
	lm.quotes = len(lm.obs)
	f := fitPrice(lm.model, lm.obs, relevant)
	lm.rule = f.rule
	for _, t := range append(f.rule.tables, f.rule.mults...) {
		if len(t.keys) > maxVariants {
			lm.priceDoc = append(lm.priceDoc, fmt.Sprintf("%s has %d values; only %d were quoted, the others are guesses (inferred)", t.field, len(t.keys), maxVariants))
		}
	}
	switch {
	case len(f.bad) > 0:
		lm.priceDoc = append(lm.priceDoc, fmt.Sprintf("no rule of the catalog format reproduces all %d quotes; this is the closest (it misses %d):", len(lm.obs), len(f.bad)))
		for _, i := range f.bad {
			ob := lm.obs[i]
			lm.priceDoc = append(lm.priceDoc, fmt.Sprintf("  observed %s for %s", credits(ob.credits), ob.input.marshal()))
		}
		warns = append(warns, fmt.Sprintf("model %q: no pricing rule reproduces all %d quotes; wrote the closest (misses %d)", lm.id, len(lm.obs), len(f.bad)))
	case o.ProbePrices:
		lm.priceDoc = append(lm.priceDoc, fmt.Sprintf("fitted to %d quotes; reproduces every one", len(lm.obs)))
	case probed:
		lm.priceDoc = append(lm.priceDoc, fmt.Sprintf("fitted to %d quotes; reproduces every one; fields the examples agree on were not probed (--probe-prices)", len(lm.obs)))
	default:
		lm.priceDoc = append(lm.priceDoc, fmt.Sprintf("fitted to %d quote(s) of the examples; how other inputs change it was not probed (--probe-prices)", len(lm.obs)))
	}
	return warns, nil
}

// quote asks the service to price one input. A 422 (an input the service refuses) is not an
// error: it gives ok false.
func quote(ctx context.Context, c *client, id string, input *node) (int64, bool, error) {
	doc, err := c.do(ctx, http.MethodPost, "/v1/quotes", nil, obj("model", id, "input", input).marshal())
	if err != nil {
		if s := statusOf(err); s == http.StatusUnprocessableEntity || s == http.StatusBadRequest {
			return 0, false, nil
		}
		return 0, false, err
	}
	n, err := creditsOf(doc)
	return n, err == nil, err
}

// creditsOf reads a quote's credits: exact when they are an integer, cut to one when a service
// answers a fraction.
func creditsOf(doc *node) (int64, error) {
	cr := doc.get("credits")
	if cr == nil || cr.kind != kNumber {
		return 0, errors.New("POST /v1/quotes: the answer has no credits")
	}
	if n, err := strconv.ParseInt(cr.text, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(cr.text, 64)
	if err != nil {
		return 0, errors.New("POST /v1/quotes: credits is not a number")
	}
	return int64(f), nil
}

func (lm *liveModel) add(ctx context.Context, c *client, label string, input *node) error {
	if len(lm.obs) >= maxProbesPerModel {
		return nil
	}
	v, _ := input.value().(map[string]any)
	if lm.model.Validate(v) != nil {
		return nil
	}
	for _, o := range lm.obs {
		if bytes.Equal(o.input.marshal(), input.marshal()) {
			return nil
		}
	}
	credits, ok, err := quote(ctx, c, lm.id, input)
	if err != nil || !ok {
		return err
	}
	lm.obs = append(lm.obs, observation{label: label, input: input, value: v, credits: credits})
	return nil
}

// observe quotes the examples and, when probing, each property's variations one at a time.
func observe(ctx context.Context, c *client, o *Options, lm *liveModel) error {
	for i, ex := range lm.examples {
		if err := lm.add(ctx, c, fmt.Sprintf("example %d", i), ex); err != nil {
			return err
		}
	}
	if !o.ProbePrices || len(lm.obs) == 0 {
		return nil
	}
	return probe(ctx, c, lm, nil)
}

// probe quotes the variations of the base input's properties one at a time: of those in only,
// or of all when only is nil.
func probe(ctx context.Context, c *client, lm *liveModel, only map[string]bool) error {
	base := lm.obs[0].input
	for _, p := range properties(lm.schema.root) {
		if only != nil && !only[p.name] {
			continue
		}
		for _, v := range variants(p, base.get(p.name)) {
			in := base.clone()
			in.set(p.name, v)
			if err := lm.add(ctx, c, p.name+"="+string(v.marshal()), in); err != nil {
				return err
			}
		}
	}
	return nil
}

// differingFields are the fields in which examples priced differently from the first differ
// from it; nil when every example costs the same.
func differingFields(obs []observation) map[string]bool {
	if len(obs) == 0 {
		return nil
	}
	var out map[string]bool
	for _, o := range obs[1:] {
		if o.credits == obs[0].credits {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		for k, v := range o.value {
			if !sameValue(v, obs[0].value[k]) {
				out[k] = true
			}
		}
		for k := range obs[0].value {
			if _, ok := o.value[k]; !ok {
				out[k] = true
			}
		}
	}
	return out
}

// relevantFields are the properties whose variation changed the price, in schema order.
func relevantFields(lm *liveModel) []string {
	if len(lm.obs) == 0 {
		return nil
	}
	var out []string
	for _, p := range properties(lm.schema.root) {
		for _, ob := range variationsOf(lm.obs, p.name) {
			if ob.credits != lm.obs[0].credits {
				out = append(out, p.name)
				break
			}
		}
	}
	return out
}

// observeCombinations quotes the relevant fields together: each against the largest value of
// the first numeric one (which magnifies small prices past the rounding), and pairs of the
// others, so additive and multiplicative effects can be told apart.
func observeCombinations(ctx context.Context, c *client, lm *liveModel, relevant []string) error {
	base := lm.obs[0].input
	last := map[string][]*node{}
	for _, f := range relevant {
		for _, ob := range variationsOf(lm.obs, f) {
			last[f] = append(last[f], ob.input.get(f))
		}
	}
	amp, ampValue := "", (*node)(nil)
	for _, f := range relevant {
		p := lm.model.Properties[f]
		if (p.Type == "integer" || p.Type == "number") && len(p.Enum) == 0 {
			best := -1.0
			for _, v := range last[f] {
				if n, err := strconv.ParseFloat(v.text, 64); err == nil && n > best {
					best, ampValue = n, v
				}
			}
			if ampValue != nil {
				amp = f
				break
			}
		}
	}
	if amp != "" {
		for _, f := range relevant {
			if f == amp {
				continue
			}
			for _, v := range last[f] {
				in := base.clone()
				in.set(amp, ampValue)
				in.set(f, v)
				if err := lm.add(ctx, c, f+"+"+amp, in); err != nil {
					return err
				}
			}
		}
	}
	for i, f := range relevant {
		for _, g := range relevant[i+1:] {
			if f == amp || g == amp || len(last[f]) == 0 || len(last[g]) == 0 {
				continue
			}
			in := base.clone()
			in.set(f, last[f][len(last[f])-1])
			in.set(g, last[g][len(last[g])-1])
			if err := lm.add(ctx, c, f+"+"+g, in); err != nil {
				return err
			}
		}
	}
	return nil
}

// encodeYAML writes a YAML tree with two-space indentation.
func encodeYAML(doc *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// modelNode is the model's entry in the file.
func (lm *liveModel) modelNode(output *node, r *rule) *node {
	m := obj("id", lm.id, "name", lm.name, "description", lm.description, "category", lm.category,
		"product", lm.product, "mode", lm.mode, "output_type", lm.outputType, "status", lm.status,
		"input_schema", lm.schema.root, "pricing", r.node())
	if output != nil {
		m.set("output", output)
	}
	return m
}

// node is the rule as the file's pricing block.
func (r *rule) node() *node {
	p := &node{kind: kObject}
	if r.base != 0 || (len(r.units) == 0 && len(r.tables) == 0) {
		p.set("base", jsonOf(r.base))
	}
	if len(r.units) > 0 {
		units := arr()
		for _, u := range r.units {
			e := obj("field", u.field, "credits", u.credits)
			if u.length {
				e.set("measure", jsonOf("length"))
			}
			units.vals = append(units.vals, e)
		}
		p.set("per_unit", units)
	}
	for _, ts := range []struct {
		name  string
		rules []tableRule
	}{{"tables", r.tables}, {"multipliers", r.mults}} {
		if len(ts.rules) == 0 {
			continue
		}
		list := arr()
		for _, t := range ts.rules {
			vals := &node{kind: kObject}
			for i, k := range t.keys {
				vals.set(k, jsonOf(t.values[i]))
			}
			list.vals = append(list.vals, obj("field", t.field, "values", vals))
		}
		p.set(ts.name, list)
	}
	if len(r.by) > 0 {
		by := arr()
		for _, f := range r.by {
			by.vals = append(by.vals, jsonOf(f))
		}
		p.set("multiply_by", by)
	}
	if r.minimum != nil {
		p.set("minimum", jsonOf(*r.minimum))
	}
	return p
}

// render writes the catalog file: products, models, and the emulator's standard test accounts
// and keys (never the live key).
func render(models []*liveModel, l *listing) ([]byte, error) {
	products := arr()
	seen := map[string]bool{}
	used := map[string]bool{}
	for _, lm := range models {
		used[lm.product] = true
	}
	for _, g := range l.products {
		id := g.str("product")
		if id == "" || seen[id] || !used[id] {
			continue
		}
		seen[id] = true
		p := obj("id", id, "name", cmp.Or(g.str("name"), id))
		if d := g.str("description"); d != "" {
			p.set("description", jsonOf(d))
		}
		products.vals = append(products.vals, p)
	}
	grouped := len(products.vals)
	for _, lm := range models {
		if !seen[lm.product] {
			seen[lm.product] = true
			products.vals = append(products.vals, obj("id", lm.product, "name", lm.product))
		}
	}
	accounts, keys := arr(), arr()
	for _, a := range catalog.DefaultAccounts() {
		accounts.vals = append(accounts.vals, obj("id", a.ID, "credits", a.Credits))
	}
	for _, k := range catalog.DefaultKeys() {
		perms := arr()
		for _, p := range k.Permissions {
			perms.vals = append(perms.vals, jsonOf(string(p)))
		}
		keys.vals = append(keys.vals, obj("key", k.Key, "account", k.Account, "permissions", perms))
	}
	head := obj("products", products).toYAML()
	head.HeadComment = strings.Join([]string{
		"Imported from a live Media Generation Service by `mediagen-emulator import`.",
		"Models, products, statuses, input schemas and examples are as the service describes them;",
		"prices are rules fitted to free quotes (each model's pricing comment says how well);",
		"outputs and timing cannot be observed without spending credits, so they are inferred",
		"from the schema (outputs) or left to the emulator's defaults (timing).",
		"Check with: mediagen-emulator validate FILE; compare later with: mediagen-emulator drift",
	}, "\n")
	for _, p := range head.Content[1].Content[grouped:] {
		p.HeadComment = "not in the grouped listing: name inferred from the id"
	}
	out, err := encodeYAML(head)
	if err != nil {
		return nil, err
	}
	// One model at a time, so the YAML tree of only one is held.
	out = append(out, "models:\n"...)
	for _, lm := range models {
		y := obj("models", arr(lm.modelNode(lm.output, lm.rule))).toYAML()
		mn := y.Content[1].Content[0]
		mn.Content[0].HeadComment = strings.Join(lm.notes, "\n")
		for j := 0; j+1 < len(mn.Content); j += 2 {
			switch mn.Content[j].Value {
			case "pricing":
				mn.Content[j].HeadComment = strings.Join(lm.priceDoc, "\n")
			case "output":
				mn.Content[j].HeadComment = "inferred from the input schema: outputs are not observed (that would spend credits)"
			}
		}
		one, err := encodeYAML(y)
		if err != nil {
			return nil, err
		}
		out = append(out, one[len("models:\n"):]...)
	}
	tail := obj("accounts", accounts, "keys", keys).toYAML()
	tail.Content[0].HeadComment = "The emulator's standard test accounts and keys (see the README), not the live service's."
	rest, err := encodeYAML(tail)
	return append(out, rest...), err
}
