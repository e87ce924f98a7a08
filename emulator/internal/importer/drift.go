package importer

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/pricing"
)

// maxSchemaChanges bounds the schema differences listed per model.
const maxSchemaChanges = 50

// Difference is one way a catalog file and the live service disagree.
type Difference struct {
	// Kind is added, removed, renamed, status, changed, schema, price or product; with --spend
	// also shape, header, status (of the provoked error) and timing.
	Kind string
	// Model is the model's id (for renamed ids, the file's; for product, the product's id; for
	// shape, header and status, what was compared: job, file or error).
	Model string
	// Detail says what differs.
	Detail string
}

// String formats the difference as one line of the drift report.
func (d Difference) String() string {
	if d.Detail == "" {
		return fmt.Sprintf("%-8s %s", d.Kind, d.Model)
	}
	return fmt.Sprintf("%-8s %s: %s", d.Kind, d.Model, d.Detail)
}

// Drift compares the catalog file with the live service and lists every difference: models
// added, removed or renamed, changes of status and of the other listed fields, input schema
// changes (as JSON Pointers), price changes on the file's example inputs and, when the file
// declares products (or with Grouped), product names and descriptions.
func Drift(ctx context.Context, o Options, catalogFile string) ([]Difference, error) {
	data, err := os.ReadFile(catalogFile)
	if err != nil {
		return nil, err
	}
	cat, err := catalog.Parse(catalogFile, data)
	if err != nil {
		return nil, err
	}
	c, err := o.client()
	if err != nil {
		return nil, err
	}
	// What the file declares is compared, whether or not it was imported with --grouped: only
	// the grouped listing shows products' names. A product named after its id, with no
	// description, declares nothing to compare: import writes one where it knew no name.
	compared := namesDeclared(cat)
	if o.Grouped {
		compared = func(*catalog.Product) bool { return true }
	} else if slices.ContainsFunc(cat.Products, compared) {
		o.Grouped = true
	}
	l, err := readListing(ctx, c, &o)
	if err != nil {
		return nil, err
	}
	for _, w := range l.warnings {
		o.logf("warning: %s", w)
	}
	var diffs []Difference
	add := func(kind, model, format string, args ...any) {
		diffs = append(diffs, Difference{Kind: kind, Model: model, Detail: fmt.Sprintf(format, args...)})
	}
	inFile := map[string]bool{}
	var removed []*catalog.Model
	type pair struct {
		file *catalog.Model
		live *node
	}
	var both []pair
	for _, m := range cat.Models {
		if !o.selected(m.ID) {
			continue
		}
		inFile[m.ID] = true
		doc, err := c.do(ctx, http.MethodGet, ModelPath(m.ID), nil, nil)
		if err != nil {
			if statusOf(err) == http.StatusNotFound {
				removed = append(removed, m)
				continue
			}
			return nil, err
		}
		both = append(both, pair{m, doc})
	}
	type fresh struct {
		id  string
		doc *node
	}
	var added []fresh
	for _, it := range l.items {
		id := it.str("id")
		if inFile[id] || !o.selected(id) {
			continue
		}
		doc, err := c.do(ctx, http.MethodGet, ModelPath(id), nil, nil)
		if err != nil {
			return nil, err
		}
		added = append(added, fresh{id, doc})
	}
	// A model that left under one id and came back under another, with the same name and
	// schema, was renamed.
	renamedTo := map[string]string{}
	taken := map[string]bool{}
	for _, m := range removed {
		for _, a := range added {
			if taken[a.id] || a.doc.str("name") != m.Name {
				continue
			}
			if schemaChanges(m, a.doc, 1) == nil {
				renamedTo[m.ID], taken[a.id] = a.id, true
				break
			}
		}
	}
	var picks cheapest
	if o.Spend > 0 {
		picks = cheapest{}
	}
	for _, p := range both {
		ds, err := compareModel(ctx, c, l, p.file, p.live, picks)
		if err != nil {
			return nil, err
		}
		diffs = append(diffs, ds...)
	}
	if o.Grouped {
		diffs = append(diffs, compareProducts(cat, l, inFile, compared)...)
	}
	for _, m := range removed {
		if to, ok := renamedTo[m.ID]; ok {
			add("renamed", m.ID, "now %s", to)
			continue
		}
		add("removed", m.ID, "")
	}
	for _, a := range added {
		if taken[a.id] {
			continue
		}
		add("added", a.id, "%q (%s, %s)", a.doc.str("name"), a.doc.str("category"), a.doc.str("status"))
	}
	if o.Spend > 0 {
		ds, err := spend(ctx, c, &o, catalogFile, data, cat, picks)
		if err != nil {
			return nil, err
		}
		diffs = append(diffs, ds...)
	}
	return diffs, nil
}

// namesDeclared reports whether the file declares a product's name or description: a product it
// lists whose name is more than its id, or that has a description. A product the catalog made
// for a model that names none (its id, name and description are the model's) declares nothing.
func namesDeclared(cat *catalog.Catalog) func(*catalog.Product) bool {
	return func(p *catalog.Product) bool {
		if m, ok := cat.Model(p.ID); ok && m.Product == p.ID && m.Name == p.Name && m.Description == p.Description {
			return false
		}
		return p.Name != p.ID || p.Description != ""
	}
}

// compareProducts compares the names and descriptions of the file's products that compared
// accepts with the grouped listing's, for the products of the models compared. A product the
// grouped listing does not show (none of its models is ready) is not compared: its models'
// product is.
func compareProducts(cat *catalog.Catalog, l *listing, inFile map[string]bool, compared func(*catalog.Product) bool) []Difference {
	live := map[string]*node{}
	for _, g := range l.products {
		if id := g.str("product"); id != "" && live[id] == nil {
			live[id] = g
		}
	}
	used := map[string]bool{}
	for _, m := range cat.Models {
		if inFile[m.ID] {
			used[m.Product] = true
		}
	}
	var out []Difference
	for _, p := range cat.Products {
		g := live[p.ID]
		if g == nil || !used[p.ID] || !compared(p) {
			continue
		}
		// import names a product after its id when the service gives no name.
		for _, f := range []struct{ name, file, live string }{
			{"name", p.Name, cmp.Or(g.str("name"), p.ID)},
			{"description", p.Description, g.str("description")},
		} {
			if f.live != "" && f.live != f.file {
				out = append(out, Difference{Kind: "product", Model: p.ID, Detail: fmt.Sprintf("%s %q -> %q", f.name, f.file, f.live)})
			}
		}
	}
	return out
}

// compareModel lists how one model of the file differs from the live one, and offers each
// example it quotes to picks (which may be nil).
func compareModel(ctx context.Context, c *client, l *listing, m *catalog.Model, live *node, picks cheapest) ([]Difference, error) {
	var out []Difference
	add := func(kind, format string, args ...any) {
		out = append(out, Difference{Kind: kind, Model: m.ID, Detail: fmt.Sprintf(format, args...)})
	}
	liveStatus := live.str("status")
	if liveStatus == "" {
		liveStatus = catalog.StatusReady
	}
	if liveStatus != m.Status {
		add("status", "%s -> %s", m.Status, liveStatus)
	}
	if n := live.str("name"); n != m.Name {
		add("renamed", "name %q -> %q", m.Name, n)
	}
	product, mode := live.str("product"), live.str("mode")
	if pm, ok := l.modeOf[m.ID]; ok {
		product, mode = pm[0], pm[1]
	}
	for _, f := range []struct{ name, file, live string }{
		{"description", m.Description, live.str("description")},
		{"category", m.Category, live.str("category")},
		{"output_type", m.OutputType, live.str("output_type")},
		{"product", m.Product, product},
		{"mode", m.Mode, mode},
	} {
		if f.live != "" && f.live != f.file {
			add("changed", "%s %q -> %q", f.name, f.file, f.live)
		}
	}
	for _, ch := range schemaChanges(m, live, maxSchemaChanges) {
		switch ch.What {
		case "added":
			add("schema", "%s added: %s", orRoot(ch.Pointer), ch.New)
		case "removed":
			add("schema", "%s removed (was %s)", orRoot(ch.Pointer), ch.Old)
		default:
			add("schema", "%s changed: %s -> %s", orRoot(ch.Pointer), ch.Old, ch.New)
		}
	}
	if liveStatus != catalog.StatusReady {
		return out, nil
	}
	for i, ex := range m.Examples {
		input, err := parseJSON(ex)
		if err != nil || input.kind != kObject {
			continue
		}
		v, _ := input.value().(map[string]any)
		want := pricing.Credits(m, v)
		got, ok, err := quote(ctx, c, m.ID, input)
		switch {
		case err != nil && statusOf(err) == http.StatusConflict:
		case err != nil:
			return nil, err
		case !ok:
			add("price", "example %d is refused by the live service (invalid input)", i)
		case got != want:
			add("price", "example %d: %s in the file, %d live", i, credits(want), got)
		}
		if ok {
			picks.offer(m, i, input, got)
		}
	}
	return out, nil
}

// schemaChanges compares the file's input schema with the live one, read the way import reads
// it. When the live schema carries no examples, the file's (which import had to supply) are
// not counted as a change.
func schemaChanges(m *catalog.Model, live *node, limit int) []change {
	ls, err := modelSchema(live)
	if err != nil {
		return []change{{Pointer: "", What: "changed", Old: "(a schema)", New: "(no readable schema: " + err.Error() + ")"}}
	}
	liveRoot := ls.root
	fileRoot, err := parseJSON(m.SchemaJSON)
	if err != nil {
		return nil
	}
	if liveRoot.get("examples") == nil {
		fileRoot = fileRoot.clone()
		fileRoot.remove("examples")
	}
	return diffJSON(fileRoot, liveRoot, "", limit)
}

func orRoot(ptr string) string {
	if ptr == "" {
		return "(the schema)"
	}
	return ptr
}

// Report writes the drift report: one line per difference, then a summary.
func Report(diffs []Difference) string {
	var b strings.Builder
	for _, d := range diffs {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	if len(diffs) == 0 {
		b.WriteString("no drift: the catalog matches the live service\n")
	} else {
		fmt.Fprintf(&b, "%s\n", plural(len(diffs), "difference"))
	}
	return b.String()
}

// plural is n with the noun, in the plural unless n is 1.
func plural[N int | int64](n N, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// credits is n credits, in words.
func credits(n int64) string { return plural(n, "credit") }
