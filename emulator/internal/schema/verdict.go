package schema

import (
	"cmp"
	"encoding/json"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The schema library allocates on every call, even for a valid input: a location string for
// every property, a full error (message built with fmt) for every anyOf branch that fails, a
// big.Rat for every number. Most inputs are valid, and a valid input needs none of that. A
// verdict is a checker derived from a compiled schema that answers only "valid" or "not sure":
// when it says valid, the library would have returned nil; when it is not sure, the library
// decides, so every error an input hears is still the library's own.
//
// It mirrors the library's semantics keyword by keyword (jsonschema v5.3.1, schema.go; a test
// fails when the pinned version changes): the same checks on the same values, numbers compared
// exactly, the same format functions (picked as the compiler picks them) and regular
// expressions. A subschema with a keyword it does not implement is not sure whenever an input
// reaches it. "Not sure" is sticky: once any check is not sure, nothing the library would
// evaluate can be trusted not to fail, so the whole input goes to the library.

// verdict is the checker of one compiled schema.
type verdict struct {
	root *vnode
}

// verdictBudget bounds how many subschemas one check visits; past it the check gives up and the
// library decides, so a schema whose applicators multiply costs this checker little.
const verdictBudget = 100_000

// valid reports whether the input is certainly valid; false means only "not sure". A nil
// verdict is never sure.
func (vd *verdict) valid(input any) bool {
	if vd == nil {
		return false
	}
	c := checker{budget: verdictBudget}
	ok := c.valid(vd.root, input)
	return ok && !c.unsure
}

// Value kinds, as bits of a type mask. kindInteger is a type name only: a value is a number.
const (
	kindNull uint8 = 1 << iota
	kindBoolean
	kindObject
	kindArray
	kindNumber
	kindString
	kindInteger
)

var kindOfType = map[string]uint8{
	"null": kindNull, "boolean": kindBoolean, "object": kindObject, "array": kindArray,
	"number": kindNumber, "string": kindString, "integer": kindInteger,
}

// vnode is one compiled subschema as the checker reads it.
type vnode struct {
	bad    bool // uses a keyword the checker does not implement
	always int8 // a boolean schema: 1 true, -1 false, 0 neither
	types  uint8

	hasConst bool
	constVal any
	enum     *enumSet
	format   func(any) bool

	minProps, maxProps int
	required           []string
	props              map[string]*vnode
	patterns           []patternSchema
	noAdditional       bool   // additionalProperties: false
	additional         *vnode // additionalProperties as a schema
	propertyNames      *vnode
	depRequired        map[string][]string
	depSchemas         map[string]*vnode

	minItems, maxItems       int
	unique                   bool
	prefixItems              []*vnode
	items                    *vnode
	contains                 *vnode
	minContains, maxContains int

	minLength, maxLength int
	pattern              *regexp.Regexp

	minimum, exclusiveMinimum, maximum, exclusiveMaximum *bound
	multipleOf                                           *multiple

	ref                 *vnode
	allOf, anyOf, oneOf []*vnode
	not                 *vnode
	ifS, thenS, elseS   *vnode
}

type patternSchema struct {
	re *regexp.Regexp
	s  *vnode
}

// newVerdict derives the checker of a compiled schema, or nil when it cannot check any input.
func newVerdict(s *jsonschema.Schema) *verdict {
	if s == nil {
		return nil
	}
	b := builder{nodes: map[*jsonschema.Schema]*vnode{}}
	root := b.node(s)
	if root.bad || b.inPlaceCycle() {
		// A cycle of $ref, allOf and the like that never steps into the input is an infinite
		// loop to the library (the compiler refuses them; this does not rely on it).
		return nil
	}
	return &verdict{root: root}
}

type builder struct {
	nodes map[*jsonschema.Schema]*vnode
}

// node builds the vnode of s once; references make the schema a graph, so each schema is
// registered before its subschemas are built.
func (b *builder) node(s *jsonschema.Schema) *vnode {
	if n, ok := b.nodes[s]; ok {
		return n
	}
	n := &vnode{}
	b.nodes[s] = n
	if !supported(s) {
		n.bad = true
		return n
	}
	if s.Always != nil {
		n.always = -1
		if *s.Always {
			n.always = 1
		}
		return n
	}
	for _, t := range s.Types {
		k, ok := kindOfType[t]
		if !ok {
			n.bad = true
			return n
		}
		n.types |= k
	}
	if len(s.Constant) > 0 {
		n.hasConst, n.constVal = true, s.Constant[0]
		if !checkableData(n.constVal) {
			n.bad = true
		}
	}
	if len(s.Enum) > 0 {
		n.enum = newEnumSet(s.Enum)
		if n.enum == nil {
			n.bad = true
		}
	}
	n.format = formatCheck(s.Format)

	n.minProps, n.maxProps = s.MinProperties, s.MaxProperties
	n.required = s.Required
	if len(s.Properties) > 0 {
		n.props = make(map[string]*vnode, len(s.Properties))
		for name, ps := range s.Properties {
			n.props[name] = b.node(ps)
		}
	}
	for re, ps := range s.PatternProperties {
		n.patterns = append(n.patterns, patternSchema{re, b.node(ps)})
	}
	switch ap := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		n.noAdditional = !ap
	case *jsonschema.Schema:
		n.additional = b.node(ap)
	default:
		n.bad = true
	}
	if s.PropertyNames != nil {
		n.propertyNames = b.node(s.PropertyNames)
	}
	n.depRequired = s.DependentRequired
	if len(s.DependentSchemas) > 0 || len(s.Dependencies) > 0 {
		n.depSchemas = map[string]*vnode{}
		for name, ds := range s.DependentSchemas {
			n.depSchemas[name] = b.node(ds)
		}
		for name, dep := range s.Dependencies {
			// dependencies (before 2019-09) is dependentSchemas and dependentRequired in one.
			switch dep := dep.(type) {
			case *jsonschema.Schema:
				if _, dup := n.depSchemas[name]; dup {
					n.bad = true // both keywords name it: keep the checker simple
				}
				n.depSchemas[name] = b.node(dep)
			case []string:
				if _, dup := n.depRequired[name]; dup {
					n.bad = true
				}
				merged := make(map[string][]string, len(n.depRequired)+1)
				for k, v := range n.depRequired {
					merged[k] = v
				}
				merged[name] = dep
				n.depRequired = merged
			default:
				n.bad = true
			}
		}
	}

	n.minItems, n.maxItems, n.unique = s.MinItems, s.MaxItems, s.UniqueItems
	for _, ps := range s.PrefixItems {
		n.prefixItems = append(n.prefixItems, b.node(ps))
	}
	if s.Items2020 != nil {
		n.items = b.node(s.Items2020)
	}
	if s.Contains != nil && (s.MinContains != -1 || s.MaxContains != -1) {
		n.contains, n.minContains, n.maxContains = b.node(s.Contains), s.MinContains, s.MaxContains
	}

	n.minLength, n.maxLength, n.pattern = s.MinLength, s.MaxLength, s.Pattern

	var okBounds [5]bool
	n.minimum, okBounds[0] = newBound(s.Minimum)
	n.exclusiveMinimum, okBounds[1] = newBound(s.ExclusiveMinimum)
	n.maximum, okBounds[2] = newBound(s.Maximum)
	n.exclusiveMaximum, okBounds[3] = newBound(s.ExclusiveMaximum)
	n.multipleOf, okBounds[4] = newMultiple(s.MultipleOf)
	for _, ok := range okBounds {
		if !ok {
			n.bad = true
		}
	}

	if s.Ref != nil {
		n.ref = b.node(s.Ref)
	}
	n.allOf, n.anyOf, n.oneOf = b.list(s.AllOf), b.list(s.AnyOf), b.list(s.OneOf)
	if s.Not != nil {
		n.not = b.node(s.Not)
	}
	if s.If != nil {
		n.ifS = b.node(s.If)
		if s.Then != nil {
			n.thenS = b.node(s.Then)
		}
		if s.Else != nil {
			n.elseS = b.node(s.Else)
		}
	}
	return n
}

func (b *builder) list(list []*jsonschema.Schema) []*vnode {
	if len(list) == 0 {
		return nil
	}
	out := make([]*vnode, len(list))
	for i, s := range list {
		out[i] = b.node(s)
	}
	return out
}

// supported reports whether s uses only keywords the checker implements (annotations aside).
func supported(s *jsonschema.Schema) bool {
	if s.RecursiveRef != nil || s.DynamicRef != nil || s.RegexProperties ||
		s.UnevaluatedProperties != nil || s.UnevaluatedItems != nil ||
		s.Items != nil || s.AdditionalItems != nil || len(s.Extensions) > 0 ||
		s.ContentEncoding != "" || s.ContentMediaType != "" || s.ContentSchema != nil {
		return false
	}
	return true
}

// inPlaceCycle reports whether some subschema reaches itself through keywords that apply to the
// same value ($ref, allOf, anyOf, oneOf, not, if/then/else, dependent schemas).
func (b *builder) inPlaceCycle() bool {
	const (
		open = iota + 1
		done
	)
	state := map[*vnode]int{}
	var visit func(n *vnode) bool
	visit = func(n *vnode) bool {
		switch state[n] {
		case open:
			return true
		case done:
			return false
		}
		state[n] = open
		for _, m := range inPlace(n) {
			if visit(m) {
				return true
			}
		}
		state[n] = done
		return false
	}
	for _, n := range b.nodes {
		if visit(n) {
			return true
		}
	}
	return false
}

func inPlace(n *vnode) []*vnode {
	var out []*vnode
	for _, m := range []*vnode{n.ref, n.not, n.ifS, n.thenS, n.elseS} {
		if m != nil {
			out = append(out, m)
		}
	}
	out = append(out, n.allOf...)
	out = append(out, n.anyOf...)
	out = append(out, n.oneOf...)
	for _, m := range n.depSchemas {
		out = append(out, m)
	}
	return out
}

// checkableData reports whether a value from a schema (const, enum) is one the checker can
// compare: JSON as the library decodes it, with numbers it can read.
func checkableData(v any) bool {
	switch x := v.(type) {
	case nil, bool, string:
		return true
	case json.Number:
		_, ok := parseNumber(string(x))
		if ok {
			_, ok = new(big.Rat).SetString(string(x))
		}
		return ok
	case []any:
		for _, item := range x {
			if !checkableData(item) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, item := range x {
			if !checkableData(item) {
				return false
			}
		}
		return true
	}
	return false
}

// enumSet holds an enum's strings in a set, the rest in a list.
type enumSet struct {
	strings map[string]struct{}
	others  []any
}

func newEnumSet(values []any) *enumSet {
	e := &enumSet{strings: map[string]struct{}{}}
	for _, v := range values {
		if !checkableData(v) {
			return nil
		}
		if s, ok := v.(string); ok {
			e.strings[s] = struct{}{}
		} else {
			e.others = append(e.others, v)
		}
	}
	return e
}

func (e *enumSet) has(c *checker, v any) bool {
	if s, ok := v.(string); ok {
		_, in := e.strings[s]
		return in
	}
	found := false
	for _, o := range e.others {
		if c.equal(v, o) {
			found = true
			break
		}
	}
	return found
}

// bound is a minimum or maximum: exact, as a decimal when it is a short one, and as the nearest
// float64 with a few units in the last place either side, within which comparing floats is not
// to be trusted.
type bound struct {
	exact  *big.Rat
	dec    number // fits when the bound is a decimal of at most 19 digits
	lo, hi float64
}

// boundULPs is how many float64 steps either side of a bound send a comparison to exact
// arithmetic. Both conversions round correctly, so one would do; a few cost nothing.
const boundULPs = 4

func newBound(r *big.Rat) (*bound, bool) {
	if r == nil {
		return nil, true
	}
	f, _ := r.Float64()
	if math.IsNaN(f) {
		return nil, false
	}
	b := &bound{exact: r, lo: f, hi: f}
	b.dec, _ = ratDecimal(r)
	for range boundULPs {
		b.lo = math.Nextafter(b.lo, math.Inf(-1))
		b.hi = math.Nextafter(b.hi, math.Inf(1))
	}
	return b, true
}

// multiple is a multipleOf: exact, and as a decimal when it is a short one.
type multiple struct {
	exact *big.Rat
	dec   number // fits when the multiple is a decimal of at most 19 digits
}

func newMultiple(r *big.Rat) (*multiple, bool) {
	if r == nil {
		return nil, true
	}
	if r.Sign() <= 0 {
		return nil, false
	}
	m := &multiple{exact: r}
	m.dec, _ = ratDecimal(r)
	return m, true
}

// ratDecimal writes r as a number (sig × 10^exp, sig without trailing zeros), if r is a decimal
// of at most 19 significant digits; every bound written in JSON is a decimal.
func ratDecimal(r *big.Rat) (number, bool) {
	var n number
	if r.Sign() == 0 {
		n.zero, n.fits = true, true
		return n, true
	}
	n.neg = r.Sign() < 0
	// A decimal's denominator divides a power of ten; find the power, then the digits.
	num, den := new(big.Int).Abs(r.Num()), r.Denom()
	ten := big.NewInt(10)
	pow, exp := big.NewInt(1), 0
	for exp > -maxNumberChars && new(big.Int).Rem(pow, den).Sign() != 0 {
		pow.Mul(pow, ten)
		exp--
	}
	if new(big.Int).Rem(pow, den).Sign() != 0 {
		return number{}, false
	}
	num.Mul(num, pow).Quo(num, den)
	for {
		q, rm := new(big.Int).QuoRem(num, ten, new(big.Int))
		if rm.Sign() != 0 {
			break
		}
		num, exp = q, exp+1
	}
	if !num.IsUint64() || num.Uint64() >= 1e19 {
		return number{}, false
	}
	n.sig, n.exp, n.fits = num.Uint64(), exp, true
	return n, true
}

// number is a JSON number's text read exactly: value = ±sig × 10^exp, sig without trailing
// zeros; fits says sig holds every significant digit (at most 19 of them).
type number struct {
	neg, zero bool
	fits      bool
	sig       uint64
	exp       int
}

// maxExponent bounds the exponent a number may write (big.Rat gives up well before a million);
// precheck refuses far smaller ones.
const maxExponent = 100_000

// maxRemainderSteps bounds the digit-by-digit remainder of a multipleOf; past it, big.Rat.
const maxRemainderSteps = 2000

// parseNumber reads JSON number syntax (as json.Number holds it) without allocating.
func parseNumber(s string) (number, bool) {
	var n number
	i := 0
	if i < len(s) && s[i] == '-' {
		n.neg = true
		i++
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intEnd := i
	if intEnd == intStart {
		return n, false
	}
	fracStart, fracEnd := i, i
	if i < len(s) && s[i] == '.' {
		i++
		fracStart = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		fracEnd = i
		if fracEnd == fracStart {
			return n, false
		}
	}
	e := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if e = e*10 + int(s[i]-'0'); e > maxExponent {
				return n, false
			}
			i++
		}
		if i == start {
			return n, false
		}
		if eneg {
			e = -e
		}
	}
	if i != len(s) {
		return n, false
	}
	nInt := intEnd - intStart
	digit := func(j int) byte { // the j-th mantissa digit, across the point
		if j < nInt {
			return s[intStart+j]
		}
		return s[fracStart+j-nInt]
	}
	total := nInt + fracEnd - fracStart
	first, last := -1, -1
	for j := range total {
		if digit(j) != '0' {
			if first < 0 {
				first = j
			}
			last = j
		}
	}
	if first < 0 {
		n.zero = true
		n.fits = true
		return n, true
	}
	n.exp = nInt - 1 - last + e
	n.fits = last-first+1 <= 19
	if n.fits {
		for j := first; j <= last; j++ {
			n.sig = n.sig*10 + uint64(digit(j)-'0')
		}
	}
	return n, true
}

// compareNumbers orders two numbers that fit: -1, 0 or 1.
func compareNumbers(a, b number) int {
	sign := func(n number) int {
		switch {
		case n.zero:
			return 0
		case n.neg:
			return -1
		}
		return 1
	}
	sa, sb := sign(a), sign(b)
	if sa != sb || sa == 0 {
		return cmp.Compare(sa, sb)
	}
	// Same sign: compare magnitudes, first by the place of the leading digit.
	da, db := digits(a.sig), digits(b.sig)
	mag := cmp.Compare(da+a.exp, db+b.exp)
	if mag == 0 {
		// The same leading place: scale the shorter to as many digits as the longer (at
		// most 19, which fit in uint64) and compare.
		x, y := a.sig, b.sig
		for ; da < db; da++ {
			x *= 10
		}
		for ; db < da; db++ {
			y *= 10
		}
		switch {
		case x < y:
			mag = -1
		case x > y:
			mag = 1
		}
	}
	return mag * sa
}

// digits counts the decimal digits of x > 0.
func digits(x uint64) int {
	n := 0
	for ; x > 0; x /= 10 {
		n++
	}
	return n
}

// isInt reports whether the number is an integer, as big.Rat's IsInt would.
func (n number) isInt() bool { return n.zero || n.exp >= 0 }

// checker is the state of one check.
type checker struct {
	unsure bool
	budget int
}

func (c *checker) giveUp() bool {
	c.unsure = true
	return false
}

// valid checks v against n the way the library's Schema.validate does: the type first (a
// mismatch ends the check), then every other keyword, all of them evaluated as the library
// evaluates them so that nothing it would look at goes unseen.
func (c *checker) valid(n *vnode, v any) bool {
	if c.unsure {
		return false
	}
	if c.budget--; c.budget < 0 || n.bad {
		return c.giveUp()
	}
	if n.always != 0 {
		return n.always > 0
	}
	kind := kindOf(v)
	if kind == 0 {
		return c.giveUp()
	}
	if n.types != 0 && n.types&kind == 0 {
		// Only "integer" can match a value of another kind: a number with an integral value.
		if kind != kindNumber || n.types&kindInteger == 0 {
			return false
		}
		num, ok := parseNumber(string(v.(json.Number)))
		if !ok {
			return c.giveUp()
		}
		if !num.isInt() {
			return false
		}
	}
	ok := true
	if n.hasConst && !c.equal(v, n.constVal) {
		ok = false
	}
	if n.enum != nil && !n.enum.has(c, v) {
		ok = false
	}
	if n.format != nil && !n.format(v) {
		ok = false
	}
	switch x := v.(type) {
	case map[string]any:
		ok = c.object(n, x) && ok
	case []any:
		ok = c.array(n, x) && ok
	case string:
		if n.minLength != -1 || n.maxLength != -1 {
			length := utf8.RuneCountInString(x)
			if n.minLength != -1 && length < n.minLength || n.maxLength != -1 && length > n.maxLength {
				ok = false
			}
		}
		if n.pattern != nil && !n.pattern.MatchString(x) {
			ok = false
		}
	case json.Number:
		if n.minimum != nil || n.exclusiveMinimum != nil || n.maximum != nil || n.exclusiveMaximum != nil {
			ok = c.bounds(n, string(x)) && ok
		}
		if n.multipleOf != nil {
			ok = c.isMultiple(string(x), n.multipleOf) && ok
		}
	}
	if n.ref != nil && !c.valid(n.ref, v) {
		ok = false
	}
	if n.not != nil && c.valid(n.not, v) {
		ok = false
	}
	for _, s := range n.allOf {
		if !c.valid(s, v) {
			ok = false
		}
	}
	if len(n.anyOf) > 0 {
		matched := false
		for _, s := range n.anyOf {
			if c.valid(s, v) {
				matched = true
			}
		}
		ok = matched && ok
	}
	if len(n.oneOf) > 0 {
		matched := 0
		for _, s := range n.oneOf {
			if c.valid(s, v) {
				if matched++; matched == 2 {
					break // the library stops at the second match
				}
			}
		}
		ok = matched == 1 && ok
	}
	if n.ifS != nil {
		if c.valid(n.ifS, v) {
			if n.thenS != nil && !c.valid(n.thenS, v) {
				ok = false
			}
		} else if n.elseS != nil && !c.valid(n.elseS, v) {
			ok = false
		}
	}
	return ok && !c.unsure
}

// kindOf is the JSON kind of a decoded value, 0 for anything json.Decoder.UseNumber does not
// produce (the library accepts Go numbers too, but nothing here decodes to them).
func kindOf(v any) uint8 {
	switch v.(type) {
	case nil:
		return kindNull
	case bool:
		return kindBoolean
	case map[string]any:
		return kindObject
	case []any:
		return kindArray
	case json.Number:
		return kindNumber
	case string:
		return kindString
	}
	return 0
}

func (c *checker) object(n *vnode, x map[string]any) bool {
	ok := true
	if n.minProps != -1 && len(x) < n.minProps || n.maxProps != -1 && len(x) > n.maxProps {
		ok = false
	}
	for _, name := range n.required {
		if _, has := x[name]; !has {
			ok = false
		}
	}
	for name, val := range x {
		evaluated := false
		if ps, has := n.props[name]; has {
			evaluated = true
			if !c.valid(ps, val) {
				ok = false
			}
		}
		for _, p := range n.patterns {
			if p.re.MatchString(name) {
				evaluated = true
				if !c.valid(p.s, val) {
					ok = false
				}
			}
		}
		if !evaluated {
			if n.noAdditional {
				ok = false
			} else if n.additional != nil && !c.valid(n.additional, val) {
				ok = false
			}
		}
		if n.propertyNames != nil && !c.valid(n.propertyNames, name) {
			ok = false
		}
		if deps, has := n.depRequired[name]; has {
			for _, d := range deps {
				if _, has := x[d]; !has {
					ok = false
				}
			}
		}
		if ds, has := n.depSchemas[name]; has && !c.valid(ds, x) {
			ok = false
		}
	}
	return ok
}

// maxUniqueItems bounds the arrays whose uniqueness the checker compares pair by pair.
const maxUniqueItems = 64

func (c *checker) array(n *vnode, x []any) bool {
	ok := true
	if n.minItems != -1 && len(x) < n.minItems || n.maxItems != -1 && len(x) > n.maxItems {
		ok = false
	}
	if n.unique {
		if len(x) > maxUniqueItems {
			return c.giveUp()
		}
	pairs:
		for i := 1; i < len(x); i++ {
			for j := range i {
				if c.equal(x[i], x[j]) {
					ok = false
					break pairs
				}
			}
		}
	}
	for i, item := range x {
		var s *vnode
		switch {
		case i < len(n.prefixItems):
			s = n.prefixItems[i]
		case n.items != nil:
			s = n.items
		}
		if s == nil {
			break
		}
		if !c.valid(s, item) {
			ok = false
		}
	}
	if n.contains != nil {
		matched := 0
		for _, item := range x {
			if c.valid(n.contains, item) {
				matched++
			}
		}
		if n.minContains != -1 && matched < n.minContains || n.maxContains != -1 && matched > n.maxContains {
			ok = false
		}
	}
	return ok
}

// bounds checks a number against n's minimum and maximum, exactly.
func (c *checker) bounds(n *vnode, s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return c.giveUp()
	}
	ok := true
	if n.minimum != nil && c.compare(s, f, n.minimum) < 0 {
		ok = false
	}
	if n.exclusiveMinimum != nil && c.compare(s, f, n.exclusiveMinimum) <= 0 {
		ok = false
	}
	if n.maximum != nil && c.compare(s, f, n.maximum) > 0 {
		ok = false
	}
	if n.exclusiveMaximum != nil && c.compare(s, f, n.exclusiveMaximum) >= 0 {
		ok = false
	}
	return ok
}

// compare orders the number s (f, as the nearest float64) against b. Rounding to the nearest
// float never reverses an order, so floats that differ by more than a few steps decide it;
// otherwise it is decided exactly.
func (c *checker) compare(s string, f float64, b *bound) int {
	if f < b.lo {
		return -1
	}
	if f > b.hi {
		return 1
	}
	if b.dec.fits {
		if n, ok := parseNumber(s); ok && n.fits {
			return compareNumbers(n, b.dec)
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		c.giveUp()
		return 0
	}
	return r.Cmp(b.exact)
}

// isMultiple reports whether the number n (text s) divided by m is an integer.
func (c *checker) isMultiple(s string, m *multiple) bool {
	n, ok := parseNumber(s)
	if !ok {
		return c.giveUp()
	}
	if n.zero {
		return true
	}
	if n.fits && m.dec.fits && m.dec.sig < 1<<59 {
		// n / m = (sig / msig) × 10^d. With d < 0 that needs 10 to divide sig, which has no
		// trailing zeros; with d ≥ 0 it needs msig to divide sig × 10^d.
		d := n.exp - m.dec.exp
		if d < 0 {
			return false
		}
		if d <= maxRemainderSteps {
			r := n.sig % m.dec.sig
			for ; d > 0 && r != 0; d-- {
				r = r * 10 % m.dec.sig // r < 2^59: no overflow
			}
			return r == 0
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return c.giveUp()
	}
	return r.Quo(r, m.exact).IsInt()
}

// equal is the library's equals: same kind, numbers equal as rationals, arrays and objects
// equal member by member.
func (c *checker) equal(a, b any) bool {
	ka, kb := kindOf(a), kindOf(b)
	if ka == 0 || kb == 0 {
		return c.giveUp()
	}
	if ka != kb {
		return false
	}
	switch x := a.(type) {
	case []any:
		y := b.([]any)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !c.equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y := b.(map[string]any)
		if len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, has := y[k]
			if !has || !c.equal(xv, yv) {
				return false
			}
		}
		return true
	case json.Number:
		return c.equalNumbers(string(x), string(b.(json.Number)))
	default:
		return a == b
	}
}

func (c *checker) equalNumbers(a, b string) bool {
	na, oka := parseNumber(a)
	nb, okb := parseNumber(b)
	if !oka || !okb {
		return c.giveUp()
	}
	if a == b {
		return true
	}
	if na.zero || nb.zero {
		return na.zero && nb.zero
	}
	if na.fits && nb.fits {
		return na.neg == nb.neg && na.sig == nb.sig && na.exp == nb.exp
	}
	ra, oka := new(big.Rat).SetString(a)
	rb, okb := new(big.Rat).SetString(b)
	if !oka || !okb {
		return c.giveUp()
	}
	return ra.Cmp(rb) == 0
}
