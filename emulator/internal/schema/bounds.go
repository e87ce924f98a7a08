package schema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The JSON Schema library turns every number it checks into an exact rational: a number like
// 1e999999 costs tens of milliseconds, and past 1e1000000 it has no rational at all and the
// library dereferences nil. Numbers beyond these bounds are refused before it sees them; every
// real input is far inside them (a float64 ends near 1e308).
const (
	maxNumberChars    = 400
	maxNumberExponent = 400
)

// MaxInputValues bounds how many values (members, items and scalars together) one input may
// hold. The schema library checks each value on its own and builds an error for each failure,
// so without it a 1 MiB array of failing numbers costs most of a second.
const MaxInputValues = 10_000

// MaxViolations bounds how many violations one input reports: enough to fix a form, not so many
// that an input built to fail everywhere costs a large answer.
const MaxViolations = 50

// numberMessage is what an input hears about a number past the bounds.
var numberMessage = fmt.Sprintf("is a number this service refuses whatever the schema allows: it takes numbers of at most %d characters with an exponent from -%d to %d",
	maxNumberChars, maxNumberExponent, maxNumberExponent)

var tooManyValues = fmt.Sprintf("holds more than %d values (members and items counted together), more than this service accepts in one input", MaxInputValues)

// violationList is the error of an input refused before schema validation; Violations reads it.
type violationList []Violation

// Error lists every violation, separated by semicolons.
func (vl violationList) Error() string {
	parts := make([]string, len(vl))
	for i, v := range vl {
		parts[i] = OrRoot(v.Pointer) + ": " + v.Message
	}
	return strings.Join(parts, "; ")
}

// precheck finds what would make schema validation expensive or unsafe: numbers past the bounds
// anywhere in the input, and arrays longer than the maxItems of the schema they meet (the
// library would still validate each of their items). It walks each value once and stops at
// MaxViolations.
func precheck(schema *jsonschema.Schema, input any) violationList {
	p := prechecker{}
	p.walk(schema, input)
	return p.out
}

type prechecker struct {
	out    violationList
	values int  // how many values the walk has met
	stop   bool // the input has too many values: nothing more is worth reporting
	// at is the way from the input to the value being walked, one reference token each, so a
	// pointer is built only for a violation.
	at []string
}

// maxSchemaHops bounds how many $ref and allOf steps one value follows, so a recursive schema
// cannot make the walk loop.
const maxSchemaHops = 64

func (p *prechecker) full() bool { return p.stop || len(p.out) >= MaxViolations }

func (p *prechecker) add(msg string) {
	if !p.full() {
		ptr := ""
		for _, token := range p.at {
			ptr += "/" + token
		}
		p.out = append(p.out, Violation{Pointer: ptr, Message: msg})
	}
}

// walk checks v, which sits at p.at, against what schemas (s, possibly nil) say of its length.
func (p *prechecker) walk(s *jsonschema.Schema, v any) {
	if p.full() {
		return
	}
	if p.values++; p.values > MaxInputValues {
		// This one violation says everything: the rest were found among values never validated.
		p.out, p.stop = violationList{{Message: tooManyValues}}, true
		return
	}
	switch x := v.(type) {
	case json.Number:
		if !acceptableNumber(string(x)) {
			p.add(numberMessage)
		}
	case map[string]any:
		for k, item := range x {
			p.at = append(p.at, EscapePointer(k))
			p.walk(propertySchema(s, k), item)
			p.at = p.at[:len(p.at)-1]
		}
	case []any:
		if limit, ok := maxItems(s); ok && len(x) > limit {
			p.add(fmt.Sprintf("has %d items; at most %d are allowed", len(x), limit))
			return // its items are not looked at: there are too many of them
		}
		for i, item := range x {
			p.at = append(p.at, strconv.Itoa(i))
			p.walk(itemSchema(s, i), item)
			p.at = p.at[:len(p.at)-1]
		}
	}
}

// acceptableNumber reports whether a JSON number's text is within the bounds.
func acceptableNumber(s string) bool {
	if len(s) > maxNumberChars {
		return false
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	exp := strings.TrimLeft(strings.TrimLeft(s[i+1:], "+-"), "0")
	if len(exp) > 3 {
		return false
	}
	n, err := strconv.Atoi("0" + exp)
	return err == nil && n <= maxNumberExponent
}

// resolved follows s's $ref chain, so the keywords beside a reference are found too.
func resolved(s *jsonschema.Schema, hops int, visit func(*jsonschema.Schema) bool) bool {
	for ; s != nil && hops < maxSchemaHops; hops++ {
		if visit(s) {
			return true
		}
		for _, sub := range s.AllOf {
			if resolved(sub, hops+1, visit) {
				return true
			}
		}
		s = s.Ref
	}
	return false
}

// maxItems finds a maxItems that applies to an array at s, directly or through $ref or allOf.
func maxItems(s *jsonschema.Schema) (int, bool) {
	limit := -1
	resolved(s, 0, func(s *jsonschema.Schema) bool {
		if s.MaxItems >= 0 && (limit < 0 || s.MaxItems < limit) {
			limit = s.MaxItems
		}
		return false
	})
	return limit, limit >= 0
}

// propertySchema finds the schema a property's value meets: one of properties, or else a schema
// given as additionalProperties. Pattern properties are not followed; the bound on numbers
// still applies below them.
func propertySchema(s *jsonschema.Schema, name string) *jsonschema.Schema {
	var found *jsonschema.Schema
	resolved(s, 0, func(s *jsonschema.Schema) bool {
		if sub, ok := s.Properties[name]; ok {
			found = sub
			return true
		}
		if sub, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			found = sub
			return true
		}
		return false
	})
	return found
}

// itemSchema finds the schema an array's i-th item meets: prefixItems, then items.
func itemSchema(s *jsonschema.Schema, i int) *jsonschema.Schema {
	var found *jsonschema.Schema
	resolved(s, 0, func(s *jsonschema.Schema) bool {
		switch {
		case i < len(s.PrefixItems):
			found = s.PrefixItems[i]
		case s.Items2020 != nil:
			found = s.Items2020
		default:
			if sub, ok := s.Items.(*jsonschema.Schema); ok {
				found = sub
			}
		}
		return found != nil
	})
	return found
}
