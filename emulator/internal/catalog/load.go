package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/inputs"
)

// sections are the top-level fields of a catalog file. Each is a list whose entries are decoded
// on their own and reported at their own lines.
var sections = []string{"accounts", "keys", "models", "products"}

// modelShape is one model as written in the file.
type modelShape struct {
	ID          string       `yaml:"id"`
	Name        string       `yaml:"name"`
	Description string       `yaml:"description"`
	Category    string       `yaml:"category"`
	Product     string       `yaml:"product"`
	Mode        string       `yaml:"mode"`
	OutputType  string       `yaml:"output_type"`
	Status      string       `yaml:"status"`
	InputSchema yaml.Node    `yaml:"input_schema"`
	Pricing     Pricing      `yaml:"pricing"`
	Timing      *Timing      `yaml:"timing"`
	Output      Output       `yaml:"output"`
	Inputs      *ModelInputs `yaml:"inputs"`
}

var (
	modelIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9._-]+)*$`)
	wordPattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
)

// ValidModelID reports whether a catalog can hold a model with this id: letters, digits, '.',
// '_' and '-' in segments joined by single slashes, and no segment "." or "..", so an id is
// always safe to put in a URL path.
func ValidModelID(id string) bool {
	return modelIDPattern.MatchString(id) && !strings.Contains("/"+id+"/", "/../") && !strings.Contains("/"+id+"/", "/./")
}

// DefaultAccounts are the accounts a catalog without accounts and keys gets.
func DefaultAccounts() []Account {
	return []Account{
		{ID: "acct_all", Credits: 1_000_000},
		{ID: "acct_read", Credits: 0},
		{ID: "acct_generate", Credits: 1_000_000},
		{ID: "acct_poor", Credits: 10},
	}
}

// DefaultKeys are the keys of the contract, which a catalog without accounts and keys gets.
func DefaultKeys() []Key {
	return []Key{
		{Key: "mg_test_all", Account: "acct_all", Permissions: []Permission{PermModelsRead, PermGenerate}},
		{Key: "mg_test_read", Account: "acct_read", Permissions: []Permission{PermModelsRead}},
		{Key: "mg_test_generate", Account: "acct_generate", Permissions: []Permission{PermGenerate}},
		{Key: "mg_test_poor", Account: "acct_poor", Permissions: []Permission{PermModelsRead, PermGenerate}},
	}
}

// IsCatalog reports whether a parsed YAML document looks like a catalog rather than a scenario,
// so `validate` can tell the two apart.
func IsCatalog(doc *yaml.Node) bool {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i < len(doc.Content); i += 2 {
		switch doc.Content[i].Value {
		case "models", "products", "accounts", "keys":
			return true
		}
	}
	return false
}

// ParseDocument reads YAML text into a node tree, reporting syntax errors and empty files.
func ParseDocument(r *Reporter, data []byte) *yaml.Node {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			r.At(0, "the file is empty")
		} else {
			r.YAMLError(err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		r.Node(&extra, "the file holds more than one YAML document")
		return nil
	case err != io.EOF:
		r.YAMLError(err)
		return nil
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		r.Node(&doc, "the top level must be a mapping")
		return nil
	}
	return &doc
}

// Parse loads a catalog from YAML text; name is the file name used in problems. The error, if
// any, is Problems listing everything wrong.
func Parse(name string, data []byte) (*Catalog, error) {
	return ParseWith(name, data, Options{Workers: runtime.GOMAXPROCS(0)})
}

// Options tune how a catalog loads.
type Options struct {
	// Workers is how many goroutines build models; a loader in the background leaves a core
	// free for the work in the foreground.
	Workers int
	// Trusted skips compiling schemas and checking examples at load: each schema compiles on
	// first use. Only for a catalog whose schemas are known good, as the embedded one is (its
	// tests load it untrusted).
	Trusted bool
}

// ParseWith is Parse with options.
func ParseWith(name string, data []byte, opts Options) (*Catalog, error) {
	r := &Reporter{File: name}
	workers := max(1, opts.Workers)
	var c *Catalog
	if plan, ok := planSplit(data); ok {
		c, ok = loadSplit(r, plan, workers, opts.Trusted)
		if !ok {
			r.Problems, c = nil, nil // a piece did not parse alone: parse whole, which says why
		} else if len(r.Problems) > 0 {
			return nil, r.Problems.Sorted()
		} else {
			return c, nil
		}
	}
	doc := ParseDocument(r, data)
	if doc == nil {
		return nil, r.Problems
	}
	c, top := loadTop(r, doc.Content[0])
	models := top["models"]
	size := max(1, (len(models)+4*workers-1)/(4*workers)) // a few runs a worker, to share out the work
	c.loadModels(r, len(models), size, func(k int) ([]*yaml.Node, bool) {
		return models[k*size : min(len(models), (k+1)*size)], true
	}, workers, opts.Trusted)
	c.finish(r, doc.Content[0], top)
	if len(r.Problems) > 0 {
		return nil, r.Problems.Sorted()
	}
	return c, nil
}

// loadSplit loads a catalog cut by planSplit, parsing and building its models run by run; ok is
// false when a piece does not parse alone.
func loadSplit(r *Reporter, plan *splitPlan, workers int, trusted bool) (c *Catalog, ok bool) {
	whole := plan.parseRest()
	if whole == nil {
		return nil, false
	}
	c, top := loadTop(r, whole.Content[0])
	if !c.loadModels(r, plan.items(), splitRun, plan.parseRun, workers, trusted) {
		return nil, false
	}
	c.finish(r, whole.Content[0], top)
	return c, true
}

// loadTop reads the top level of a catalog and its products, reporting every unknown,
// duplicate or misshapen section while still reading the others.
func loadTop(r *Reporter, root *yaml.Node) (*Catalog, map[string][]*yaml.Node) {
	c := &Catalog{
		modelByID:   map[string]*Model{},
		productByID: map[string]*Product{},
		keyByToken:  map[string]*Key{},
	}
	top := map[string][]*yaml.Node{}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch {
		case seen[k.Value]:
			r.Node(k, "duplicate field %q", k.Value)
			continue
		case !slices.Contains(sections, k.Value):
			r.Node(k, "unknown field %q (known: %s)", k.Value, strings.Join(sections, ", "))
			continue
		}
		seen[k.Value] = true
		for v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		switch {
		case v.Kind == yaml.SequenceNode:
			top[k.Value] = v.Content
		case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null":
		default:
			r.Node(v, "%s must be a list", k.Value)
		}
	}
	for _, n := range top["products"] {
		c.loadProduct(r, n)
	}
	return c, top
}

// finish checks that there are models, reads accounts and keys, and builds the search index.
func (c *Catalog) finish(r *Reporter, root *yaml.Node, top map[string][]*yaml.Node) {
	if len(c.Models) == 0 && len(r.Problems) == 0 {
		r.Node(root, "the catalog defines no models")
	}
	if len(top["accounts"]) == 0 && len(top["keys"]) == 0 {
		c.Accounts, c.Keys = DefaultAccounts(), DefaultKeys()
	} else {
		c.loadAccounts(r, top["accounts"], top["keys"])
	}
	for i := range c.Keys {
		c.keyByToken[c.Keys[i].Key] = &c.Keys[i]
	}
	if len(r.Problems) == 0 {
		c.finder = newFinder(c.Models)
	}
}

func (c *Catalog) loadProduct(r *Reporter, n *yaml.Node) {
	var p Product
	if !DecodeStrict(r, n, &p) {
		return
	}
	switch {
	case p.ID == "":
		r.Node(n, "product has no id")
	case c.productByID[p.ID] != nil:
		r.Node(n, "duplicate product id %q", p.ID)
	default:
		if p.Name == "" {
			r.Node(n, "product %q has no name", p.ID)
		}
		// Registered even with problems, so its models are not also reported as naming an
		// unknown product.
		p.index = len(c.Products)
		c.productByID[p.ID] = &p
		c.Products = append(c.Products, &p)
	}
}

// loadModels builds count models, given in runs of size that parse on demand, in parallel, then
// registers them in file order. Each worker parses a run, builds its models and lets the run's
// nodes go. It returns false when a run does not parse.
func (c *Catalog) loadModels(r *Reporter, count, size int, parseRun func(int) ([]*yaml.Node, bool), workers int, trusted bool) bool {
	runs := (count + size - 1) / size
	type result struct {
		model    *Model
		line     int
		problems Problems
	}
	results := make([]result, count)
	cache := newSchemaCache()
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(workers, runs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < runs && !failed.Load(); k = int(next.Add(1) - 1) {
				nodes, ok := parseRun(k)
				if !ok {
					failed.Store(true)
					return
				}
				for j, n := range nodes {
					mr := &Reporter{File: r.File}
					m := c.buildModel(mr, n, cache, trusted)
					results[k*size+j] = result{m, n.Line, mr.Problems}
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return false
	}
	for _, res := range results {
		r.Problems = append(r.Problems, res.problems...)
		m := res.model
		if m == nil {
			continue
		}
		if c.modelByID[m.ID] != nil {
			r.At(res.line, "duplicate model id %q", m.ID)
			continue
		}
		if m.ownProduct {
			if c.productByID[m.ID] != nil {
				r.At(res.line, "model %q has no product, and a product already has its id; name its product", m.ID)
				continue
			}
			p := &Product{ID: m.ID, Name: m.Name, Description: m.Description, index: len(c.Products)}
			c.productByID[p.ID] = p
			c.Products = append(c.Products, p)
		}
		m.productIndex = c.productByID[m.Product].index
		c.modelByID[m.ID] = m
		c.Models = append(c.Models, m)
	}
	return true
}

// buildModel decodes and checks one model; it returns nil when the model has problems. It reads
// only the products, so models can be built concurrently.
func (c *Catalog) buildModel(r *Reporter, n *yaml.Node, cache *schemaCache, trusted bool) *Model {
	var s modelShape
	if n.Kind != yaml.MappingNode {
		r.Node(n, "a model must be a mapping of its fields")
		return nil
	}
	// Unknown fields and values of the wrong type are reported, and the rest of the model is
	// still checked, so one pass finds everything wrong with it.
	Strict{}.Check(r, n, reflect.TypeOf(s))
	if err := n.Decode(&s); err != nil {
		r.YAMLError(err)
	}
	line := n.Line
	switch {
	case s.ID == "":
		r.At(line, "model has no id")
		return nil
	case !ValidModelID(s.ID):
		r.At(line, "model id %q may hold only letters, digits, '.', '_', '-' and single '/' between segments", s.ID)
	}
	// A model may leave out its mode (it is then its category) and its status (ready); without a
	// product it is a product of its own, so a file of models alone is a whole catalog.
	if s.Mode == "" && s.Category != "" {
		s.Mode = s.Category
	}
	if s.Status == "" {
		s.Status = StatusReady
	}
	for _, f := range []struct{ name, value string }{
		{"name", s.Name}, {"description", s.Description}, {"category", s.Category}, {"mode", s.Mode}, {"status", s.Status},
	} {
		if strings.TrimSpace(f.value) == "" {
			r.At(line, "model %q has no %s", s.ID, f.name)
		}
	}
	if s.Category != "" && !wordPattern.MatchString(s.Category) {
		r.At(line, "model %q: category %q must be lower-case words joined by '-'", s.ID, s.Category)
	}
	if s.Status != "" && !wordPattern.MatchString(s.Status) {
		r.At(line, "model %q: status %q must be a lower-case word", s.ID, s.Status)
	}
	if s.Product != "" && c.productByID[s.Product] == nil {
		r.At(line, "model %q names unknown product %q", s.ID, s.Product)
	}
	switch s.OutputType {
	case OutputImage, OutputVideo, OutputAudio:
	default:
		r.At(line, "model %q: output_type %q must be image, video or audio", s.ID, s.OutputType)
	}
	m := &Model{
		ID: s.ID, Name: s.Name, Description: s.Description, Category: s.Category,
		Product: s.Product, Mode: s.Mode, OutputType: s.OutputType, Status: s.Status,
		Pricing: s.Pricing, Output: s.Output, Inputs: s.Inputs,
	}
	if s.Product == "" {
		m.Product, m.ownProduct = s.ID, true
	}
	if s.InputSchema.Kind == 0 {
		r.At(line, "model %q has no input_schema", s.ID)
		return nil
	}
	// A schema that does not compile still names its properties, so the rules that read them
	// are checked too; one that could not be read leaves nothing to check them against.
	if !compileSchema(r, m, &s.InputSchema, cache, trusted) && m.Properties == nil {
		return nil
	}
	checkPricing(r, m, n)
	m.Timing = checkTiming(r, m, s.Timing, n)
	checkOutput(r, m, n)
	checkInputs(r, m, n)
	if len(r.Problems) > 0 {
		return nil
	}
	m.searchText = [3]string{strings.ToLower(m.ID), strings.ToLower(m.Name), strings.ToLower(m.Description)}
	if err := m.encode(); err != nil {
		r.At(line, "model %q: %v", m.ID, err)
		return nil
	}
	return m
}

func (c *Catalog) loadAccounts(r *Reporter, accounts, keys []*yaml.Node) {
	ids := map[string]bool{}
	for i := range accounts {
		var a Account
		if !DecodeStrict(r, accounts[i], &a) {
			continue
		}
		switch {
		case a.ID == "":
			r.Node(accounts[i], "account has no id")
		case ids[a.ID]:
			r.Node(accounts[i], "duplicate account id %q", a.ID)
		case a.Credits < 0 || a.Credits > MaxAccountCredits:
			r.Node(accounts[i], "account %q: credits must be from 0 to %d", a.ID, int64(MaxAccountCredits))
			ids[a.ID] = true // known, so its keys are not also reported as naming an unknown account
		default:
			ids[a.ID] = true
			c.Accounts = append(c.Accounts, a)
		}
	}
	tokens := map[string]bool{}
	for i := range keys {
		var k Key
		n := keys[i]
		if !DecodeStrict(r, n, &k) {
			continue
		}
		ok := true
		switch {
		case k.Key == "":
			r.Node(n, "key has no key (the bearer token)")
			ok = false
		case strings.ContainsAny(k.Key, " \t\r\n"):
			r.Node(n, "key %q holds white space, which a bearer token cannot", k.Key)
			ok = false
		case tokens[k.Key]:
			r.Node(n, "duplicate key %q", k.Key)
			ok = false
		}
		if !ids[k.Account] {
			r.Node(n, "key %q names unknown account %q", k.Key, k.Account)
			ok = false
		}
		for _, p := range k.Permissions {
			if p != PermModelsRead && p != PermGenerate {
				r.Node(n, "key %q: unknown permission %q (known: models:read, generate)", k.Key, p)
				ok = false
			}
		}
		if ok {
			tokens[k.Key] = true
			c.Keys = append(c.Keys, k)
		}
	}
}

// lineOfField finds the line of a field inside a mapping node, for problems about that field.
func lineOfField(n *yaml.Node, path ...string) int {
	line := n.Line
	for _, name := range path {
		found := false
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == name {
					line, n, found = n.Content[i].Line, n.Content[i+1], true
					break
				}
			}
		}
		if !found {
			break
		}
	}
	return line
}

func checkPricing(r *Reporter, m *Model, n *yaml.Node) {
	p := m.Pricing
	line := lineOfField(n, "pricing")
	if p.Base < 0 {
		r.At(line, "model %q: pricing.base must be >= 0", m.ID)
	}
	if p.Minimum != nil && *p.Minimum < 0 {
		r.At(line, "model %q: pricing.minimum must be >= 0", m.ID)
	}
	for _, u := range p.PerUnit {
		prop, ok := m.property(r, line, "pricing.per_unit", u.Field)
		if !ok {
			continue
		}
		switch u.Measure {
		case "", "value":
			if !prop.Numeric() {
				r.At(line, "model %q: pricing.per_unit field %q is not numeric; use measure: length for text or lists", m.ID, u.Field)
			}
		case "length":
			if prop.Type != "string" && prop.Type != "array" {
				r.At(line, "model %q: pricing.per_unit field %q: measure length needs a string or array", m.ID, u.Field)
			}
		default:
			r.At(line, "model %q: pricing.per_unit measure %q must be value or length", m.ID, u.Measure)
		}
		if u.Credits < 0 {
			r.At(line, "model %q: pricing.per_unit credits must be >= 0", m.ID)
		}
	}
	for _, group := range []struct {
		name   string
		tables []ValueTable
	}{{"tables", p.Tables}, {"multipliers", p.Multipliers}} {
		for _, t := range group.tables {
			prop, ok := m.property(r, line, "pricing."+group.name, t.Field)
			if !ok {
				continue
			}
			if len(prop.Enum) == 0 {
				r.At(line, "model %q: pricing.%s field %q has no enum to look values up in", m.ID, group.name, t.Field)
				continue
			}
			enum := map[string]bool{}
			for _, v := range prop.Enum {
				enum[EnumKey(v)] = true
				if _, ok := t.Values[EnumKey(v)]; !ok {
					r.At(line, "model %q: pricing.%s for %q gives no value for %q", m.ID, group.name, t.Field, EnumKey(v))
				}
			}
			for _, k := range sortedKeys(t.Values) {
				if !enum[k] {
					r.At(line, "model %q: pricing.%s for %q names %q, which is not in the field's enum", m.ID, group.name, t.Field, k)
				}
				if t.Values[k] < 0 {
					r.At(line, "model %q: pricing.%s for %q: %q must be >= 0", m.ID, group.name, t.Field, k)
				}
			}
		}
	}
	for _, f := range p.MultiplyBy {
		m.numericField(r, line, "pricing.multiply_by", f)
	}
}

func checkTiming(r *Reporter, m *Model, t *Timing, n *yaml.Node) Timing {
	out := Timing{Run: defaultRun, QueueTimeout: defaultQueueTimeout}
	if t == nil {
		return out
	}
	line := lineOfField(n, "timing")
	if t.Queue < 0 || t.Run < 0 || t.QueueTimeout < 0 {
		r.At(line, "model %q: timing durations must not be negative", m.ID)
	}
	out.Queue = t.Queue
	if t.Run > 0 {
		out.Run = t.Run
	}
	if t.QueueTimeout > 0 {
		out.QueueTimeout = t.QueueTimeout
	}
	if t.RunPerUnit != nil {
		m.numericField(r, line, "timing.run_per_unit", t.RunPerUnit.Field)
		if t.RunPerUnit.Each < 0 {
			r.At(line, "model %q: timing.run_per_unit.each must not be negative", m.ID)
		}
		out.RunPerUnit = t.RunPerUnit
	}
	return out
}

func checkOutput(r *Reporter, m *Model, n *yaml.Node) {
	o := &m.Output
	line := lineOfField(n, "output")
	formats := Formats[m.OutputType]
	if o.Format == "" && len(formats) > 0 {
		o.Format = formats[0]
	}
	if len(formats) > 0 && !slices.Contains(formats, o.Format) {
		r.At(line, "model %q: output.format %q must be one of %s for %s", m.ID, o.Format, strings.Join(formats, ", "), m.OutputType)
	}
	if o.FormatField != "" {
		if prop, ok := m.property(r, line, "output.format_field", o.FormatField); ok {
			for _, v := range prop.Enum {
				if !slices.Contains(formats, EnumKey(v)) {
					r.At(line, "model %q: output.format_field %q offers %q, which %s outputs cannot be", m.ID, o.FormatField, EnumKey(v), m.OutputType)
				}
			}
		}
	}
	if o.Count < 0 || o.Count > 16 {
		r.At(line, "model %q: output.count must be between 1 and 16", m.ID)
	}
	if o.Count == 0 {
		o.Count = 1
	}
	for _, f := range []struct{ name, field string }{
		{"count_field", o.CountField}, {"width_field", o.WidthField}, {"height_field", o.HeightField},
		{"duration_field", o.DurationField},
	} {
		if f.field != "" {
			m.numericField(r, line, "output."+f.name, f.field)
		}
	}
	for _, f := range []struct{ name, field string }{
		{"aspect_ratio_field", o.AspectRatioField}, {"resolution_field", o.ResolutionField},
		{"duration_from_text", o.DurationFromText}, {"size_field", o.SizeField},
	} {
		if f.field != "" {
			m.property(r, line, "output."+f.name, f.field)
		}
	}
	if o.Delivery != "" && o.Delivery != "url" && o.Delivery != "inline" {
		r.At(line, "model %q: output.delivery %q must be url or inline", m.ID, o.Delivery)
	}
	if o.DeliveryField != "" {
		if prop, ok := m.property(r, line, "output.delivery_field", o.DeliveryField); ok && prop.Type != "boolean" {
			r.At(line, "model %q: output.delivery_field %q must name a boolean member", m.ID, o.DeliveryField)
		}
	}
	if (o.WidthField == "") != (o.HeightField == "") {
		r.At(line, "model %q: output.width_field and output.height_field go together", m.ID)
	}
	if o.Width < 0 || o.Height < 0 || o.Width > 8192 || o.Height > 8192 {
		r.At(line, "model %q: output width and height must be between 1 and 8192", m.ID)
	}
	if m.OutputType != OutputAudio && (o.Width == 0 || o.Height == 0) {
		o.Width, o.Height = DefaultSize(m.OutputType)
	}
	if m.OutputType != OutputImage && o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Duration < 0 || o.Duration > 600 {
		r.At(line, "model %q: output.duration must be between 0 and 600 seconds", m.ID)
	}
	o.sizes = map[string][2]int{}
	for _, name := range sortedKeys(o.Sizes) {
		w, h, ok := ParseSize(o.Sizes[name])
		if !ok {
			r.At(line, "model %q: output.sizes %q: %q must be WIDTHxHEIGHT", m.ID, name, o.Sizes[name])
			continue
		}
		o.sizes[name] = [2]int{w, h}
	}
	if o.SizeField != "" && len(o.Sizes) > 0 {
		if prop, ok := m.Properties[o.SizeField]; ok {
			for _, v := range prop.Enum {
				if _, ok := o.sizes[EnumKey(v)]; !ok {
					r.At(line, "model %q: output.sizes gives no size for %q of %q", m.ID, EnumKey(v), o.SizeField)
				}
			}
		}
	}
}

// checkInputs reports a model's inputs: rules out of bounds, and media marks that name no
// format: uri member or no kind.
func checkInputs(r *Reporter, m *Model, n *yaml.Node) {
	in := m.Inputs
	if in == nil {
		return
	}
	line := lineOfField(n, "inputs")
	in.Check("inputs", false, func(format string, args ...any) {
		r.At(line, "model %q: "+format, append([]any{m.ID}, args...)...)
	})
	if in.Media == nil {
		return
	}
	found := map[string]bool{}
	for _, mem := range inputs.Members(m.SchemaJSON, in.Media) {
		found[mem.Name] = true
	}
	for _, name := range sortedKeys(in.Media) {
		switch {
		case !slices.Contains(inputs.MarkKinds, in.Media[name]):
			r.At(line, "model %q: inputs.media.%s %q must be one of %s", m.ID, name, in.Media[name], strings.Join(inputs.MarkKinds, ", "))
		case !found[name]:
			r.At(line, "model %q: inputs.media names %q, which is not a top-level format: uri member of input_schema (or an array of them)", m.ID, name)
		}
	}
}

// SizeNamed returns the size an output.sizes entry names.
func (o *Output) SizeNamed(name string) (w, h int, ok bool) {
	s, ok := o.sizes[name]
	return s[0], s[1], ok
}

// ParseSize reads a size WIDTHxHEIGHT, each side 1 to 8192 pixels.
func ParseSize(s string) (w, h int, ok bool) {
	a, b, found := strings.Cut(s, "x")
	if !found {
		return 0, 0, false
	}
	w, err1 := strconv.Atoi(a)
	h, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || w < 1 || h < 1 || w > 8192 || h > 8192 {
		return 0, 0, false
	}
	return w, h, true
}

func (m *Model) property(r *Reporter, line int, what, field string) (Property, bool) {
	if field == "" {
		r.At(line, "model %q: %s names no field", m.ID, what)
		return Property{}, false
	}
	p, ok := m.Properties[field]
	if !ok {
		r.At(line, "model %q: %s names %q, which is not a top-level property of input_schema", m.ID, what, field)
	}
	return p, ok
}

// numericField reports the field what names when the input has no such property, or one that
// is not numeric.
func (m *Model) numericField(r *Reporter, line int, what, field string) {
	if prop, ok := m.property(r, line, what, field); ok && !prop.Numeric() {
		r.At(line, "model %q: %s field %q is not numeric", m.ID, what, field)
	}
}

// Numeric reports whether a property holds a number: an integer or a number, or a string whose
// enum values all read as numbers ("5", "10s"), as prices, timing and outputs read it.
func (p Property) Numeric() bool {
	if p.Type == "integer" || p.Type == "number" {
		return true
	}
	if p.Type != "string" || len(p.Enum) == 0 {
		return false
	}
	for _, v := range p.Enum {
		if _, ok := NumberOf(v); !ok {
			return false
		}
	}
	return true
}

// EnumKey spells an enum value the way pricing tables and size maps name it. Numbers are
// spelled one way whatever the input wrote (10, 10.0 and 1e1 are all "10"), since inputs are
// compared as JSON values.
func EnumKey(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

// NumberOf reads a number from a JSON value: a number, or a numeric string like "5" or "10s".
func NumberOf(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		// Past float64's range the parse fails but the value is still a (huge) number.
		return f, err == nil || math.IsInf(f, 0)
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(x), "s"), 64)
		return f, err == nil
	}
	return 0, false
}

// Categories lists the categories of ready models in catalog order of first appearance.
func (c *Catalog) Categories() []Category {
	var out []Category
	index := map[string]int{}
	for _, m := range c.Models {
		if !m.Ready() {
			continue
		}
		i, ok := index[m.Category]
		if !ok {
			i = len(out)
			index[m.Category] = i
			out = append(out, Category{ID: m.Category, OutputType: m.OutputType})
		}
		out[i].ModelCount++
	}
	return out
}

// Category is one task category with the number of ready models in it.
type Category = api.Category
