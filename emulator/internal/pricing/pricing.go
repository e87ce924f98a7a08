// Package pricing turns a model's input into credits by the model's pricing rules. The result
// depends only on the model and the input, so it is the same on every run and machine.
package pricing

import (
	"math"
	"unicode/utf8"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

// MaxCredits caps a price, so that a huge input value cannot overflow it into a negative or
// meaningless number.
const MaxCredits = 1_000_000_000_000

// epsilon absorbs binary rounding (0.1 × 30 = 3.0000000000000004) so that ceil does not add a
// credit the arithmetic did not mean.
const epsilon = 1e-9

// Credits prices an input that has already been validated against the model's schema:
//
//	ceil(max(minimum, (base + Σ per_unit + Σ tables) × Π multipliers × Π multiply_by))
func Credits(m *catalog.Model, input map[string]any) int64 {
	p := &m.Pricing
	subtotal := p.Base
	for _, u := range p.PerUnit {
		v, ok := m.InputValue(input, u.Field)
		if !ok {
			continue
		}
		if u.Measure == "length" {
			subtotal += u.Credits * float64(Length(v))
		} else if n, ok := catalog.NumberOf(v); ok {
			subtotal += u.Credits * n
		}
	}
	for _, t := range p.Tables {
		if v, ok := m.InputValue(input, t.Field); ok {
			subtotal += t.Values[catalog.EnumKey(v)]
		}
	}
	total := subtotal
	for _, t := range p.Multipliers {
		if v, ok := m.InputValue(input, t.Field); ok {
			if f, found := t.Values[catalog.EnumKey(v)]; found {
				total *= f
			}
		}
	}
	for _, field := range p.MultiplyBy {
		if v, ok := m.InputValue(input, field); ok {
			if n, ok := catalog.NumberOf(v); ok {
				total *= n
			}
		}
	}
	minimum := 1.0
	if p.Minimum != nil {
		minimum = *p.Minimum
	}
	total = math.Max(minimum, total)
	if math.IsNaN(total) || total >= MaxCredits {
		return MaxCredits
	}
	return int64(math.Ceil(total - epsilon))
}

// Length counts the characters of a string (not bytes) or the items of an array: what a
// per-unit price of measure "length" counts.
func Length(v any) int {
	switch x := v.(type) {
	case string:
		return utf8.RuneCountInString(x)
	case []any:
		return len(x)
	}
	return 0
}
