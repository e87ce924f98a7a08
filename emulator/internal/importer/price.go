package importer

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/pricing"
)

// observation is one quote seen on the live service.
type observation struct {
	label   string         // how the input was made, for messages
	input   *node          // as sent
	value   map[string]any // the same, as the emulator decodes inputs
	credits int64
}

// maxVariants bounds the values quoted for one property.
const maxVariants = 16

// maxProbesPerModel bounds the quotes spent learning one model's price.
const maxProbesPerModel = 64

// variants lists the values worth quoting a property at to see whether, and how, it drives the
// price: every enum value, a spread of counts, sizes and durations, a few text lengths, the
// other boolean. base is the property's value in the example (nil when absent).
func variants(p prop, base *node) []*node {
	var out []*node
	seen := map[string]bool{}
	if base != nil {
		seen[string(base.marshal())] = true
	} else if p.def != nil {
		seen[string(p.def.marshal())] = true
	}
	addNode := func(n *node) {
		k := string(n.marshal())
		if !seen[k] && len(out) < maxVariants {
			seen[k] = true
			out = append(out, n)
		}
	}
	num := func(f float64) {
		if p.typ == "integer" {
			f = math.Round(f)
		}
		if (p.min != nil && f < *p.min) || (p.max != nil && f > *p.max) || math.IsNaN(f) || math.IsInf(f, 0) {
			return
		}
		addNode(&node{kind: kNumber, text: strconv.FormatFloat(f, 'f', -1, 64)})
	}
	switch {
	case len(p.enum) > 0:
		for _, e := range p.enum {
			addNode(e)
		}
	case p.typ == "integer" || p.typ == "number":
		b := 1.0
		if base != nil {
			b, _ = strconv.ParseFloat(base.text, 64)
		} else if p.def != nil {
			b, _ = strconv.ParseFloat(p.def.text, 64)
		}
		lo, hi := 1.0, math.Max(4, b*3)
		if p.min != nil {
			lo = *p.min
		}
		if p.max != nil {
			// The far end of the range shows a small per-unit price best.
			hi = math.Min(*p.max, 1e6)
		}
		num(lo)
		num(hi)
		num(math.Round((lo + hi) / 2))
		num(b + 1)
		if p.typ == "number" {
			// Fractions tell a unit price from a price per whole unit.
			num(lo + 0.5)
			num(b + 0.25)
		}
	case p.typ == "array" && base != nil && base.kind == kArray && len(base.vals) > 0:
		// Lists priced by their length (several input images): repeat the first item.
		hi := 4
		if v := number(p.schema, "maxItems"); v != nil {
			hi = min(hi, int(*v))
		}
		lo := 1
		if v := number(p.schema, "minItems"); v != nil {
			lo = max(lo, int(*v))
		}
		for n := lo; n <= hi; n++ {
			list := &node{kind: kArray}
			for range n {
				list.vals = append(list.vals, base.vals[0].clone())
			}
			addNode(list)
		}
	case p.typ == "boolean":
		v := "true"
		if (base != nil && base.text == "true") || (base == nil && p.def != nil && p.def.text == "true") {
			v = "false"
		}
		addNode(&node{kind: kBool, text: v})
	case p.typ == "string" && p.format == "" && p.schema.get("pattern") == nil:
		for _, n := range []int{max(p.minLen, 10), 200, 2000} {
			if p.maxLen > 0 && n > p.maxLen {
				n = p.maxLen
			}
			if n < p.minLen || n <= 0 {
				continue
			}
			addNode(&node{kind: kString, text: filler(n)})
		}
	}
	return out
}

// filler is n characters of plain text.
func filler(n int) string {
	const words = "a calm harbour at dawn with boats "
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words)
	}
	return b.String()[:n]
}

// role is how a pricing rule uses a field.
type role int

const (
	roleMultiplyBy role = iota
	rolePerUnit
	rolePerLength
	roleMultiplier
	roleTable
)

// rolesFor lists the rules the catalog allows for a property, simplest first.
func rolesFor(p catalog.Property) []role {
	var out []role
	if p.Numeric() {
		out = append(out, roleMultiplyBy, rolePerUnit)
	}
	if len(p.Enum) > 0 {
		out = append(out, roleMultiplier, roleTable)
	}
	if len(p.Enum) == 0 && (p.Type == "string" || p.Type == "array") {
		out = append(out, rolePerLength)
	}
	return out
}

// rule is a candidate pricing rule with its numbers laid out for fitting.
type rule struct {
	base    float64
	units   []unitRule
	tables  []tableRule
	mults   []tableRule
	by      []string
	minimum *float64
}

type unitRule struct {
	field   string
	length  bool
	credits float64
}

type tableRule struct {
	field  string
	keys   []string
	values []float64
}

func (r *rule) clone() *rule {
	c := &rule{base: r.base, units: slices.Clone(r.units), by: slices.Clone(r.by), minimum: r.minimum}
	cloneAll := func(ts []tableRule) (out []tableRule) {
		for _, t := range ts {
			out = append(out, tableRule{t.field, t.keys, slices.Clone(t.values)})
		}
		return out
	}
	c.tables, c.mults = cloneAll(r.tables), cloneAll(r.mults)
	return c
}

// at is the table's value for the input's (or the default's) value of its field.
func (t tableRule) at(m *catalog.Model, in map[string]any) (float64, bool) {
	if v, ok := m.InputValue(in, t.field); ok {
		if i := slices.Index(t.keys, catalog.EnumKey(v)); i >= 0 {
			return t.values[i], true
		}
	}
	return 0, false
}

// params are pointers to the rule's free numbers.
func (r *rule) params() []*float64 {
	ps := []*float64{&r.base}
	for i := range r.units {
		ps = append(ps, &r.units[i].credits)
	}
	for _, ts := range [][]tableRule{r.tables, r.mults} {
		for i := range ts {
			for j := range ts[i].values {
				ps = append(ps, &ts[i].values[j])
			}
		}
	}
	return ps
}

// pricing is the rule in the catalog's form.
func (r *rule) pricing() catalog.Pricing {
	p := catalog.Pricing{Base: r.base, MultiplyBy: r.by, Minimum: r.minimum}
	for _, u := range r.units {
		up := catalog.UnitPrice{Field: u.field, Credits: u.credits}
		if u.length {
			up.Measure = "length"
		}
		p.PerUnit = append(p.PerUnit, up)
	}
	tables := func(ts []tableRule) (out []catalog.ValueTable) {
		for _, t := range ts {
			v := catalog.ValueTable{Field: t.field, Values: map[string]float64{}}
			for i, k := range t.keys {
				v.Values[k] = t.values[i]
			}
			out = append(out, v)
		}
		return out
	}
	p.Tables, p.Multipliers = tables(r.tables), tables(r.mults)
	return p
}

// size counts the numbers the rule writes: the simpler rule writes fewer. multiply_by writes
// none, so "base: 3, multiply_by: [num_images]" (a price per image) reads as simple as a unit
// price; a multiplier of 0 (a price that only the minimum holds up) counts extra, as a
// service rarely means one.
func (r *rule) size() int {
	n := len(r.units)
	if r.base != 0 {
		n++
	}
	for _, t := range r.tables {
		n += len(t.keys)
	}
	for _, t := range r.mults {
		n += len(t.keys)
		for _, v := range t.values {
			if v == 0 {
				n += 3
			}
		}
	}
	if r.minimum != nil {
		n++
	}
	return n
}

// raw is the rule's price before the minimum and rounding up: linear in each parameter.
func (r *rule) raw(m *catalog.Model, in map[string]any) float64 {
	sub := r.base
	for _, u := range r.units {
		v, ok := m.InputValue(in, u.field)
		if !ok {
			continue
		}
		if u.length {
			sub += u.credits * float64(pricing.Length(v))
		} else if n, ok := catalog.NumberOf(v); ok {
			sub += u.credits * n
		}
	}
	for _, t := range r.tables {
		if v, ok := t.at(m, in); ok {
			sub += v
		}
	}
	for _, t := range r.mults {
		if v, ok := t.at(m, in); ok {
			sub *= v
		}
	}
	for _, f := range r.by {
		if v, ok := m.InputValue(in, f); ok {
			if n, ok := catalog.NumberOf(v); ok {
				sub *= n
			}
		}
	}
	return sub
}

// mismatches counts the observations the rule does not reproduce, priced exactly as the
// emulator prices.
func (r *rule) mismatches(m *catalog.Model, obs []observation) []int {
	mm := *m
	mm.Pricing = r.pricing()
	var bad []int
	for i, o := range obs {
		if pricing.Credits(&mm, o.value) != o.credits {
			bad = append(bad, i)
		}
	}
	return bad
}

// fit is the outcome of fitting a price.
type fit struct {
	rule *rule
	bad  []int // observations the rule does not reproduce
}

// fitPrice finds the simplest rule that reproduces every observation. The first observation is
// the base input; the fields in relevant are those whose variation changed the price.
func fitPrice(m *catalog.Model, obs []observation, relevant []string) fit {
	if len(obs) == 0 {
		return fit{rule: &rule{base: 1}}
	}
	var roles [][]role
	var fields []string
	for _, f := range relevant {
		rs := rolesFor(m.Properties[f])
		if len(rs) == 0 {
			continue
		}
		fields = append(fields, f)
		roles = append(roles, rs)
	}
	combos := 1
	for _, rs := range roles {
		combos *= len(rs)
		if combos > 512 {
			// Too many fields to try every combination: give each its simplest rule.
			for i := range roles {
				roles[i] = roles[i][:1]
			}
			combos = 1
			break
		}
	}
	var best *fit
	bestScore := math.MaxInt
	minimums := minimumCandidates(obs)
	for c := range combos {
		choice := make([]role, len(fields))
		k := c
		for i, rs := range roles {
			choice[i] = rs[k%len(rs)]
			k /= len(rs)
		}
		for _, start := range starts(m, obs, fields, choice) {
			for _, mn := range minimums {
				r := start.clone()
				r.minimum = mn
				refine(m, obs, r)
				simplify(r)
				bad := r.mismatches(m, obs)
				score := len(bad)*10_000 + r.size()*100 + complexity(r)
				if score < bestScore {
					best, bestScore = &fit{rule: r, bad: bad}, score
				}
			}
		}
		if best != nil && len(best.bad) == 0 && combos > 64 {
			break
		}
	}
	if best == nil {
		return fit{rule: &rule{base: float64(obs[0].credits)}, bad: (&rule{base: float64(obs[0].credits)}).mismatches(m, obs)}
	}
	if len(best.bad) == 0 {
		best.rule = polish(m, obs, best.rule)
		simplify(best.rule)
	}
	return *best
}

// starts are the rules to refine from for one choice of roles: multiplier tables scaled three
// ways, and the base subtotal read from the base input's price or off the largest value of a
// unit-priced field.
func starts(m *catalog.Model, obs []observation, fields []string, choice []role) []*rule {
	norms := []int{normBase}
	if slices.Contains(choice, roleMultiplier) {
		norms = append(norms, normMax, normMin)
	}
	tops := []bool{false}
	if slices.Contains(choice, rolePerUnit) || slices.Contains(choice, rolePerLength) {
		tops = append(tops, true)
	}
	var out []*rule
	for _, norm := range norms {
		for _, top := range tops {
			if r := estimate(m, obs, fields, choice, norm, top); r != nil {
				out = append(out, r)
			}
		}
	}
	return out
}

// minimumCandidates are the minimums worth trying: the default (1), and the lowest price seen
// when it repeats (a floor) or is 0.
func minimumCandidates(obs []observation) []*float64 {
	out := []*float64{nil}
	low, count := obs[0].credits, 0
	for _, o := range obs {
		if o.credits < low {
			low, count = o.credits, 0
		}
		if o.credits == low {
			count++
		}
	}
	if low == 0 || (low != 1 && count > 1) {
		f := float64(low)
		out = append(out, &f)
	}
	return out
}

// Ways of scaling multiplier tables: the base input's value is 1, the largest is 1, or the
// smallest is 1. The rule means the same; one of them usually reads as the service's own.
const (
	normBase = iota
	normMax
	normMin
)

// variationsOf returns the observations whose input differs from the base input in field f
// alone.
func variationsOf(obs []observation, f string) []observation {
	var out []observation
	for _, o := range obs[1:] {
		if onlyDiffers(obs[0].value, o.value, f) {
			out = append(out, o)
		}
	}
	return out
}

func onlyDiffers(a, b map[string]any, f string) bool {
	if catalog.EnumKey(a[f]) == catalog.EnumKey(b[f]) && sameValue(a[f], b[f]) {
		return false
	}
	for k, v := range a {
		if k != f && !sameValue(v, b[k]) {
			return false
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok && k != f && v != nil {
			return false
		}
	}
	return true
}

func sameValue(a, b any) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// estimate sets a rule's numbers from the variations of one field at a time, reading the
// prices as exact; refine then makes them agree with the rounding.
func estimate(m *catalog.Model, obs []observation, fields []string, choice []role, norm int, fromTop bool) *rule {
	r := &rule{}
	base := obs[0]
	c0 := float64(base.credits)
	if c0 <= 0 {
		c0 = 1e-9
	}
	numberAt := func(in map[string]any, f string, length bool) (float64, bool) {
		v, ok := m.InputValue(in, f)
		if !ok {
			return 0, false
		}
		if length {
			return float64(pricing.Length(v)), true
		}
		return catalog.NumberOf(v)
	}
	// tableOf lays out a table over f's enum: the price seen with each value when f alone
	// varies (the base input's where none was seen), converted by value.
	tableOf := func(f string, value func(credits float64) float64) tableRule {
		t := tableRule{field: f}
		for _, e := range m.Properties[f].Enum {
			k, c := catalog.EnumKey(e), c0
			for _, o := range variationsOf(obs, f) {
				if v, ok := m.InputValue(o.value, f); ok && catalog.EnumKey(v) == k {
					c = float64(o.credits)
				}
			}
			t.keys = append(t.keys, k)
			t.values = append(t.values, value(c))
		}
		return t
	}
	// Multiplicative rules first: they scale everything else.
	m0 := 1.0
	for i, f := range fields {
		switch choice[i] {
		case roleMultiplyBy:
			r.by = append(r.by, f)
			if n, ok := numberAt(base.value, f, false); ok {
				m0 *= n
			}
		case roleMultiplier:
			t := tableOf(f, func(c float64) float64 { return c / c0 })
			scale := 1.0
			switch norm {
			case normMax:
				scale = slices.Max(t.values)
			case normMin:
				scale = slices.Min(t.values)
			}
			if scale <= 0 {
				return nil
			}
			for j := range t.values {
				t.values[j] /= scale
			}
			if v, ok := t.at(m, base.value); ok {
				m0 *= v
			}
			r.mults = append(r.mults, t)
		}
	}
	if m0 <= 0 {
		return nil
	}
	s0 := c0 / m0
	additive, extrapolated := 0.0, false
	for i, f := range fields {
		switch choice[i] {
		case rolePerUnit, rolePerLength:
			length := choice[i] == rolePerLength
			g0, _ := numberAt(base.value, f, length)
			// The slope comes from the two largest values seen: small ones may sit on the
			// minimum, which hides the slope.
			type point struct{ g, c float64 }
			pts := []point{{g0, c0}}
			for _, o := range variationsOf(obs, f) {
				if g, ok := numberAt(o.value, f, length); ok {
					pts = append(pts, point{g, float64(o.credits)})
				}
			}
			slices.SortFunc(pts, func(a, b point) int { return cmp.Compare(b.g, a.g) })
			u := 0.0
			if len(pts) >= 2 && pts[0].g != pts[1].g {
				u = math.Max(0, (pts[0].c-pts[1].c)/(pts[0].g-pts[1].g)/m0)
				if fromTop && !extrapolated {
					// Read the base input's subtotal off the largest value instead of its
					// own price, which may be the minimum.
					s0 = pts[0].c/m0 - u*(pts[0].g-g0)
					extrapolated = true
				}
			}
			r.units = append(r.units, unitRule{field: f, length: length, credits: u})
			additive += u * g0
		case roleTable:
			t := tableOf(f, func(c float64) float64 { return (c - c0) / m0 })
			low := slices.Min(t.values)
			for j := range t.values {
				t.values[j] -= low
			}
			if v, ok := t.at(m, base.value); ok {
				additive += v
			}
			r.tables = append(r.tables, t)
		}
	}
	r.base = math.Max(0, s0-additive)
	return r
}

// refine moves each number, one at a time, to the simplest value that keeps every observation
// it affects inside its rounding interval, until nothing moves.
func refine(m *catalog.Model, obs []observation, r *rule) {
	refineExcept(m, obs, r, -1)
}

// refineExcept is refine holding the parameter at index fixed (-1: none).
func refineExcept(m *catalog.Model, obs []observation, r *rule, fixed int) {
	const eps = 1e-9
	minimum := 1.0
	if r.minimum != nil {
		minimum = *r.minimum
	}
	for range 8 {
		moved := false
		for pi, p := range r.params() {
			if pi == fixed {
				continue
			}
			cur := *p
			var spans []span
			for _, o := range obs {
				*p = 0
				a := r.raw(m, o.value)
				*p = 1
				b := r.raw(m, o.value) - a
				*p = cur
				if math.Abs(b) < 1e-12 {
					continue
				}
				c := float64(o.credits)
				var l, h float64
				switch {
				case c > minimum+eps:
					l, h = (c-1+eps-a)/b, (c+eps-a)/b
				case math.Abs(c-minimum) <= eps:
					l, h = math.Inf(-1), (minimum+eps-a)/b
				default:
					continue
				}
				if b < 0 {
					l, h = h, l
				}
				spans = append(spans, span{math.Max(l, -eps), h})
			}
			lo, hi, ok := bestSpan(spans, cur)
			if !ok || math.IsInf(hi, 1) {
				continue
			}
			if v := simplest(lo, hi, cur); v != cur {
				*p = v
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}

// polish tries rounder values for each number of a rule that already reproduces every
// observation, letting the others follow; it keeps a change that still reproduces every
// observation and needs fewer decimals.
func polish(m *catalog.Model, obs []observation, r *rule) *rule {
	for range 3 {
		improved := false
		for pi := range r.params() {
			cur := *r.params()[pi]
			for _, q := range []float64{1, 2, 4, 5, 10, 20, 100} {
				for _, k := range []float64{math.Floor(cur * q), math.Ceil(cur * q)} {
					v := k / q
					if v == cur || v < 0 {
						continue
					}
					c := r.clone()
					*c.params()[pi] = v
					refineExcept(m, obs, c, pi)
					if complexity(c) < complexity(r) && len(c.mismatches(m, obs)) == 0 {
						r, improved = c, true
					}
				}
			}
		}
		if !improved {
			break
		}
	}
	return r
}

// span is the range (lo, hi] of a number that keeps one observation's price.
type span struct{ lo, hi float64 }

// bestSpan returns the range agreeing with the most observations: all of them when they can
// agree, else as many as can — so one wrong number elsewhere does not freeze this one.
func bestSpan(spans []span, cur float64) (lo, hi float64, ok bool) {
	if len(spans) == 0 {
		return 0, 0, false
	}
	bestCount := 0
	for _, cand := range spans {
		x := cand.hi
		if x < 0 {
			continue
		}
		l, h, n := math.Inf(-1), math.Inf(1), 0
		for _, s := range spans {
			if s.lo < x && x <= s.hi {
				n++
				l, h = math.Max(l, s.lo), math.Min(h, s.hi)
			}
		}
		better := n > bestCount || (n == bestCount && l < cur && cur <= h)
		if better {
			bestCount, lo, hi = n, l, h
		}
	}
	return lo, hi, bestCount > 0
}

// denominators are tried in order: a price in halves reads simpler than one in tenths, tenths
// simpler than thousandths.
var denominators = []float64{1, 2, 4, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000,
	10000, 20000, 25000, 50000, 100000, 1e6, 1e7, 1e8}

// simplest returns the number of smallest denominator in (lo, hi] (or [lo, hi] when lo is 0),
// closest to near among those.
func simplest(lo, hi, near float64) float64 {
	if hi < 0 {
		return near
	}
	lo = math.Max(lo, 0)
	for _, q := range denominators {
		a := math.Floor(lo*q) + 1
		if lo == 0 {
			a = 0
		}
		b := math.Floor(hi*q + 1e-9)
		if a > b {
			continue
		}
		k := math.Round(near * q)
		k = math.Min(math.Max(k, a), b)
		return k / q
	}
	return (lo + hi) / 2
}

// simplify drops rules that do nothing: tables of zeros, multipliers of ones, unit prices of 0.
func simplify(r *rule) {
	r.units = slices.DeleteFunc(r.units, func(u unitRule) bool { return u.credits == 0 })
	r.tables = slices.DeleteFunc(r.tables, func(t tableRule) bool {
		return !slices.ContainsFunc(t.values, func(v float64) bool { return v != 0 })
	})
	r.mults = slices.DeleteFunc(r.mults, func(t tableRule) bool {
		return !slices.ContainsFunc(t.values, func(v float64) bool { return v != 1 })
	})
}

// complexity sums how many decimal places the rule's numbers need, to prefer 6.5 over 6.47.
func complexity(r *rule) int {
	n := 0
	for _, p := range r.params() {
		s := strconv.FormatFloat(*p, 'f', -1, 64)
		if i := strings.IndexByte(s, '.'); i >= 0 {
			n += len(s) - i - 1
		}
	}
	return n
}
