package catalog

import (
	"index/suffixarray"
	"slices"
	"sort"
	"strings"
)

// finder answers catalog searches without scanning every model: the ready models in order, by
// category, and a suffix array over their lower-cased ids, names and descriptions.
type finder struct {
	ready      []*Model
	byCategory map[string][]*Model
	index      *suffixarray.Index
	text       string // what the index is over
	starts     []int  // where each ready model's text begins in the index
}

// scanAbove is how many occurrences of a query make Find scan the text from model to model
// rather than sort every occurrence the index has: a query as common as that matches most models.
const scanAbove = 64

// fieldEnd separates the searchable fields, so a match cannot run from one into the next.
const fieldEnd = "\x00"

func newFinder(models []*Model) *finder {
	f := &finder{byCategory: map[string][]*Model{}}
	var text strings.Builder
	for _, m := range models {
		if !m.Ready() {
			continue
		}
		f.ready = append(f.ready, m)
		f.byCategory[m.Category] = append(f.byCategory[m.Category], m)
		f.starts = append(f.starts, text.Len())
		for _, field := range m.searchText {
			text.WriteString(field)
			text.WriteString(fieldEnd)
		}
	}
	f.text = text.String()
	f.index = suffixarray.New([]byte(f.text))
	return f
}

// Find returns the ready models whose id, name or description contains lowerQuery (already
// lower-cased; empty matches all) and, when category is not empty, that are in it — in catalog
// order. The result may be shared: callers must not modify it.
func (c *Catalog) Find(lowerQuery, category string) []*Model {
	f := c.finder
	all := f.ready
	if category != "" {
		all = f.byCategory[category]
	}
	if lowerQuery == "" {
		return all
	}
	if strings.Contains(lowerQuery, fieldEnd) {
		return nil
	}
	offsets := f.index.Lookup([]byte(lowerQuery), scanAbove+1)
	if len(offsets) == 0 {
		return nil
	}
	if len(offsets) > scanAbove {
		return f.scan(lowerQuery, category)
	}
	hits := make([]int, 0, len(offsets))
	for _, off := range offsets {
		hits = append(hits, sort.SearchInts(f.starts, off+1)-1)
	}
	slices.Sort(hits)
	var out []*Model
	for _, h := range slices.Compact(hits) {
		if m := f.ready[h]; category == "" || m.Category == category {
			out = append(out, m)
		}
	}
	return out
}

// scan finds the models whose text holds lowerQuery by searching the text once, from each match
// on to the next model's text; it costs a pass over the text however many models match.
func (f *finder) scan(lowerQuery, category string) []*Model {
	var out []*Model
	for at := 0; at < len(f.text); {
		i := strings.Index(f.text[at:], lowerQuery)
		if i < 0 {
			break
		}
		h := sort.SearchInts(f.starts, at+i+1) - 1
		if m := f.ready[h]; category == "" || m.Category == category {
			out = append(out, m)
		}
		at = len(f.text)
		if h+1 < len(f.starts) {
			at = f.starts[h+1]
		}
	}
	return out
}

// Group gathers models by product, products in order of their first model, and returns the
// products on the page [offset, offset+limit) with their models, and how many products there
// are in all. It touches each model once and builds only the page.
func (c *Catalog) Group(models []*Model, offset, limit int) ([]ProductModes, int) {
	position := make([]int32, len(c.Products)) // a product's place among the groups, plus one
	total := 0
	for _, m := range models {
		if position[m.productIndex] == 0 {
			total++
			position[m.productIndex] = int32(total)
		}
	}
	var page []ProductModes
	slot := make(map[int]int)
	for _, m := range models {
		place := int(position[m.productIndex]) - 1
		if place < offset || place >= offset+limit {
			continue
		}
		i, ok := slot[place]
		if !ok {
			i = len(page)
			slot[place] = i
			page = append(page, ProductModes{Product: c.Products[m.productIndex]})
		}
		page[i].Models = append(page[i].Models, m)
	}
	// A product enters the page at its first model, so the page is already in product order.
	return page, total
}

// ProductModes is one product of a grouped listing with its models, in catalog order.
type ProductModes struct {
	Product *Product
	Models  []*Model
}
